package app

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Queries are the read use cases behind the GraphQL API (and the MCP tools
// that reuse it). Every method requires threads.read and reads through
// q.reader, which limits what the caller sees.
//
// The engine holds one company: humans and company-scoped service accounts
// see every thread, as in the reference engine where every company member
// sees the company's threads; a party-scoped service account sees only the
// threads it is a party of, and the others answer as if they did not exist.
// Batch methods take many parents at once so a transport can load a whole
// result level with one call.
type Queries struct {
	store     ports.ThreadQueries
	stats     ports.ThreadStats // nil: the aggregate queries answer not found
	contracts ports.Contracts   // nil: contractGraph answers not found
	secrets   map[string][]byte
	clock     ports.Clock
	integrity integrity.Checker
}

// QueriesDeps wires Queries.
type QueriesDeps struct {
	Store     ports.ThreadQueries
	Contracts ports.Contracts
	// ChainSecrets are the hash-chain secrets by version, as the write side
	// signs with (see Threads); they are needed to verify chains.
	ChainSecrets map[string][]byte
	// ChainPartialBefore: see domain.ChainKeyring.PartialBefore.
	ChainPartialBefore map[string]time.Time
	// Log is the transparency log verification checks threads against
	// (nil: chains and heads only).
	Log   ports.TransparencyLog
	Clock ports.Clock
	// Stats answers the contracts and overview aggregates (optional).
	Stats ports.ThreadStats
}

// NewQueries returns the read use cases.
func NewQueries(d QueriesDeps) *Queries {
	if d.Clock == nil {
		d.Clock = ports.SystemClock{}
	}
	return &Queries{store: d.Store, stats: d.Stats, contracts: d.Contracts, secrets: d.ChainSecrets, clock: d.Clock,
		integrity: integrity.Checker{Keys: domain.ChainKeyring{Secrets: d.ChainSecrets, PartialBefore: d.ChainPartialBefore}, Log: d.Log}}
}

// ChainSecrets returns the secrets map Threads signs with, so the composition
// root can hand the same secret to Queries.
func ChainSecrets(secret []byte) map[string][]byte {
	return map[string][]byte{hashVersion: secret}
}

// ParseTimeArg parses an optional ISO-8601 time argument ("" means absent).
// RFC 3339 with or without fraction is accepted, and a bare date.
func ParseTimeArg(field, s string) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, domain.Invalid(field, "%s must be an ISO-8601 time such as 2026-01-02T15:04:05Z, got %q", field, s)
}

// StepStatuses expands a step status filter: the SDKs send "success" while
// the reference engine stores "completed", so either matches both.
func StepStatuses(status string) []string {
	switch status {
	case "":
		return nil
	case "success", "completed":
		return []string{"success", "completed"}
	}
	return []string{status}
}

// ThreadSearch is the input of the thread search queries. Empty strings and
// nil pointers mean "no filter"; times are ISO-8601 strings.
type ThreadSearch struct {
	Actor           string
	ContractName    string
	ContractVersion *int
	Status          string
	StartedAfter    string
	StartedBefore   string
	CompletedAfter  string
	CompletedBefore string
	RefKey          string
	RefValue        string
	Health          []domain.HealthStatus
	Tag             string
	IDPrefix        string
	OrderBy         string // ports.OrderStartedAt (default) or ports.OrderDuration
	Ascending       bool
	Limit           *int // default 50, at most 100
	Offset          *int
}

// ThreadPage is one page of threads and the total matching.
type ThreadPage struct {
	Threads    []ports.ThreadView
	TotalCount int
}

// Thread returns one thread, or nil when it does not exist.
func (q *Queries) Thread(ctx context.Context, id string) (*ports.ThreadView, error) {
	ts, err := q.Threads(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, nil
	}
	return &ts[0], nil
}

// Threads returns the threads with these ids that exist, in the order asked.
func (q *Queries) Threads(ctx context.Context, ids []string) ([]ports.ThreadView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	// An id that cannot exist (NUL, invalid UTF-8…) is simply not found,
	// on every store (PostgreSQL would refuse the query).
	rows, err := st.GetThreads(ctx, domain.ValidIDs(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]ports.ThreadView, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]ports.ThreadView, 0, len(rows))
	for _, id := range ids {
		if t, ok := byID[id]; ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// ThreadsVersion changes whenever a thread is started or updated: a thread
// list polls it (GET /v1/threads/version, with ETag) and reloads only when
// it moved.
func (q *Queries) ThreadsVersion(ctx context.Context) (string, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return "", err
	}
	return st.ThreadsVersion(ctx)
}

