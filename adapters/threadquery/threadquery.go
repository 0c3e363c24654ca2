// Package threadquery is the read side of thread storage: the SQL behind the
// GraphQL query API, on SQLite and PostgreSQL. Every method that takes many
// ids answers with one statement (paging per parent with ROW_NUMBER), so the
// number of statements a request runs does not grow with its list sizes.
package threadquery

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Store implements ports.ThreadQueries.
type Store struct {
	db *sqldb.DB
	// onQuery, when set, sees every statement and its arguments before it
	// runs (tests count them; test/load/compare replays them in pgbench).
	onQuery func(query string, args []any)

	mu    sync.Mutex
	stmts map[string]*sqlx.Stmt
	// listContext caps contexts in lists of attempts (listcontext.go).
	listContext int
	// refStatsCache holds the ref values' statistics (refstats.go).
	refStatsCache refStatsCache
}

// maxStmts bounds the prepared statements kept. Statement texts vary only
// with the length of IN lists, so the working set is small; texts beyond
// the bound run unprepared.
const maxStmts = 256

// prepared returns a prepared statement for query, or nil. Preparing once
// spares the database a parse and plan per execution, which cost more than
// the execution of these small reads.
func (s *Store) prepared(ctx context.Context, query string) *sqlx.Stmt {
	s.mu.Lock()
	st, full := s.stmts[query], len(s.stmts) >= maxStmts
	s.mu.Unlock()
	if st != nil || full {
		return st
	}
	st, err := s.db.PreparexContext(ctx, query)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev := s.stmts[query]; prev != nil {
		_ = st.Close()
		return prev
	}
	if s.stmts == nil {
		s.stmts = map[string]*sqlx.Stmt{}
	}
	s.stmts[query] = st
	return st
}

// Close releases the prepared statements.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for q, st := range s.stmts {
		_ = st.Close()
		delete(s.stmts, q)
	}
	return nil
}

var _ ports.ThreadQueries = (*Store)(nil)

// New returns a read store on an open, migrated database.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

// OnQuery installs a hook called with every statement the store runs.
func (s *Store) OnQuery(fn func(query string, args []any)) { s.onQuery = fn }

func (s *Store) selectIn(ctx context.Context, dest any, query string, args ...any) error {
	q, a, err := sqlx.In(query, args...)
	if err != nil {
		return fmt.Errorf("threadquery: expand: %w", err)
	}
	return s.selectRaw(ctx, dest, q, a...)
}

func (s *Store) selectRaw(ctx context.Context, dest any, query string, args ...any) error {
	q := s.db.Rebind(query)
	if s.onQuery != nil {
		s.onQuery(q, args)
	}
	var err error
	if st := s.prepared(ctx, q); st != nil {
		err = st.SelectContext(ctx, dest, args...)
	} else {
		err = s.db.SelectContext(ctx, dest, q, args...)
	}
	if err != nil {
		return sqldb.TranslateError(err)
	}
	return nil
}

// scanner is a row type that lists its fields in SELECT order. The hot
// paths (threads and steps, read by every SDK query) scan with it instead of
// sqlx's reflection, which cost more than the statement itself.
type scanner[T any] interface {
	*T
	dest() []any
}

func queryRows[T any, P scanner[T]](ctx context.Context, s *Store, in bool, query string, args ...any) ([]T, error) {
	if in {
		var err error
		if query, args, err = sqlx.In(query, args...); err != nil {
			return nil, fmt.Errorf("threadquery: expand: %w", err)
		}
	}
	query = s.db.Rebind(query)
	if s.onQuery != nil {
		s.onQuery(query, args)
	}
	var rows *sql.Rows
	var err error
	if st := s.prepared(ctx, query); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = s.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, sqldb.TranslateError(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(P(&v).dest()...); err != nil {
			return nil, sqldb.TranslateError(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	return out, nil
}

// dbTime scans a timestamp from either driver: lib/pq gives time.Time,
// modernc/sqlite gives time.Time for declared columns but text when the
// column passes through a subquery.
type dbTime struct {
	T     time.Time
	Valid bool
}

var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999 -0700 MST",
}

func (d *dbTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*d = dbTime{}
		return nil
	case time.Time:
		*d = dbTime{T: x.UTC(), Valid: true}
		return nil
	case []byte:
		return d.parse(string(x))
	case string:
		return d.parse(x)
	}
	return fmt.Errorf("threadquery: cannot scan %T as time", v)
}

func (d *dbTime) parse(s string) error {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			*d = dbTime{T: t.UTC(), Valid: true}
			return nil
		}
	}
	return fmt.Errorf("threadquery: unparseable time %q", s)
}

func (d dbTime) ptr() *time.Time {
	if !d.Valid {
		return nil
	}
	t := d.T
	return &t
}

// dbText scans text, JSON (jsonb arrives as []byte) or NULL.
type dbText struct {
	S     string
	Valid bool
}

func (d *dbText) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*d = dbText{}
	case []byte:
		*d = dbText{S: string(x), Valid: true}
	case string:
		*d = dbText{S: x, Valid: true}
	default:
		*d = dbText{S: fmt.Sprint(x), Valid: true}
	}
	return nil
}

func (d dbText) ptr() *string {
	if !d.Valid {
		return nil
	}
	s := d.S
	return &s
}

// dbInt scans a nullable integer.
type dbInt struct {
	N     int
	Valid bool
}

