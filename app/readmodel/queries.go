package readmodel

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Queries are the read use cases behind the GraphQL API (and the MCP tools
// that reuse it), split by what they serve: threads (ThreadReads), their
// steps (StepReads), validations and notifications (ValidationReads), the
// hash chain's verdict (IntegrityReads) and the engine-wide statistics
// (Stats, stats.go). Most methods take the ids of a whole result level and
// load one field for all of them in one statement: per-field loaders behind
// the schema (adapters/graphqlapi/loader.go), not use cases a client asks
// for. Every method requires threads.read and reads through the caller's
// scope (scope.go), which limits what the caller sees.
//
// The engine holds one company: humans and company-scoped service accounts
// see every thread, as in the reference engine where every company member
// sees the company's threads; a party-scoped service account sees only the
// threads it is a party of, and the others answer as if they did not exist.
type Queries struct {
	*ThreadReads
	*StepReads
	*ValidationReads
	*IntegrityReads
	*Stats
	// Problems groups unhealthy threads by cause (problems.go).
	Problems *Problems
	// ProcessMaps answers processMap (processmap.go).
	ProcessMaps *ProcessMaps
	contracts   ContractReader // nil: contractGraph answers not found
	clock       ports.Clock
}

// ContractReader reads contract versions (ports.Contracts' reading half
// contractGraph needs).
type ContractReader interface {
	// GetContract returns one version; version 0 means the latest.
	GetContract(ctx context.Context, name string, version int) (domain.Contract, error)
}

// Deps wires Queries.
type Deps struct {
	Store     ports.ThreadQueries
	Contracts ContractReader
	// ChainSecrets are the hash-chain secrets by version, as the write side
	// signs with (see app/threads); they are needed to verify chains.
	ChainSecrets map[string][]byte
	// ChainPartialBefore: see domain.ChainKeyring.PartialBefore.
	ChainPartialBefore map[string]time.Time
	// Log is the transparency log verification checks threads against
	// (nil: chains and heads only).
	Log   integrity.Log
	Clock ports.Clock
	// Stats answers the contracts and overview aggregates (optional).
	Stats ports.ThreadStats
	// Problems answers the Problems view (optional).
	Problems ports.ProblemReads
	// ProcessMaps answers processMap (optional).
	ProcessMaps ports.ProcessMapReads
}

// New returns the read use cases.
func New(d Deps) *Queries {
	if d.Clock == nil {
		d.Clock = ports.SystemClock{}
	}
	sc := scope{store: d.Store, clock: d.Clock}
	threads := &ThreadReads{sc}
	return &Queries{ThreadReads: threads, StepReads: &StepReads{sc}, ValidationReads: &ValidationReads{sc},
		IntegrityReads: &IntegrityReads{scope: sc, integrity: integrity.Checker{
			Keys: domain.ChainKeyring{Secrets: d.ChainSecrets, PartialBefore: d.ChainPartialBefore}, Log: d.Log}},
		Stats: NewStats(d.Stats, d.Clock), Problems: NewProblems(d.Problems, d.Clock),
		ProcessMaps: NewProcessMaps(d.ProcessMaps, d.Contracts, d.Clock), contracts: d.Contracts, clock: d.Clock}
}

// ChainSecrets returns the secrets map the thread use cases sign with, so
// the composition root can hand the same secret to Queries.
func ChainSecrets(secret []byte) map[string][]byte {
	return domain.SingleChainKey(secret).Secrets
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

// Contract returns a contract version (0 = latest) for contractGraph.
func (q *Queries) Contract(ctx context.Context, name string, version int) (domain.Contract, error) {
	if _, err := authz.Require(ctx, domain.PermContractsRead); err != nil {
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

// ThreadReads read threads: by id, a page of a search, their refs, sizes
// and links.
type ThreadReads struct{ scope }

// Thread returns one thread, or nil when it does not exist.
func (q *ThreadReads) Thread(ctx context.Context, id string) (*ports.ThreadView, error) {
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
func (q *ThreadReads) Threads(ctx context.Context, ids []string) ([]ports.ThreadView, error) {
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
func (q *ThreadReads) ThreadsVersion(ctx context.Context) (string, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return "", err
	}
	return st.ThreadsVersion(ctx)
}

// Refs returns the refs of each thread.
func (q *ThreadReads) Refs(ctx context.Context, threadIDs []string) (map[string]map[string]string, error) {
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

// Counts returns the sizes of each thread's step and validation lists.
func (q *ThreadReads) Counts(ctx context.Context, threadIDs []string) (map[string]ports.ThreadCounts, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.Counts(ctx, domain.ValidIDs(threadIDs))
}

// LinkedFrom returns, for each thread, the threads that link to it through
// a "linkedThread:*" ref (at most domain.MaxChainThreads each), oldest first.
func (q *ThreadReads) LinkedFrom(ctx context.Context, threadIDs []string) (map[string][]ports.ThreadView, error) {
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

// ThreadChains returns, for each root, the root and the threads linked
// from it ("linkedThread:*" refs), breadth first. maxDepth nil means 3; it
// must be 1..10. At most domain.MaxChainThreads threads per root.
func (q *ThreadReads) ThreadChains(ctx context.Context, rootIDs []string, maxDepth *int) (map[string][]ports.ThreadView, error) {
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

// ContractDiff compares two versions of one contract (0 = the latest).
func (q *Queries) ContractDiff(ctx context.Context, name string, from, to int) (domain.ContractDiff, error) {
	a, err := q.Contract(ctx, name, from)
	if err != nil {
		return domain.ContractDiff{}, err
	}
	b, err := q.Contract(ctx, name, to)
	if err != nil {
		return domain.ContractDiff{}, err
	}
	return domain.DiffContracts(a, b), nil
}