// SearchThreads returns one page of threads, newest first.
func (q *Queries) SearchThreads(ctx context.Context, s ThreadSearch) (ThreadPage, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return ThreadPage{}, err
	}
	f := ports.ThreadFilter{Actor: s.Actor, ContractName: s.ContractName, ContractVersion: s.ContractVersion,
		Status: s.Status, RefKey: s.RefKey, RefValue: s.RefValue, Health: s.Health, Tag: s.Tag,
		IDPrefix: strings.TrimSpace(s.IDPrefix), OrderBy: s.OrderBy, Ascending: s.Ascending,
		Limit: domain.ThreadsPage.Effective(s.Limit)}
	switch f.OrderBy {
	case "", ports.OrderStartedAt, ports.OrderDuration:
	default:
		return ThreadPage{}, domain.Invalid("orderBy", "orderBy must be STARTED_AT or DURATION, not %q", f.OrderBy)
	}
	if s.ContractName == "" {
		f.ContractVersion = nil // reference: the version filters only together with a name
	}
	if s.Offset != nil && *s.Offset > 0 {
		f.Offset = *s.Offset
	}
	for _, p := range []struct {
		field, v string
		dst      **time.Time
	}{
		{"startedAfter", s.StartedAfter, &f.StartedAfter}, {"startedBefore", s.StartedBefore, &f.StartedBefore},
		{"completedAfter", s.CompletedAfter, &f.CompletedAfter}, {"completedBefore", s.CompletedBefore, &f.CompletedBefore},
	} {
		if *p.dst, err = ParseTimeArg(p.field, p.v); err != nil {
			return ThreadPage{}, err
		}
	}
	threads, total, err := st.ListThreads(ctx, f)
	if err != nil {
		return ThreadPage{}, err
	}
	return ThreadPage{Threads: threads, TotalCount: total}, nil
}

// Refs returns the refs of each thread.
func (q *Queries) Refs(ctx context.Context, threadIDs []string) (map[string]map[string]string, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.Refs(ctx, domain.ValidIDs(threadIDs))
}

// RefsJSON encodes refs the way the SDKs expect them: a JSON object in a
// string (the Node SDK calls JSON.parse on it), or nil when there are none.
func RefsJSON(refs map[string]string) *string {
	if len(refs) == 0 {
		return nil
	}
	b, _ := json.Marshal(refs)
	s := string(b)
	return &s
}

// StepSelection filters and pages the steps of a thread.
type StepSelection struct {
	StepName, IdempotencyKey, Status string
	Limit, Offset                    *int // domain.StepsPage; offset default 0
}

// Steps returns the step states of each thread (at most
// domain.MaxStepsPerThread per thread), in first-seen order.
func (q *Queries) Steps(ctx context.Context, threadIDs []string, s StepSelection) (map[string][]ports.StepView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.StepFilter{StepName: s.StepName, IdempotencyKey: s.IdempotencyKey, Statuses: StepStatuses(s.Status)}
	if s.Offset != nil && *s.Offset > 0 {
		f.Offset = *s.Offset
	}
	return st.Steps(ctx, domain.ValidIDs(threadIDs), f, domain.StepsPage.Effective(s.Limit))
}

// Attempts returns a page of each thread's attempts in the order they were
// recorded (the waterfall of a thread page).
func (q *Queries) Attempts(ctx context.Context, threadIDs []string, limit, offset *int) (map[string][]ports.ActivityView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	off := 0
	if offset != nil && *offset > 0 {
		off = *offset
	}
	return st.Attempts(ctx, domain.ValidIDs(threadIDs), domain.AttemptsPage.Effective(limit), off)
}

// LatestValidations returns the newest validation result of each step.
func (q *Queries) LatestValidations(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.LatestValidations(ctx, steps)
}

// Counts returns the sizes of each thread's step and validation lists.
func (q *Queries) Counts(ctx context.Context, threadIDs []string) (map[string]ports.ThreadCounts, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.Counts(ctx, domain.ValidIDs(threadIDs))
}

// LinkedFrom returns, for each thread, the threads that link to it through
// a "linkedThread:*" ref (at most domain.MaxChainThreads each), oldest first.
func (q *Queries) LinkedFrom(ctx context.Context, threadIDs []string) (map[string][]ports.ThreadView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	links, err := st.LinkedFrom(ctx, domain.ValidIDs(threadIDs), domain.MaxChainThreads)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range links {
		ids = append(ids, l...)
	}
	threads, err := st.GetThreads(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]ports.ThreadView, len(threads))
	for _, t := range threads {
		byID[t.ID] = t
	}
	out := make(map[string][]ports.ThreadView, len(threadIDs))
	for _, id := range threadIDs {
		list := []ports.ThreadView{}
		for _, src := range links[id] {
			if t, ok := byID[src]; ok {
				list = append(list, t)
			}
		}
		out[id] = list
	}
	return out, nil
}