func (d *dbInt) Scan(v any) error {
	if v == nil {
		*d = dbInt{}
		return nil
	}
	n, err := driver.Int32.ConvertValue(v)
	if err != nil {
		return err
	}
	*d = dbInt{N: int(n.(int64)), Valid: true}
	return nil
}

func (d dbInt) ptr() *int {
	if !d.Valid {
		return nil
	}
	n := d.N
	return &n
}

func utc(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

type threadRow struct {
	ID              string `db:"id"`
	ContractID      dbText `db:"contract_id"`
	ContractName    dbText `db:"contract_name"`
	ContractVersion dbInt  `db:"contract_version"`
	Label           dbText `db:"label"`
	OwnerKind       string `db:"owner_kind"`
	OwnerID         string `db:"owner_id"`
	ServiceName     dbText `db:"service_name"`
	Status          string `db:"status"`
	Error           dbText `db:"error"`
	EndReason       dbText `db:"end_reason"`
	LastHash        string `db:"last_hash"`
	StepCount       int    `db:"step_count"`
	CreatedAt       dbTime `db:"created_at"`
	UpdatedAt       dbTime `db:"updated_at"`
	CompletedAt     dbTime `db:"completed_at"`
	TraceStarted    dbTime `db:"trace_started_at"`
	Tags            dbText `db:"tags"`
	Health          string `db:"health"`
	FailedSteps     int    `db:"failed_steps"`
	Critical        int    `db:"critical_issues"`
	Major           int    `db:"major_issues"`
	Warnings        int    `db:"warning_issues"`
	IssueStep       dbText `db:"first_issue_step"`
	IssueType       dbText `db:"first_issue_type"`
	IssueMessage    dbText `db:"first_issue_message"`
	IssueSeverity   dbText `db:"first_issue_severity"`
	LastActivityAt  dbTime `db:"last_activity_at"`
	DurationMs      int64  `db:"duration_ms"`
	Refs            dbText `db:"refs"`
	Total           int    `db:"total"`
	Exact           dbInt  `db:"exact_match"`
}

const threadCols = `t.id, t.contract_id, t.contract_name, t.contract_version, t.label, t.owner_kind, t.owner_id,
 t.service_name, t.status, t.error, t.end_reason, t.last_hash, t.step_count, t.created_at, t.updated_at, t.completed_at,
 t.trace_started_at, CAST(t.tags AS TEXT) AS tags, t.health, t.failed_steps, t.critical_issues, t.major_issues, t.warning_issues,
 t.first_issue_step, t.first_issue_type, t.first_issue_message, t.first_issue_severity, t.last_activity_at, t.duration_ms`

// refsCol reads a thread's refs as one JSON object in the same statement:
// the SDKs select refs with every thread, so a separate query would cost a
// round trip per request.
func (s *Store) refsCol() string {
	if s.db.Dialect == sqldb.Postgres {
		return `, (SELECT json_object_agg(r.ref_key, r.ref_value) FROM thread_refs r WHERE r.thread_id = t.id)::text AS refs`
	}
	return `, (SELECT json_group_object(r.ref_key, r.ref_value) FROM thread_refs r WHERE r.thread_id = t.id) AS refs`
}

func (r *threadRow) dest() []any {
	return []any{&r.ID, &r.ContractID, &r.ContractName, &r.ContractVersion, &r.Label, &r.OwnerKind, &r.OwnerID,
		&r.ServiceName, &r.Status, &r.Error, &r.EndReason, &r.LastHash, &r.StepCount, &r.CreatedAt, &r.UpdatedAt, &r.CompletedAt,
		&r.TraceStarted, &r.Tags, &r.Health, &r.FailedSteps, &r.Critical, &r.Major, &r.Warnings, &r.IssueStep, &r.IssueType,
		&r.IssueMessage, &r.IssueSeverity, &r.LastActivityAt, &r.DurationMs,
		&r.Refs, &r.Total, &r.Exact}
}

func (r threadRow) view() ports.ThreadView {
	var refs map[string]string
	if r.Refs.S != "" {
		_ = json.Unmarshal([]byte(r.Refs.S), &refs)
	}
	tags := []string{}
	if r.Tags.S != "" {
		_ = json.Unmarshal([]byte(r.Tags.S), &tags)
	}
	h := domain.ThreadHealth{FailedSteps: r.FailedSteps, Critical: r.Critical, Major: r.Major, Warnings: r.Warnings,
		LastActivityAt: r.LastActivityAt.T}
	if r.IssueType.Valid {
		h.FirstIssue = &domain.HealthIssue{StepName: r.IssueStep.S, Type: r.IssueType.S, Message: r.IssueMessage.S,
			Severity: domain.Severity(r.IssueSeverity.S)}
	}
	return ports.ThreadView{Refs: refs, Tags: tags, Health: h, HealthStatus: domain.HealthStatus(r.Health), DurationMs: r.DurationMs,
		ID: r.ID, ContractID: r.ContractID.ptr(), ContractName: r.ContractName.ptr(),
		ContractVersion: r.ContractVersion.ptr(), Label: r.Label.ptr(), OwnerKind: r.OwnerKind,
		OwnerID: r.OwnerID, ServiceName: r.ServiceName.ptr(), Status: r.Status, Error: r.Error.ptr(), EndReason: r.EndReason.ptr(),
		LastHash: r.LastHash, StepCount: r.StepCount, CreatedAt: r.CreatedAt.T, UpdatedAt: r.UpdatedAt.T,
		CompletedAt: r.CompletedAt.ptr(), TraceStartedAt: r.TraceStarted.ptr(),
	}
}

// GetThreads returns the threads with these ids.
func (s *Store) GetThreads(ctx context.Context, ids []string) ([]ports.ThreadView, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := queryRows[threadRow](ctx, s, true, `SELECT `+threadCols+s.refsCol()+`, 0 AS total, 0 AS exact_match FROM threads t WHERE t.id IN (?)`, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ports.ThreadView, len(rows))
	for i, r := range rows {
		out[i] = r.view()
	}
	return out, nil
}

// likeEscape quotes LIKE wildcards; the queries declare ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// partyCond keeps the threads t a principal is a party of (args: principal
// id twice, now): it started them or holds an unexpired access row.
const partyCond = `(t.owner_id = ? OR EXISTS (SELECT 1 FROM thread_access x WHERE x.thread_id = t.id
 AND x.principal_id = ? AND (x.expires_at IS NULL OR x.expires_at > ?)))`

// PartyThreads returns those of ids that p is a party of.
func (s *Store) PartyThreads(ctx context.Context, p ports.PartyOf, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []string
	err := s.selectIn(ctx, &out, `SELECT t.id FROM threads t WHERE t.id IN (?) AND `+partyCond,
		ids, p.PrincipalID, p.PrincipalID, utc(&p.Now))
	return out, err
}

type refRow struct {
	ThreadID string `db:"thread_id"`
	Key      string `db:"ref_key"`
	Value    string `db:"ref_value"`
}

// Refs returns each thread's refs.
func (s *Store) Refs(ctx context.Context, threadIDs []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []refRow
	if err := s.selectIn(ctx, &rows, `SELECT thread_id, ref_key, ref_value FROM thread_refs WHERE thread_id IN (?)`, threadIDs); err != nil {
		return nil, err
	}
	for _, r := range rows {
		m := out[r.ThreadID]
		if m == nil {
			m = map[string]string{}
			out[r.ThreadID] = m
		}
		m[r.Key] = r.Value
	}
	return out, nil
}

type stepRow struct {
	ThreadID       string `db:"thread_id"`
	StepName       string `db:"step_name"`
	IdempotencyKey string `db:"idempotency_key"`
	Status         string `db:"status"`
	RetryCount     int    `db:"retry_count"`
	LatestStepID   string `db:"latest_step_id"`
	LatestSeq      dbInt  `db:"latest_seq"`
	PreviousStep   dbText `db:"previous_step"`
	Actor          string `db:"actor"`
	ActorService   string `db:"actor_service"`
	LatestContext  dbText `db:"latest_context"`
	FirstSeenAt    dbTime `db:"first_seen_at"`
	LastUpdatedAt  dbTime `db:"last_updated_at"`
	StartedAt      dbTime `db:"started_at"`
	FinishedAt     dbTime `db:"finished_at"`
	Hash           dbText `db:"hash"`
	PrevHash       dbText `db:"prev_hash"`
	RN             int    `db:"rn"`
}

func (r *stepRow) dest() []any {
	return []any{&r.ThreadID, &r.StepName, &r.IdempotencyKey, &r.Status, &r.RetryCount, &r.LatestStepID, &r.LatestSeq,
		&r.PreviousStep, &r.Actor, &r.ActorService, &r.LatestContext, &r.FirstSeenAt, &r.LastUpdatedAt, &r.StartedAt,
		&r.FinishedAt, &r.Hash, &r.PrevHash, &r.RN}
}

// Steps returns at most perThread step states of each thread.
func (s *Store) Steps(ctx context.Context, threadIDs []string, f ports.StepFilter, perThread int) (map[string][]ports.StepView, error) {
	out := map[string][]ports.StepView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	where := []string{`s.thread_id IN (?)`}
	args := []any{threadIDs}
	switch {
	case f.StepName != "" && f.IdempotencyKey != "":
		where = append(where, `s.step_name = ? AND s.idempotency_key = ?`)
		args = append(args, f.StepName, f.IdempotencyKey)
	case f.StepName != "":
		// The Node SDK passes a step identity as "name:key" in stepName.
		if name, key, ok := strings.Cut(f.StepName, ":"); ok {
			where = append(where, `(s.step_name = ? OR (s.step_name = ? AND s.idempotency_key = ?))`)
			args = append(args, f.StepName, name, key)
		} else {
			where = append(where, `s.step_name = ?`)
			args = append(args, f.StepName)
		}
	case f.IdempotencyKey != "":
		where = append(where, `s.idempotency_key = ?`)
		args = append(args, f.IdempotencyKey)
	}
	if len(f.Statuses) > 0 {
		where = append(where, `s.status IN (?)`)
		args = append(args, f.Statuses)
	}
	args = append(args, f.Offset, f.Offset+perThread)
	// FirstOfName: only the first-seen identity of each step name (the
	// source is numbered per name first, then paged as usual).
	source := `thread_step_states s`
	if f.FirstOfName {
		source = `(SELECT * FROM (SELECT f.*, ROW_NUMBER() OVER (PARTITION BY f.thread_id, f.step_name
 ORDER BY f.first_seen_at, f.idempotency_key) AS name_rn FROM thread_step_states f WHERE f.thread_id IN (?)) n WHERE name_rn = 1) s`
		args = append([]any{threadIDs}, args...)
	}
	q := `SELECT thread_id, step_name, idempotency_key, status, retry_count, latest_step_id, latest_seq, previous_step,
 actor, actor_service, latest_context, first_seen_at, last_updated_at, started_at, finished_at, hash, prev_hash, rn
 FROM (SELECT s.thread_id, s.step_name, s.idempotency_key, s.status, s.retry_count, s.latest_step_id,
 a.seq AS latest_seq, s.previous_step, s.actor, s.actor_service, CAST(a.context AS TEXT) AS latest_context,
 s.first_seen_at, s.last_updated_at, s.started_at, s.finished_at, a.hash, a.prev_hash,
 ROW_NUMBER() OVER (PARTITION BY s.thread_id ORDER BY s.first_seen_at, a.seq, s.step_name, s.idempotency_key) AS rn
 FROM ` + source + ` LEFT JOIN thread_activities a ON a.id = s.latest_step_id
 WHERE ` + strings.Join(where, " AND ") + `) x WHERE rn > ? AND rn <= ? ORDER BY thread_id, rn`
	rows, err := queryRows[stepRow](ctx, s, true, q, args...)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], ports.StepView{
			StepKey:      ports.StepKey{ThreadID: r.ThreadID, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey},
			Status:       r.Status,
			RetryCount:   r.RetryCount,
			LatestStepID: r.LatestStepID, LatestSeq: r.LatestSeq.N, PreviousStep: r.PreviousStep.ptr(),
			Actor: r.Actor, ActorService: r.ActorService, LatestContext: orJSON(r.LatestContext.S, "{}"),
			FirstSeenAt: r.FirstSeenAt.T, LastUpdatedAt: r.LastUpdatedAt.T,
			StartedAt: r.StartedAt.ptr(), FinishedAt: r.FinishedAt.ptr(),
			Hash: r.Hash.S, PrevHash: r.PrevHash.S,
		})
	}
	return out, nil
}

// orJSON returns a stored JSON document in compact form, or def when empty.
// PostgreSQL renders JSONB with a space after ':' and ','; SQLite returns the
// text as written. Compacting makes both dialects answer byte for byte alike.
func orJSON(s, def string) string {
	if s == "" {
		return def
	}
	return canonicalJSON(s)
}

// canonicalJSON re-encodes stored JSON one way on both stores: keys sorted,
// compact, no HTML escaping. PostgreSQL's jsonb reorders keys (shorter
// first) and SQLite keeps Go's escaped text, so the same context would
// otherwise read back differently. Text that is not JSON is returned as is.
func canonicalJSON(s string) string {
	if s == "{}" || s == "[]" {
		return s
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber() // numbers keep their text
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return s
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type activityRow struct {
	ID             string `db:"id"`
	ThreadID       string `db:"thread_id"`
	Seq            int    `db:"seq"`
	ActivityType   string `db:"activity_type"`
	StepName       string `db:"step_name"`
	IdempotencyKey string `db:"idempotency_key"`
	Status         string `db:"status"`
	Attempt        int    `db:"attempt"`
	Actor          string `db:"actor"`
	ActorService   string `db:"actor_service"`
	Context        dbText `db:"context"`
	ContextBytes   *int64 `db:"context_bytes"` // set by listCols: the context's size when it was capped
	Metadata       dbText `db:"metadata"`
	StartedAt      dbTime `db:"started_at"`
	FinishedAt     dbTime `db:"finished_at"`
	RecordedAt     dbTime `db:"recorded_at"`
	ContentHash    string `db:"content_hash"`
	Hash           string `db:"hash"`
	PrevHash       string `db:"prev_hash"`
	Validation     dbText `db:"validation"`
	RN             int    `db:"rn"`
}

const activityCols = `a.id, a.thread_id, a.seq, a.activity_type, a.step_name, a.idempotency_key, a.status, a.attempt,
 a.actor, a.actor_service, CAST(a.context AS TEXT) AS context, CAST(a.metadata AS TEXT) AS metadata,
 a.started_at, a.finished_at, a.recorded_at, a.content_hash, a.hash, a.prev_hash`

// validationCol is the overall status of the validation made for the
// attempt (passed, warning, violated; NULL when none), for the history and
// attempts lists (thread_validations_thread narrows it to the thread): its
// row's, else the compact form on the attempt (migration 00101).
const validationCol = `, COALESCE((SELECT v.overall_status FROM thread_validations v WHERE v.thread_id = a.thread_id AND v.step_id = a.id
 ORDER BY v.created_at DESC, v.id DESC LIMIT 1), a.validation_status) AS validation`

// validationRows is every validation result in both of its stored forms
// (migration 00101, issue 28), as rows of thread_validations (alias v): the
// rows, and the results stored compactly on their attempt — validation_status
// set, no issues, the attempt's id as the result's id and its recording time
// as the result's. No writer stores both forms for one attempt, so nothing
// is counted twice. Filters on v's columns reach both branches (PostgreSQL
// and SQLite push them into a UNION ALL): thread_id takes each table's
// thread index.
const validationRows = `(SELECT r.id, r.thread_id, r.step_id, r.step_name, r.idempotency_key, r.overall_status,
 CAST(r.issues AS TEXT) AS issues, r.critical_count, r.warning_count, r.minor_count, r.info_count, r.created_at
 FROM thread_validations r
 UNION ALL
 SELECT c.id, c.thread_id, c.id, c.step_name, c.idempotency_key, c.validation_status, '[]', 0, 0, 0, 0, c.recorded_at
 FROM thread_activities c WHERE c.validation_status IS NOT NULL) v`

func (r activityRow) view() ports.ActivityView {
	context := orJSON(r.Context.S, "{}")
	if !r.Context.Valid && r.ContextBytes != nil && *r.ContextBytes > 0 {
		context = TruncatedContext(*r.ContextBytes) // cut by listCols
	}
	return ports.ActivityView{
		ID: r.ID, ThreadID: r.ThreadID, Seq: r.Seq, ActivityType: r.ActivityType, StepName: r.StepName,
		IdempotencyKey: r.IdempotencyKey, Status: r.Status, Attempt: r.Attempt, Actor: r.Actor,
		ActorService: r.ActorService, Context: context, Metadata: orJSON(r.Metadata.S, "{}"),
		StartedAt: r.StartedAt.ptr(), FinishedAt: r.FinishedAt.ptr(), RecordedAt: r.RecordedAt.T,
		ContentHash: r.ContentHash, Hash: r.Hash, PrevHash: r.PrevHash, Validation: r.Validation.S,
	}
}

func historyWhere(f ports.HistoryFilter) ([]string, []any) {
	var where []string
	var args []any
	if f.StartAt != nil {
		where = append(where, `a.recorded_at >= ?`)
		args = append(args, utc(f.StartAt))
	}
	if f.EndAt != nil {
		where = append(where, `a.recorded_at <= ?`)
		args = append(args, utc(f.EndAt))
	}
	if f.ActivityType != "" {
		where = append(where, `a.activity_type = ?`)
		args = append(args, f.ActivityType)
	}
	if f.Actor != "" {
		where = append(where, `(a.actor = ? OR a.actor_service = ?)`)
		args = append(args, f.Actor, f.Actor)
	}
	return where, args
}

// StepHistories returns each step's activities newest first, paged per step.
// Steps are matched per thread with IN lists and filtered to the exact
// (name, key) pairs in Go, which keeps the statement portable.
func (s *Store) StepHistories(ctx context.Context, steps []ports.StepKey, f ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error) {
	out := map[ports.StepKey][]ports.ActivityView{}
	if len(steps) == 0 {
		return out, nil
	}
	want := make(map[ports.StepKey]bool, len(steps))
	var threads, names []string
	seenT, seenN := map[string]bool{}, map[string]bool{}
	for _, k := range steps {
		want[k] = true
		if !seenT[k.ThreadID] {
			seenT[k.ThreadID] = true
			threads = append(threads, k.ThreadID)
		}
		if !seenN[k.StepName] {
			seenN[k.StepName] = true
			names = append(names, k.StepName)
		}
	}
	where, args := historyWhere(f)
	where = append([]string{`a.thread_id IN (?)`, `a.step_name IN (?)`}, where...)
	args = append([]any{threads, names}, args...)
	args = append(args, f.Offset, f.Offset+f.Limit)
	q := `SELECT * FROM (SELECT ` + s.listCols(len(steps) == 1 && f.Limit == 1) + validationCol + `,
 ROW_NUMBER() OVER (PARTITION BY a.thread_id, a.step_name, a.idempotency_key ORDER BY a.seq DESC) AS rn
 FROM thread_activities a WHERE ` + strings.Join(where, " AND ") + `) x WHERE rn > ? AND rn <= ? ORDER BY thread_id, step_name, idempotency_key, rn`
	var rows []activityRow
	if err := s.selectIn(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		k := ports.StepKey{ThreadID: r.ThreadID, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey}
		if want[k] {
			out[k] = append(out[k], r.view())
		}
	}
	return out, nil
}

// History returns one step's activities, newest first.
func (s *Store) History(ctx context.Context, key ports.StepKey, f ports.HistoryFilter) ([]ports.ActivityView, error) {
	where, args := historyWhere(f)
	where = append([]string{`a.thread_id = ?`, `a.step_name = ?`}, where...)
	args = append([]any{key.ThreadID, key.StepName}, args...)
	if key.IdempotencyKey != "" {
		where = append(where, `a.idempotency_key = ?`)
		args = append(args, key.IdempotencyKey)
	}
	args = append(args, f.Limit, f.Offset)
	var rows []activityRow
	q := `SELECT ` + s.listCols(f.Limit == 1) + validationCol + `, 0 AS rn FROM thread_activities a WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY a.seq DESC LIMIT ? OFFSET ?`
	if err := s.selectRaw(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	out := make([]ports.ActivityView, len(rows))
	for i, r := range rows {
		out[i] = r.view()
	}
	return out, nil
}

// Activities returns each thread's chain in seq order.
func (s *Store) Activities(ctx context.Context, threadIDs []string) (map[string][]ports.ActivityView, error) {
	out := map[string][]ports.ActivityView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []activityRow
	q := `SELECT ` + activityCols + `, 0 AS rn FROM thread_activities a WHERE a.thread_id IN (?) ORDER BY a.thread_id, a.seq`
	if err := s.selectIn(ctx, &rows, q, threadIDs); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], r.view())
	}
	return out, nil
}