// StepIntegrity is the verification of one step identity's latest attempt.
type StepIntegrity struct {
	Verified       bool
	Hash, PrevHash string
	Error          string
}

// VerifyStep recomputes the hash of the newest attempt of (thread, step,
// key) from its stored content, as the reference's verifyStepIntegrity does.
func (q *Queries) VerifyStep(ctx context.Context, threadID, stepName, key string) (StepIntegrity, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return StepIntegrity{}, err
	}
	for f, v := range map[string]string{"threadId": threadID, "stepName": stepName, "idempotencyKey": key} {
		if v == "" {
			return StepIntegrity{}, domain.Invalid(f, "%s is required", f)
		}
	}
	acts, err := st.History(ctx, ports.StepKey{ThreadID: threadID, StepName: stepName, IdempotencyKey: key},
		ports.HistoryFilter{Limit: 1})
	if err != nil {
		return StepIntegrity{}, err
	}
	if len(acts) == 0 {
		return StepIntegrity{Error: "Step not found in activity log"}, nil
	}
	a := acts[0]
	out := StepIntegrity{Hash: a.Hash, PrevHash: a.PrevHash}
	reason, err := q.integrity.Step(ctx, st, a)
	if err != nil {
		return StepIntegrity{}, err
	}
	if reason != "" {
		out.Error = reason
		return out, nil
	}
	out.Verified = true
	return out, nil
}

// HistoryArgs page and filter step history. Times are ISO-8601 strings.
type HistoryArgs struct {
	Limit, Offset            *int
	StartAt, EndAt           string
	ActivityType, Actor      string
	StepName, IdempotencyKey string // top-level stepHistory only
	ThreadID                 string // top-level stepHistory only
}

func (a HistoryArgs) filter() (ports.HistoryFilter, error) {
	f := ports.HistoryFilter{ActivityType: a.ActivityType, Actor: a.Actor, Limit: domain.HistoryPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	var err error
	if f.StartAt, err = ParseTimeArg("startAt", a.StartAt); err != nil {
		return f, err
	}
	if f.EndAt, err = ParseTimeArg("endAt", a.EndAt); err != nil {
		return f, err
	}
	return f, nil
}

// StepHistories returns each step's attempts, newest first.
func (q *Queries) StepHistories(ctx context.Context, steps []ports.StepKey, a HistoryArgs) (map[ports.StepKey][]ports.ActivityView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	f, err := a.filter()
	if err != nil {
		return nil, err
	}
	return st.StepHistories(ctx, validStepKeys(steps), f)
}

// StepHistory returns the attempts of one step of a thread, newest first.
// Without an idempotency key every key of the step name is included.
func (q *Queries) StepHistory(ctx context.Context, a HistoryArgs) ([]ports.ActivityView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	if a.ThreadID == "" {
		return nil, domain.Invalid("threadId", "threadId is required")
	}
	if a.StepName == "" {
		return nil, domain.Invalid("stepName", "stepName is required")
	}
	if !domain.ValidID(a.ThreadID) {
		return []ports.ActivityView{}, nil
	}
	f, err := a.filter()
	if err != nil {
		return nil, err
	}
	out, err := st.History(ctx, ports.StepKey{ThreadID: a.ThreadID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey}, f)
	if out == nil && err == nil {
		out = []ports.ActivityView{}
	}
	return out, err
}

// SubSteps returns the sub-steps of each step, over all its attempts.
func (q *Queries) SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.SubSteps(ctx, validStepKeys(steps))
}

// ValidationArgs filter and page validation results.
type ValidationArgs struct {
	StepID, StepName, IdempotencyKey, ValidationType string
	Limit, Offset                                    *int
}