type subStepRow struct {
	ID             string `db:"id"`
	ThreadID       string `db:"thread_id"`
	StepID         string `db:"step_id"`
	StepName       string `db:"step_name"`
	IdempotencyKey string `db:"idempotency_key"`
	Name           string `db:"name"`
	Status         string `db:"status"`
	Payload        dbText `db:"payload"`
	RecordedAt     dbTime `db:"recorded_at"`
	CreatedAt      dbTime `db:"created_at"`
}

// SubSteps returns the sub-steps recorded under any attempt of each step.
func (s *Store) SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	out := map[ports.StepKey][]ports.SubStepView{}
	if len(steps) == 0 {
		return out, nil
	}
	want := map[ports.StepKey]bool{}
	var threads []string
	seen := map[string]bool{}
	for _, k := range steps {
		want[k] = true
		if !seen[k.ThreadID] {
			seen[k.ThreadID] = true
			threads = append(threads, k.ThreadID)
		}
	}
	var rows []subStepRow
	q := `SELECT ss.id, ss.thread_id, ss.step_id, a.step_name, a.idempotency_key, ss.name, ss.status,
 CAST(ss.payload AS TEXT) AS payload, ss.recorded_at, ss.created_at
 FROM step_substeps ss JOIN thread_activities a ON a.id = ss.step_id
 WHERE ss.thread_id IN (?) ORDER BY a.seq, ss.position, ss.recorded_at, ss.id`
	if err := s.selectIn(ctx, &rows, q, threads); err != nil {
		return nil, err
	}
	for _, r := range rows {
		k := ports.StepKey{ThreadID: r.ThreadID, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey}
		if !want[k] {
			continue
		}
		out[k] = append(out[k], ports.SubStepView{
			ID: r.ID, ThreadID: r.ThreadID, StepID: r.StepID, Step: k, Name: r.Name, Status: r.Status,
			Payload: orJSON(r.Payload.S, "{}"), RecordedAt: r.RecordedAt.T, CreatedAt: r.CreatedAt.T,
		})
	}
	return out, nil
}

type validationRow struct {
	ID             string `db:"id"`
	ThreadID       string `db:"thread_id"`
	StepID         string `db:"step_id"`
	StepName       string `db:"step_name"`
	IdempotencyKey string `db:"idempotency_key"`
	OverallStatus  string `db:"overall_status"`
	Issues         dbText `db:"issues"`
	CriticalCount  int    `db:"critical_count"`
	WarningCount   int    `db:"warning_count"`
	MinorCount     int    `db:"minor_count"`
	InfoCount      int    `db:"info_count"`
	CreatedAt      dbTime `db:"created_at"`
	RN             int    `db:"rn"`
}

// Validations returns each thread's validation results, paged per thread.
func (s *Store) Validations(ctx context.Context, threadIDs []string, f ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
	out := map[string][]ports.ValidationView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	where := []string{`v.thread_id IN (?)`}
	args := []any{threadIDs}
	for _, c := range []struct{ col, val string }{
		{"v.step_id", f.StepID}, {"v.step_name", f.StepName}, {"v.idempotency_key", f.IdempotencyKey},
	} {
		if c.val != "" {
			where = append(where, c.col+` = ?`)
			args = append(args, c.val)
		}
	}
	if f.ValidationType != "" {
		// Issues are a JSON array of objects with a "type"; matching the
		// serialised pair works on jsonb-as-text and on SQLite text alike.
		where = append(where, `REPLACE(v.issues, ' ', '') LIKE ? ESCAPE '\'`)
		args = append(args, `%"type":"`+likeEscape(f.ValidationType)+`"%`)
	}
	args = append(args, f.Offset, f.Offset+f.Limit)
	q := `SELECT * FROM (SELECT v.id, v.thread_id, v.step_id, v.step_name, v.idempotency_key, v.overall_status,
 v.issues, v.critical_count, v.warning_count, v.minor_count, v.info_count, v.created_at,
 ROW_NUMBER() OVER (PARTITION BY v.thread_id ORDER BY v.created_at DESC, v.id DESC) AS rn
 FROM ` + validationRows + ` WHERE ` + strings.Join(where, " AND ") + `) x WHERE rn > ? AND rn <= ? ORDER BY thread_id, rn`
	var rows []validationRow
	if err := s.selectIn(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], ports.ValidationView{
			ID: r.ID, ThreadID: r.ThreadID, StepID: r.StepID, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey,
			OverallStatus: r.OverallStatus, Issues: orJSON(r.Issues.S, "[]"), CriticalCount: r.CriticalCount,
			WarningCount: r.WarningCount, MinorCount: r.MinorCount, InfoCount: r.InfoCount, CreatedAt: r.CreatedAt.T,
		})
	}
	return out, nil
}