func (a ValidationArgs) filter() ports.ValidationFilter {
	f := ports.ValidationFilter{StepID: a.StepID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey,
		ValidationType: a.ValidationType, Limit: domain.ValidationsPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	return f
}

// Validations returns each thread's validation results, newest first.
func (q *Queries) Validations(ctx context.Context, threadIDs []string, a ValidationArgs) (map[string][]ports.ValidationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.Validations(ctx, domain.ValidIDs(threadIDs), a.filter())
}

// ValidationResults returns the validation results of one step identity.
func (q *Queries) ValidationResults(ctx context.Context, threadID string, a ValidationArgs) ([]ports.ValidationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	m, err := st.Validations(ctx, domain.ValidIDs([]string{threadID}), a.filter())
	if err != nil {
		return nil, err
	}
	out := m[threadID]
	if out == nil {
		out = []ports.ValidationView{}
	}
	return out, nil
}

// NotificationArgs filter and page thread notifications.
type NotificationArgs struct {
	StepID, StepName, Source, NotificationType string
	Severities                                 []string
	Limit, Offset                              *int
}

// Notifications returns each thread's notifications, newest first.
func (q *Queries) Notifications(ctx context.Context, threadIDs []string, a NotificationArgs) (map[string][]ports.NotificationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.NotificationFilter{StepID: a.StepID, StepName: a.StepName, Source: a.Source,
		NotificationType: a.NotificationType, Severities: a.Severities, Limit: domain.NotificationsPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	return st.Notifications(ctx, domain.ValidIDs(threadIDs), f)
}

// NotificationCounts aggregates each thread's notifications.
func (q *Queries) NotificationCounts(ctx context.Context, threadIDs []string) (map[string]ports.NotificationCounts, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.NotificationCounts(ctx, domain.ValidIDs(threadIDs))
}

// ThreadChains returns, for each root, the root and the threads linked
// from it ("linkedThread:*" refs), breadth first. maxDepth nil means 3; it
// must be 1..10. At most domain.MaxChainThreads threads per root.
func (q *Queries) ThreadChains(ctx context.Context, rootIDs []string, maxDepth *int) (map[string][]ports.ThreadView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	depth := domain.DefaultChainDepth
	if maxDepth != nil {
		depth = *maxDepth
	}
	if depth < 1 || depth > domain.MaxChainDepth {
		return nil, domain.Invalid("maxDepth", "maxDepth must be between 1 and %d", domain.MaxChainDepth)
	}
	links, err := st.Chains(ctx, domain.ValidIDs(rootIDs), depth, domain.MaxChainThreads)
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, ls := range links {
		for _, l := range ls {
			if !seen[l.ThreadID] {
				seen[l.ThreadID] = true
				ids = append(ids, l.ThreadID)
			}
		}
	}
	threads, err := st.GetThreads(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]ports.ThreadView, len(threads))
	for _, t := range threads {
		byID[t.ID] = t
	}
	out := make(map[string][]ports.ThreadView, len(rootIDs))
	for _, root := range rootIDs {
		list := []ports.ThreadView{}
		for _, l := range links[root] {
			if t, ok := byID[l.ThreadID]; ok {
				list = append(list, t)
			}
		}
		out[root] = list
	}
	return out, nil
}

// VerifyThreads verifies each thread (app/integrity): its hash chain
// (content recomputed from the stored rows, never copied from a stored
// hash column), its head against its thread row, and its steps against the
// transparency log.
func (q *Queries) VerifyThreads(ctx context.Context, threadIDs []string) (map[string]domain.ChainStatus, error) {
	p, err := Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return nil, err
	}
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return q.integrity.Threads(ctx, st, threadIDs, !p.PartyScoped())
}

// VerifyThread verifies one thread; an unknown thread is not found, unless
// the transparency log shows it was deleted outside the documented paths.
func (q *Queries) VerifyThread(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	m, err := q.VerifyThreads(ctx, []string{threadID})
	if err != nil {
		return domain.ChainStatus{}, err
	}
	st, ok := m[threadID]
	if !ok {
		return domain.ChainStatus{}, domain.NotFound("thread " + threadID)
	}
	return st, nil
}

// Contract returns a contract version (0 = latest) for contractGraph.
func (q *Queries) Contract(ctx context.Context, name string, version int) (domain.Contract, error) {
	if _, err := Require(ctx, domain.PermContractsRead); err != nil {
		return domain.Contract{}, err
	}
	if q.contracts == nil {
		return domain.Contract{}, domain.NotFound("contract " + name)
	}
	return q.contracts.GetContract(ctx, name, version)
}

// Now is the query clock (HashChainStatus.lastVerifiedAt).
func (q *Queries) Now() time.Time { return q.clock.Now().UTC() }

// validStepKeys drops keys whose thread id cannot exist (see ValidIDs).
func validStepKeys(keys []ports.StepKey) []ports.StepKey {
	out := keys[:0:0]
	for _, k := range keys {
		if domain.ValidID(k.ThreadID) {
			out = append(out, k)
		}
	}
	return out
}