type notificationRow struct {
	ID               string `db:"id"`
	ThreadID         string `db:"thread_id"`
	StepID           string `db:"step_id"`
	StepName         string `db:"step_name"`
	IdempotencyKey   string `db:"idempotency_key"`
	Source           string `db:"source"`
	NotificationType string `db:"notification_type"`
	StepStatus       string `db:"step_status"`
	ValidationStatus string `db:"validation_status"`
	ViolationType    string `db:"violation_type"`
	Severity         string `db:"severity"`
	Message          string `db:"message"`
	Details          dbText `db:"details"`
	CreatedAt        dbTime `db:"created_at"`
	RN               int    `db:"rn"`
}

// Notifications returns each thread's notifications, paged per thread.
func (s *Store) Notifications(ctx context.Context, threadIDs []string, f ports.NotificationFilter) (map[string][]ports.NotificationView, error) {
	out := map[string][]ports.NotificationView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	where := []string{`n.thread_id IN (?)`}
	args := []any{threadIDs}
	for _, c := range []struct{ col, val string }{
		{"n.step_id", f.StepID}, {"n.step_name", f.StepName}, {"n.source", f.Source}, {"n.notification_type", f.NotificationType},
	} {
		if c.val != "" {
			where = append(where, c.col+` = ?`)
			args = append(args, c.val)
		}
	}
	if len(f.Severities) > 0 {
		where = append(where, `n.severity IN (?)`)
		args = append(args, f.Severities)
	}
	args = append(args, f.Offset, f.Offset+f.Limit)
	q := `SELECT * FROM (SELECT n.id, n.thread_id, n.step_id, n.step_name, n.idempotency_key, n.source,
 n.notification_type, n.step_status, n.validation_status, n.violation_type, n.severity, n.message,
 CAST(n.details AS TEXT) AS details, n.created_at,
 ROW_NUMBER() OVER (PARTITION BY n.thread_id ORDER BY n.created_at DESC, n.seq DESC) AS rn
 FROM thread_notifications n WHERE ` + strings.Join(where, " AND ") + `) x WHERE rn > ? AND rn <= ? ORDER BY thread_id, rn`
	var rows []notificationRow
	if err := s.selectIn(ctx, &rows, q, args...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], ports.NotificationView{
			ID: r.ID, ThreadID: r.ThreadID, StepID: r.StepID, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey,
			Source: r.Source, NotificationType: r.NotificationType, StepStatus: r.StepStatus,
			ValidationStatus: r.ValidationStatus, ViolationType: r.ViolationType, Severity: r.Severity,
			Message: r.Message, Details: orJSON(r.Details.S, "{}"), CreatedAt: r.CreatedAt.T,
		})
	}
	return out, nil
}

type countRow struct {
	ThreadID   string `db:"thread_id"`
	Total      int    `db:"total"`
	Critical   int    `db:"critical"`
	Warning    int    `db:"warning"`
	Major      int    `db:"major"`
	Minor      int    `db:"minor"`
	Info       int    `db:"info"`
	Execution  int    `db:"execution"`
	Validation int    `db:"validation"`
}

// NotificationCounts aggregates each thread's notifications.
func (s *Store) NotificationCounts(ctx context.Context, threadIDs []string) (map[string]ports.NotificationCounts, error) {
	q := `SELECT thread_id, COUNT(*) AS total,
 SUM(CASE WHEN severity = 'critical' THEN 1 ELSE 0 END) AS critical,
 SUM(CASE WHEN severity = 'warning' THEN 1 ELSE 0 END) AS warning,
 SUM(CASE WHEN severity = 'major' THEN 1 ELSE 0 END) AS major,
 SUM(CASE WHEN severity = 'minor' THEN 1 ELSE 0 END) AS minor,
 SUM(CASE WHEN severity = 'info' THEN 1 ELSE 0 END) AS info,
 SUM(CASE WHEN source = 'execution' THEN 1 ELSE 0 END) AS execution,
 SUM(CASE WHEN source = 'validation' THEN 1 ELSE 0 END) AS validation
 FROM thread_notifications WHERE thread_id IN (?) GROUP BY thread_id`
	return perThread(ctx, s, q, threadIDs, func(r countRow) (string, ports.NotificationCounts) {
		return r.ThreadID, ports.NotificationCounts{Total: r.Total, Critical: r.Critical, Warning: r.Warning,
			Major: r.Major, Minor: r.Minor, Info: r.Info, Execution: r.Execution, Validation: r.Validation}
	})
}

// perThread runs q (whose IN list takes threadIDs) and keys its rows by
// thread; a thread without rows is absent from the map.
func perThread[R, V any](ctx context.Context, s *Store, q string, threadIDs []string, conv func(R) (string, V)) (map[string]V, error) {
	out := map[string]V{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []R
	if err := s.selectIn(ctx, &rows, q, threadIDs); err != nil {
		return nil, err
	}
	for _, r := range rows {
		id, v := conv(r)
		out[id] = v
	}
	return out, nil
}

type chainRow struct {
	RootID   string `db:"root_id"`
	ThreadID string `db:"thread_id"`
	Depth    int    `db:"depth"`
}

// Chains walks linkedThread refs from every root at once, breadth first.
// The depth bound stops cycles; MIN(depth) keeps each thread once per root.
func (s *Store) Chains(ctx context.Context, rootIDs []string, maxDepth, limit int) (map[string][]ports.ChainLink, error) {
	out := map[string][]ports.ChainLink{}
	if len(rootIDs) == 0 {
		return out, nil
	}
	q := `WITH RECURSIVE chain(root_id, thread_id, depth) AS (
 SELECT t.id, t.id, 1 FROM threads t WHERE t.id IN (?)
 UNION
 SELECT c.root_id, r.ref_value, c.depth + 1 FROM chain c JOIN thread_refs r ON r.thread_id = c.thread_id
 WHERE r.ref_key LIKE 'linkedThread:%' AND c.depth < ?
)
SELECT root_id, thread_id, depth FROM (
 SELECT root_id, thread_id, depth, ROW_NUMBER() OVER (PARTITION BY root_id ORDER BY depth, thread_id) AS rn
 FROM (SELECT c.root_id, c.thread_id, MIN(c.depth) AS depth FROM chain c JOIN threads t ON t.id = c.thread_id
       GROUP BY c.root_id, c.thread_id) d
) x WHERE rn <= ? ORDER BY root_id, depth, thread_id`
	var rows []chainRow
	if err := s.selectIn(ctx, &rows, q, rootIDs, maxDepth, limit); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.RootID] = append(out[r.RootID], ports.ChainLink{RootID: r.RootID, ThreadID: r.ThreadID, Depth: r.Depth})
	}
	return out, nil
}

type countsRow struct {
	ThreadID    string `db:"id"`
	Steps       int    `db:"steps"`
	Validations int    `db:"validations"`
}

// Counts returns the sizes of each thread's step and validation lists.
func (s *Store) Counts(ctx context.Context, threadIDs []string) (map[string]ports.ThreadCounts, error) {
	q := `SELECT t.id, (SELECT COUNT(*) FROM thread_step_states s WHERE s.thread_id = t.id) AS steps,
 (SELECT COUNT(*) FROM thread_validations v WHERE v.thread_id = t.id)
 + (SELECT COUNT(*) FROM thread_activities c WHERE c.thread_id = t.id AND c.validation_status IS NOT NULL) AS validations
 FROM threads t WHERE t.id IN (?)`
	return perThread(ctx, s, q, threadIDs, func(r countsRow) (string, ports.ThreadCounts) {
		return r.ThreadID, ports.ThreadCounts{Steps: r.Steps, Validations: r.Validations}
	})
}

// LinkedFrom returns the threads whose linkedThread:* refs point at each thread.
func (s *Store) LinkedFrom(ctx context.Context, threadIDs []string, limit int) (map[string][]string, error) {
	out := map[string][]string{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []refRow
	q := `SELECT r.thread_id, r.ref_key, r.ref_value FROM thread_refs r JOIN threads t ON t.id = r.thread_id
 WHERE r.ref_value IN (?) AND r.ref_key LIKE 'linkedThread:%' ORDER BY t.created_at, r.thread_id`
	if err := s.selectIn(ctx, &rows, q, threadIDs); err != nil {
		return nil, err
	}
	for _, r := range rows {
		if list := out[r.Value]; len(list) < limit && (len(list) == 0 || list[len(list)-1] != r.ThreadID) {
			out[r.Value] = append(list, r.ThreadID)
		}
	}
	return out, nil
}

// Attempts returns a page of each thread's attempts in seq order.
func (s *Store) Attempts(ctx context.Context, threadIDs []string, limit, offset int) (map[string][]ports.ActivityView, error) {
	out := map[string][]ports.ActivityView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []activityRow
	q := `SELECT * FROM (SELECT ` + s.listCols(len(threadIDs) == 1 && limit == 1) + validationCol + `, ROW_NUMBER() OVER (PARTITION BY a.thread_id ORDER BY a.seq) AS rn
 FROM thread_activities a WHERE a.thread_id IN (?)) x WHERE rn > ? AND rn <= ? ORDER BY thread_id, rn`
	if err := s.selectIn(ctx, &rows, q, threadIDs, offset, offset+limit); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], r.view())
	}
	return out, nil
}

// LatestValidations returns the newest validation result of each step.
func (s *Store) LatestValidations(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	out := map[ports.StepKey]ports.ValidationView{}
	if len(steps) == 0 {
		return out, nil
	}
	want := map[ports.StepKey]bool{}
	var threads, names []string
	seenT, seenN := map[string]bool{}, map[string]bool{}
	for _, k := range steps {
		want[k] = true
		if !seenT[k.ThreadID] {
			seenT[k.ThreadID] = true
			threads = append(threads, k.ThreadID)
		}
		if !seenN[k.StepName] {
			seenN[k.StepName] = true
			names = append(names, k.StepName)
		}
	}
	q := `SELECT * FROM (SELECT v.id, v.thread_id, v.step_id, v.step_name, v.idempotency_key, v.overall_status,
 v.issues, v.critical_count, v.warning_count, v.minor_count, v.info_count, v.created_at,
 ROW_NUMBER() OVER (PARTITION BY v.thread_id, v.step_name, v.idempotency_key ORDER BY v.created_at DESC, v.id DESC) AS rn
 FROM ` + validationRows + ` WHERE v.thread_id IN (?) AND v.step_name IN (?)) x WHERE rn = 1`
	var rows []validationRow
	if err := s.selectIn(ctx, &rows, q, threads, names); err != nil {
		return nil, err
	}
	for _, r := range rows {
		k := ports.StepKey{ThreadID: r.ThreadID, StepName: r.StepName, IdempotencyKey: r.IdempotencyKey}
		if !want[k] {
			continue
		}
		out[k] = ports.ValidationView{ID: r.ID, ThreadID: r.ThreadID, StepID: r.StepID, StepName: r.StepName,
			IdempotencyKey: r.IdempotencyKey, OverallStatus: r.OverallStatus, Issues: orJSON(r.Issues.S, "[]"),
			CriticalCount: r.CriticalCount, WarningCount: r.WarningCount, MinorCount: r.MinorCount, InfoCount: r.InfoCount,
			CreatedAt: r.CreatedAt.T}
	}
	return out, nil
}
