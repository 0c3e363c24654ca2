// Package threadstore is the write side of thread storage on the engine's SQL
// database (SQLite and PostgreSQL): threads, refs, access, the append-only
// hash-chained activity log, step states, sub-steps, validations and
// notifications. The GraphQL read side has its own queries on these tables.
package threadstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"hash/fnv"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Store implements ports.ThreadStore.
type Store struct {
	db *sqldb.DB

	// Prepared statements of the hot write path, by final query text. They
	// are prepared on the database after the transaction that first needed
	// them (preparing inside it would wait forever for SQLite's single
	// connection); inside a transaction tx.Stmtx reuses them, which saves
	// SQLite's parser and PostgreSQL's parse/plan per step.
	stmtMu  sync.Mutex
	stmts   map[string]*sqlx.Stmt
	pending map[string]bool

	batchOnce sync.Once
	shards    []chan *appendJob // group-commit queues, by hash of thread id
	// closeMu: AppendStep queues under RLock; Close takes it to stop new
	// appends, then closes the queues and waits for the committers.
	closeMu    sync.RWMutex
	closed     bool
	committers sync.WaitGroup

	// Counters for tests: batches of several appends committed together,
	// and batches that rolled back and were redone one append at a time.
	groupCommits, groupFallbacks atomic.Int64

	metrics ports.Metrics

	// The transparency log's stored hashes (tlog.go): committed ones cached,
	// and those written by transactions still open.
	hashes     hashCache
	pendMu     sync.Mutex
	pendHashes map[*sqlx.Tx]pendingWrite
	// seen: the listing entries of SQLite batches this process committed,
	// by batch start, until the sequencer lists them (tlog_sqlite.go).
	seenMu sync.Mutex
	seen   map[int64][]listEntry
	// noLog skips the log: only benchmarks set it (export_test.go), to
	// measure what the log costs.
	noLog bool
	// queueLeaves makes SQLite queue leaves as PostgreSQL does (tests only,
	// export_test.go; see logInPlace).
	queueLeaves bool
	// logFlushGap: see defaultFlushGap (tests and benchmarks set 0).
	logFlushGap time.Duration
	// logFlushes counts sequencer transactions that appended leaves.
	logFlushes atomic.Int64
	// logWake wakes the log's sequencer after a commit that queued leaves.
	logWake chan struct{}
	// queueRead, when set (tests), runs between ThreadLeaves' read of the
	// queue and its read of the tree.
	queueRead func()
}

var _ ports.ThreadStore = (*Store)(nil)

// New returns a store on an open, migrated database.
func New(db *sqldb.DB) *Store {
	return &Store{db: db, stmts: map[string]*sqlx.Stmt{}, pending: map[string]bool{}, metrics: ports.NopMetrics{},
		logWake: make(chan struct{}, 1), logFlushGap: defaultFlushGap}
}

// SetMetrics reports group commits to m. Call it before the first append.
func (s *Store) SetMetrics(m ports.Metrics) { s.metrics = m }

// maxPrepared bounds the statement cache: multi-row statements differ by row
// count, so their texts are many.
const maxPrepared = 512

// prepared returns the statement for query inside tx, or nil (and marks the
// query for preparation after the transaction).
func (s *Store) prepared(ctx context.Context, tx *sqlx.Tx, query string) *sqlx.Stmt {
	s.stmtMu.Lock()
	st := s.stmts[query]
	if st == nil && len(s.stmts)+len(s.pending) < maxPrepared {
		s.pending[query] = true
	}
	s.stmtMu.Unlock()
	if st == nil {
		return nil
	}
	return tx.StmtxContext(ctx, st)
}

func (s *Store) preparePending(ctx context.Context) {
	s.stmtMu.Lock()
	var todo []string
	for q := range s.pending {
		todo = append(todo, q)
		delete(s.pending, q)
	}
	s.stmtMu.Unlock()
	// Not under stmtMu: on SQLite, Preparex waits for the single connection,
	// which a transaction calling prepared() may be holding.
	for _, q := range todo {
		st, err := s.db.PreparexContext(ctx, q)
		if err != nil {
			continue
		}
		s.stmtMu.Lock()
		if s.stmts[q] == nil {
			s.stmts[q] = st
		} else {
			st.Close()
		}
		s.stmtMu.Unlock()
	}
}

func (s *Store) exec(ctx context.Context, tx *sqlx.Tx, query string, args ...any) error {
	query = s.q(query)
	var err error
	if st := s.prepared(ctx, tx, query); st != nil {
		_, err = st.ExecContext(ctx, args...)
	} else {
		_, err = tx.ExecContext(ctx, query, args...)
	}
	return err
}

func (s *Store) get(ctx context.Context, tx *sqlx.Tx, dest any, query string, args ...any) error {
	query = s.q(query)
	if st := s.prepared(ctx, tx, query); st != nil {
		return st.GetContext(ctx, dest, args...)
	}
	return tx.GetContext(ctx, dest, query, args...)
}

func (s *Store) selectTx(ctx context.Context, tx *sqlx.Tx, dest any, query string, args ...any) error {
	query = s.q(query)
	if st := s.prepared(ctx, tx, query); st != nil {
		return st.SelectContext(ctx, dest, args...)
	}
	return tx.SelectContext(ctx, dest, query, args...)
}

// tx runs fn in one transaction, retried on concurrency failures
// (sqldb.TxRetry); a rule's refusal wrapped with sqldb.CallerError comes back
// unchanged. Statements first seen inside the transaction are prepared
// afterwards, outside it.
func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	err := s.db.TxRetry(ctx, fn)
	s.preparePending(ctx)
	return err
}

func (s *Store) q(query string) string { return s.db.Rebind(query) }

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func jsonText(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

type threadRow struct {
	ID              string         `db:"id"`
	ContractID      sql.NullString `db:"contract_id"`
	ContractName    sql.NullString `db:"contract_name"`
	ContractVersion sql.NullInt64  `db:"contract_version"`
	Label           sql.NullString `db:"label"`
	OwnerKind       string         `db:"owner_kind"`
	OwnerID         string         `db:"owner_id"`
	ServiceName     sql.NullString `db:"service_name"`
	Status          string         `db:"status"`
	Error           sql.NullString `db:"error"`
	EndReason       sql.NullString `db:"end_reason"`
	LastHash        string         `db:"last_hash"`
	StepCount       int            `db:"step_count"`
	Tags            string         `db:"tags"`
	CreatedAt       time.Time      `db:"created_at"`
	UpdatedAt       time.Time      `db:"updated_at"`
	CompletedAt     sql.NullTime   `db:"completed_at"`
	// TraceRootEnded: not read by the group-committed appends (batch.go),
	// which never change it.
	TraceRootEnded sql.NullTime `db:"trace_root_ended_at"`
	// TraceStarted is read by the appends too: a trace thread's duration
	// runs from it (domain.Thread.StartedAt).
	TraceStarted sql.NullTime `db:"trace_started_at"`
	healthCols
}

// healthCols are the health columns of a thread row (see ports.ThreadRecord.Health).
type healthCols struct {
	FailedSteps   int            `db:"failed_steps"`
	Critical      int            `db:"critical_issues"`
	Major         int            `db:"major_issues"`
	Warnings      int            `db:"warning_issues"`
	IssueStep     sql.NullString `db:"first_issue_step"`
	IssueType     sql.NullString `db:"first_issue_type"`
	IssueMessage  sql.NullString `db:"first_issue_message"`
	IssueSeverity sql.NullString `db:"first_issue_severity"`
	LastActivity  sql.NullTime   `db:"last_activity_at"`
}

func (c healthCols) health() domain.ThreadHealth {
	h := domain.ThreadHealth{FailedSteps: c.FailedSteps, Critical: c.Critical, Major: c.Major, Warnings: c.Warnings}
	if c.IssueType.Valid {
		h.FirstIssue = &domain.HealthIssue{StepName: c.IssueStep.String, Type: c.IssueType.String,
			Message: c.IssueMessage.String, Severity: domain.Severity(c.IssueSeverity.String)}
	}
	if c.LastActivity.Valid {
		h.LastActivityAt = c.LastActivity.Time.UTC()
	}
	return h
}

const healthColNames = `failed_steps, critical_issues, major_issues, warning_issues, first_issue_step, first_issue_type,
 first_issue_message, first_issue_severity, last_activity_at`

const threadCols = `id, contract_id, contract_name, contract_version, label, owner_kind, owner_id, service_name,
 status, error, end_reason, last_hash, step_count, CAST(tags AS TEXT) AS tags, created_at, updated_at, completed_at,
 trace_root_ended_at, trace_started_at, ` + healthColNames

// healthValues are the values of the health columns written with a thread
// row, in this order: health, failed_steps, critical_issues, major_issues,
// warning_issues, first_issue_step, first_issue_type, first_issue_message,
// first_issue_severity, last_activity_at, duration_ms.
func healthValues(t domain.Thread) []any {
	h := t.Health()
	var step, typ, msg, sev any
	if is := h.FirstIssue; is != nil {
		step, typ, msg, sev = is.StepName, is.Type, is.Message, nullStr(string(is.Severity))
	}
	var last any
	if !h.LastActivityAt.IsZero() {
		last = sqldb.Time(h.LastActivityAt)
	}
	return []any{string(h.Status(string(t.Status))), h.FailedSteps, h.Critical, h.Major, h.Warnings, step, typ, msg, sev, last,
		h.Duration(t.StartedAt(), t.CompletedAt).Milliseconds()}
}

func (r threadRow) record() domain.Thread {
	t := domain.Thread{
		ID: r.ID, ContractName: r.ContractName.String,
		ContractVersion: int(r.ContractVersion.Int64), Label: r.Label.String, OwnerKind: r.OwnerKind,
		OwnerID: r.OwnerID, ServiceName: r.ServiceName.String, Status: domain.ThreadStatus(r.Status), Error: r.Error.String,
		EndReason: r.EndReason.String, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		CompletedAt: sqldb.FromNullTime(r.CompletedAt),
	}
	t.RestoreHealth(r.healthCols.health())
	_ = json.Unmarshal([]byte(r.Tags), &t.Tags)
	t.RestoreHead(r.LastHash, r.StepCount)
	t.RestoreTraceRootEnded(sqldb.FromNullTime(r.TraceRootEnded))
	t.RestoreTraceStarted(sqldb.FromNullTime(r.TraceStarted))
	return t
}

// CreateThread inserts the thread, its refs and its parties.
func (s *Store) CreateThread(ctx context.Context, t domain.Thread, refs map[string]string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error { return s.insertThread(ctx, tx, t, refs) })
}

func (s *Store) insertThread(ctx context.Context, tx *sqlx.Tx, t domain.Thread, refs map[string]string) error {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	var cv any
	if t.ContractVersion > 0 {
		cv = t.ContractVersion
		// The version may have been deleted since it was read (another
		// replica, a cache): hold it until this thread is committed, so a
		// deletion either sees the thread or happened before it and
		// refuses it (contractstore.DeleteContractVersion locks the row).
		var one int
		err := tx.GetContext(ctx, &one, s.q(`SELECT 1 FROM contract_versions WHERE name = ? AND version = ?`+s.db.ForKeyShare()),
			t.ContractName, t.ContractVersion)
		if errors.Is(err, sql.ErrNoRows) {
			return sqldb.CallerError(domain.NotFound("contract " + t.ContractName + ":" + strconv.Itoa(t.ContractVersion)))
		}
		if err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO threads (id, contract_id, contract_name, contract_version, label,
 owner_kind, owner_id, service_name, status, last_hash, step_count, tags, created_at, updated_at, health_version)
 VALUES (?,?,?,?,?,?,?,?,?,'',0,?,?,?,1)`),
		t.ID, nullStr(t.ContractName), nullStr(t.ContractName), cv, nullStr(t.Label), t.OwnerKind, t.OwnerID,
		nullStr(t.ServiceName), t.Status, jsonText(tags), sqldb.Time(t.CreatedAt), sqldb.Time(t.CreatedAt)); err != nil {
		return err
	}
	if err := s.upsertRefs(ctx, tx, t.ID, refs); err != nil {
		return err
	}
	for _, p := range t.Parties {
		if err := s.grant(ctx, tx, t.ID, p); err != nil {
			return err
		}
	}
	return nil
}

// GetThread returns one thread with all its parties.
func (s *Store) GetThread(ctx context.Context, id string) (domain.Thread, error) {
	var r threadRow
	err := s.db.GetContext(ctx, &r, s.q(`SELECT `+threadCols+` FROM threads WHERE id = ?`), id)
	if err != nil {
		return domain.Thread{}, sqldb.NotFoundAs(err, "thread")
	}
	t := r.record()
	if t.Parties, err = s.parties(ctx, s.db, id); err != nil {
		return domain.Thread{}, sqldb.TranslateError(err)
	}
	return t, nil
}

// lockThread locks a thread row and loads the thread with all its parties.
func (s *Store) lockThread(ctx context.Context, tx *sqlx.Tx, id string) (domain.Thread, error) {
	var r threadRow
	// CAST in the select list is not allowed with FOR UPDATE on some planners;
	// it is on PostgreSQL, which is what matters here.
	err := tx.GetContext(ctx, &r, s.q(`SELECT `+threadCols+` FROM threads WHERE id = ?`+s.db.ForUpdate()), id)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Thread{}, sqldb.CallerError(domain.NotFound("thread"))
	}
	if err != nil {
		return domain.Thread{}, err
	}
	t := r.record()
	t.Parties, err = s.parties(ctx, tx, id)
	return t, err
}

type partyRow struct {
	PrincipalKind string       `db:"principal_kind"`
	PrincipalID   string       `db:"principal_id"`
	Role          string       `db:"role"`
	AccessLevel   string       `db:"access_level"`
	GrantedBy     string       `db:"granted_by"`
	GrantedAt     time.Time    `db:"granted_at"`
	ExpiresAt     sql.NullTime `db:"expires_at"`
}

func (r partyRow) party() domain.Party {
	return domain.Party{PrincipalKind: r.PrincipalKind, PrincipalID: r.PrincipalID, Role: r.Role,
		Level: domain.AccessLevel(r.AccessLevel), GrantedBy: r.GrantedBy, GrantedAt: r.GrantedAt.UTC(),
		ExpiresAt: sqldb.FromNullTime(r.ExpiresAt)}
}

// parties loads every party of a thread.
func (s *Store) parties(ctx context.Context, q sqlx.QueryerContext, threadID string) ([]domain.Party, error) {
	var rows []partyRow
	if err := sqlx.SelectContext(ctx, q, &rows, s.q(`SELECT principal_kind, principal_id, role, access_level, granted_by,
 granted_at, expires_at FROM thread_access WHERE thread_id = ? ORDER BY granted_at, principal_id, role`), threadID); err != nil {
		return nil, err
	}
	out := make([]domain.Party, len(rows))
	for i, r := range rows {
		out[i] = r.party()
	}
	return out, nil
}

type stateRow struct {
	StepName      string         `db:"step_name"`
	Key           string         `db:"idempotency_key"`
	Status        string         `db:"status"`
	RetryCount    int            `db:"retry_count"`
	LatestStepID  string         `db:"latest_step_id"`
	LatestSeq     int            `db:"latest_seq"`
	InvocationID  sql.NullString `db:"invocation_id"`
	PreviousStep  sql.NullString `db:"previous_step"`
	Actor         string         `db:"actor"`
	ActorService  string         `db:"actor_service"`
	LatestContext string         `db:"latest_context"`
	FirstSeenAt   time.Time      `db:"first_seen_at"`
	LastUpdatedAt time.Time      `db:"last_updated_at"`
	StartedAt     sql.NullTime   `db:"started_at"`
	FinishedAt    sql.NullTime   `db:"finished_at"`
}

// AppendStep: see ports.ThreadStore.
//
// Appends are group-committed: concurrent appends (from any connection) are
// queued to a committer per shard of threads, which runs whatever is waiting
// in one transaction; every caller gets its result only after that commit.
// Under no load a batch is a single append, so nothing waits for a timer.
func (s *Store) AppendStep(ctx context.Context, threadID string, writer ports.AppendWriter, stepName, key string, withStates bool,
	plan func(ports.StepTx) (ports.StepPlan, error)) (ports.StepPlan, error) {
	j := &appendJob{ctx: ctx, threadID: threadID, writer: writer, stepName: stepName, key: key,
		withStates: withStates, plan: plan, done: make(chan struct{})}
	s.batchOnce.Do(s.startCommitters)
	h := fnv.New32a()
	h.Write([]byte(threadID))
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ports.StepPlan{}, sqldb.ErrUnavailable
	}
	select {
	case s.shards[int(h.Sum32())%len(s.shards)] <- j:
		s.closeMu.RUnlock()
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return ports.StepPlan{}, sqldb.TranslateError(ctx.Err())
	}
	// Once queued, the job may be committed: wait for the outcome whatever
	// happens to ctx, so success is never reported for an uncommitted step
	// nor an error for a committed one.
	<-j.done
	return j.out, j.err
}

type appendJob struct {
	ctx                     context.Context
	threadID, stepName, key string
	writer                  ports.AppendWriter
	withStates              bool
	plan                    func(ports.StepTx) (ports.StepPlan, error)
	out                     ports.StepPlan
	err                     error
	done                    chan struct{}
}

// maxBatch bounds one group commit (and so the latency it adds to its first job).
const maxBatch = 32

func (s *Store) startCommitters() {
	n := 1 // SQLite has one writer connection
	if s.db.Dialect == sqldb.Postgres {
		// Each committer holds one pooled connection while committing. Fewer
		// committers make larger batches; on 2 cores, 2 of them acknowledged
		// 25–35 % more steps than 8 did (and halved p99), so scale with the
		// cores rather than fixing a number.
		n = min(8, max(2, runtime.GOMAXPROCS(0)))
	}
	s.shards = make([]chan *appendJob, n)
	for i := range s.shards {
		s.shards[i] = make(chan *appendJob, 4*maxBatch)
		s.committers.Add(1)
		go func() { defer s.committers.Done(); s.committer(s.shards[i]) }()
	}
}

// Close stops the group-commit goroutines: appends after it are refused
// (unavailable), those already queued are committed first. Call it before
// the database closes.
func (s *Store) Close() error {
	s.closeMu.Lock()
	already := s.closed
	s.closed = true
	s.closeMu.Unlock()
	if already {
		return nil
	}
	started := true
	s.batchOnce.Do(func() { started = false }) // never started: nothing to stop
	if started {
		for _, ch := range s.shards {
			close(ch)
		}
		s.committers.Wait()
	}
	return nil
}

func (s *Store) committer(ch chan *appendJob) {
	for j := range ch {
		batch := []*appendJob{j}
	drain:
		for len(batch) < maxBatch {
			select {
			case j2 := <-ch:
				batch = append(batch, j2)
			default:
				break drain
			}
		}
		s.runBatch(batch)
	}
}

// states loads the thread's step states by latest attempt; with a step name
// only that identity's.
func (s *Store) states(ctx context.Context, q sqlx.QueryerContext, threadID, stepName, key string) ([]ports.StepState, error) {
	var rows []stateRow
	query := `SELECT s.step_name, s.idempotency_key, s.status, s.retry_count,
 s.latest_step_id, a.seq AS latest_seq, s.invocation_id, s.previous_step, s.actor, s.actor_service,
 CAST(a.context AS TEXT) AS latest_context, s.first_seen_at, s.last_updated_at, s.started_at, s.finished_at
 FROM thread_step_states s JOIN thread_activities a ON a.id = s.latest_step_id WHERE s.thread_id = ?`
	args := []any{threadID}
	if stepName != "" {
		query += ` AND s.step_name = ? AND s.idempotency_key = ?`
		args = append(args, stepName, key)
	}
	var err error
	if tx, ok := q.(*sqlx.Tx); ok {
		err = s.selectTx(ctx, tx, &rows, query+` ORDER BY a.seq`, args...)
	} else {
		err = sqlx.SelectContext(ctx, q, &rows, s.q(query+` ORDER BY a.seq`), args...)
	}
	if err != nil {
		return nil, err
	}
	out := make([]ports.StepState, 0, len(rows))
	for _, r := range rows {
		st := ports.StepState{StepName: r.StepName, IdempotencyKey: r.Key, Status: r.Status, RetryCount: r.RetryCount,
			LatestStepID: r.LatestStepID, LatestSeq: r.LatestSeq, InvocationID: r.InvocationID.String, PreviousStep: r.PreviousStep.String, Actor: r.Actor, ActorService: r.ActorService,
			FirstSeenAt: r.FirstSeenAt.UTC(), LastUpdatedAt: r.LastUpdatedAt.UTC(), StartedAt: sqldb.FromNullTime(r.StartedAt),
			FinishedAt: sqldb.FromNullTime(r.FinishedAt)}
		_ = json.Unmarshal([]byte(r.LatestContext), &st.LatestContext)
		out = append(out, st)
	}
	return out, nil
}

// ListStepStates returns the thread's step states by latest attempt.
func (s *Store) ListStepStates(ctx context.Context, threadID string) ([]ports.StepState, error) {
	st, err := s.states(ctx, s.db, threadID, "", "")
	return st, sqldb.TranslateError(err)
}

func (s *Store) writeThread(ctx context.Context, tx *sqlx.Tx, t domain.Thread) error {
	// created_at never changes: a trace's earliest span moves
	// trace_started_at (Thread.ObserveTrace).
	args := []any{string(t.Status), nullStr(t.Error), nullStr(t.EndReason), t.LastHash(),
		t.StepCount(), sqldb.Time(t.UpdatedAt), sqldb.TimePtr(t.CompletedAt), sqldb.TimePtr(t.TraceRootEndedAt()),
		sqldb.TimePtr(t.TraceStartedAt())}
	args = append(append(args, healthValues(t)...), t.ID)
	return s.exec(ctx, tx, `UPDATE threads SET status = ?, error = ?, end_reason = ?, last_hash = ?, step_count = ?,
 updated_at = ?, completed_at = ?, trace_root_ended_at = ?, trace_started_at = ?, `+healthSet+` WHERE id = ?`, args...)
}

// threadPart is an append's thread row update (end_reason never changes there).
func threadPart(t domain.Thread) part {
	args := []any{string(t.Status), nullStr(t.Error), t.LastHash(), t.StepCount(), sqldb.Time(t.UpdatedAt), sqldb.TimePtr(t.CompletedAt)}
	args = append(append(args, healthValues(t)...), t.ID)
	return part{`UPDATE threads SET status = ?, error = ?, last_hash = ?, step_count = ?,
 updated_at = ?, completed_at = ?, ` + healthSet + ` WHERE id = ?`, args}
}

const healthSet = `health = ?, failed_steps = ?, critical_issues = ?, major_issues = ?, warning_issues = ?,
 first_issue_step = ?, first_issue_type = ?, first_issue_message = ?, first_issue_severity = ?, last_activity_at = ?,
 duration_ms = ?, health_version = 1`

func (s *Store) insertNotifications(ctx context.Context, tx *sqlx.Tx, ns []ports.NotificationRecord) error {
	parts, err := s.notificationParts(ctx, tx, ns)
	if err != nil {
		return err
	}
	return s.execParts(ctx, tx, parts)
}

func (s *Store) notificationParts(ctx context.Context, tx *sqlx.Tx, ns []ports.NotificationRecord) ([]part, error) {
	if len(ns) == 0 {
		return nil, nil
	}
	// PostgreSQL numbers seq itself (BIGSERIAL); SQLite's column is a plain
	// unique integer, and the IMMEDIATE transaction makes MAX+1 safe.
	row, cols, next := `(?,DEFAULT,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, 17, int64(0)
	if s.db.Dialect == sqldb.SQLite {
		row, cols = `(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, 18
		if err := s.get(ctx, tx, &next, `SELECT COALESCE(MAX(seq),0) FROM thread_notifications`); err != nil {
			return nil, err
		}
	}
	rows := make([][]any, 0, len(ns))
	for _, n := range ns {
		r := make([]any, 0, cols)
		r = append(r, n.ID)
		if cols == 18 {
			next++
			r = append(r, next)
		}
		rows = append(rows, append(r, n.ThreadID, n.StepID, n.StepName, n.IdempotencyKey, n.ContractName, n.OwnerID,
			n.Source, n.NotificationType, n.StepStatus, n.ValidationStatus, n.ViolationType, n.Severity, n.Message,
			jsonText(n.Details), sqldb.Time(n.CreatedAt), n.TraceParent))
	}
	parts := rowsParts(`INSERT INTO thread_notifications (id, seq, thread_id, step_id, step_name,
 idempotency_key, contract_name, owner_id, source, notification_type, step_status, validation_status, violation_type,
 severity, message, details, created_at, trace_parent) VALUES `, row, "", cols, rows)
	return append(parts, alertParts(ns)...), nil
}

// alertParts fan the alert notifications out to the webhook outbox, in the
// notification's transaction: one delivery per enabled webhook subscribed
// to the event (and, for validation.violated, whose minimum severity the
// issue reaches). The delivery id is derived from the notification and the
// webhook, so it is stable and unique.
func alertParts(ns []ports.NotificationRecord) []part {
	var out []part
	for _, n := range ns {
		a, ok := ports.AlertOf(n)
		if !ok {
			continue
		}
		at := sqldb.Time(n.CreatedAt)
		out = append(out, part{`INSERT INTO webhook_deliveries (id, webhook_id, notification_id, event_type, thread_id,
 payload, next_attempt_at, created_at) SELECT CAST(? AS TEXT) || w.id, w.id, ?, ?, ?, ?, ?, ? FROM webhooks w
 WHERE w.enabled = 1 AND (w.event_mask & CAST(? AS INTEGER)) <> 0 AND w.min_rank >= CAST(? AS INTEGER)`,
			[]any{"msg_" + n.ID + "_", n.ID, string(a.Event), n.ThreadID, string(a.Payload), at, at, a.Event.Bit(), a.Rank}})
	}
	return out
}

// UpdateThread: see ports.ThreadStore.
func (s *Store) UpdateThread(ctx context.Context, threadID string, fn ports.ThreadUpdate) (domain.Thread, error) {
	var out domain.Thread
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		th, err := s.lockThread(ctx, tx, threadID)
		if err != nil {
			return err
		}
		before := append([]domain.Party(nil), th.Parties...)
		eff, err := fn(&th)
		if err != nil {
			return sqldb.CallerError(err)
		}
		if err := s.writeThread(ctx, tx, th); err != nil {
			return err
		}
		for _, p := range th.Parties {
			if !hasParty(before, p) {
				if err := s.grant(ctx, tx, th.ID, p); err != nil {
					return err
				}
			}
		}
		if len(eff.Refs) > 0 {
			if err := s.upsertRefs(ctx, tx, th.ID, eff.Refs); err != nil {
				return err
			}
		}
		out = th
		return s.insertNotifications(ctx, tx, eff.Notifications)
	})
	return out, err
}

// hasParty reports whether ps holds p unchanged.
func hasParty(ps []domain.Party, p domain.Party) bool {
	for _, q := range ps {
		if q.PrincipalID == p.PrincipalID && q.Role == p.Role {
			return q.Level == p.Level && q.PrincipalKind == p.PrincipalKind && q.GrantedBy == p.GrantedBy &&
				q.GrantedAt.Equal(p.GrantedAt) && equalTimes(q.ExpiresAt, p.ExpiresAt)
		}
	}
	return false
}

func equalTimes(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func (s *Store) upsertRefs(ctx context.Context, tx *sqlx.Tx, threadID string, refs map[string]string) error {
	keys := make([]string, 0, len(refs))
	for k := range refs {
		keys = append(keys, k)
	}
	sort.Strings(keys) // stable lock order between concurrent upserts
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES (?,?,?)
 ON CONFLICT (thread_id, ref_key) DO UPDATE SET ref_value = excluded.ref_value`), threadID, k, refs[k]); err != nil {
			return err
		}
	}
	return nil
}

// FindThreadByRef returns the oldest thread carrying ref key=value.
func (s *Store) FindThreadByRef(ctx context.Context, key, value string) (string, error) {
	var id string
	err := s.db.GetContext(ctx, &id, s.q(`SELECT t.id FROM thread_refs r JOIN threads t ON t.id = r.thread_id
 WHERE r.ref_key = ? AND r.ref_value = ? ORDER BY t.created_at, t.id LIMIT 1`), key, value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domain.NotFound("thread")
	}
	return id, sqldb.TranslateError(err)
}

func (s *Store) grant(ctx context.Context, tx *sqlx.Tx, threadID string, p domain.Party) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO thread_access (thread_id, principal_kind, principal_id, role,
 access_level, granted_by, granted_at, expires_at) VALUES (?,?,?,?,?,?,?,?)
 ON CONFLICT (thread_id, principal_id, role) DO UPDATE SET principal_kind = excluded.principal_kind,
 access_level = excluded.access_level, granted_by = excluded.granted_by, granted_at = excluded.granted_at,
 expires_at = excluded.expires_at`), threadID, p.PrincipalKind, p.PrincipalID, p.Role, string(p.Level), p.GrantedBy,
		sqldb.Time(p.GrantedAt), sqldb.TimePtr(p.ExpiresAt))
	return err
}

// ListActivities returns the thread's activities in chain order.
func (s *Store) ListActivities(ctx context.Context, threadID string) ([]ports.Activity, error) {
	var rows []activityRow
	if err := s.db.SelectContext(ctx, &rows, s.q(`SELECT id, thread_id, seq, step_name, idempotency_key, status, attempt, actor,
 actor_service, CAST(context AS TEXT) AS context, CAST(metadata AS TEXT) AS metadata, started_at, finished_at,
 recorded_at, hash, prev_hash FROM thread_activities WHERE thread_id = ? ORDER BY seq`), threadID); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.Activity, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.activity())
	}
	return out, s.attachSubSteps(ctx, threadID, out)
}

// activityRow is a thread_activities row as ListActivities reads it.
type activityRow struct {
	ID           string       `db:"id"`
	ThreadID     string       `db:"thread_id"`
	Seq          int          `db:"seq"`
	StepName     string       `db:"step_name"`
	Key          string       `db:"idempotency_key"`
	Status       string       `db:"status"`
	Attempt      int          `db:"attempt"`
	Actor        string       `db:"actor"`
	ActorService string       `db:"actor_service"`
	Context      string       `db:"context"`
	Metadata     string       `db:"metadata"`
	StartedAt    sql.NullTime `db:"started_at"`
	FinishedAt   sql.NullTime `db:"finished_at"`
	RecordedAt   time.Time    `db:"recorded_at"`
	Hash         string       `db:"hash"`
	PrevHash     string       `db:"prev_hash"`
}

func (r activityRow) activity() ports.Activity {
	a := ports.Activity{ID: r.ID, ThreadID: r.ThreadID, Seq: r.Seq, StepName: r.StepName, IdempotencyKey: r.Key,
		Status: r.Status, Attempt: r.Attempt, Actor: r.Actor, ActorService: r.ActorService,
		StartedAt: sqldb.FromNullTime(r.StartedAt), FinishedAt: sqldb.FromNullTime(r.FinishedAt), RecordedAt: r.RecordedAt.UTC(),
		Hash: r.Hash, PrevHash: r.PrevHash}
	_ = json.Unmarshal([]byte(r.Context), &a.Context)
	_ = json.Unmarshal([]byte(r.Metadata), &a.Metadata)
	a.ContentHash = domain.ContentHash(a.Context, a.Metadata)
	return a
}

// subStepRow is a step_substeps row.
type subStepRow struct {
	ID         string    `db:"id"`
	StepID     string    `db:"step_id"`
	Name       string    `db:"name"`
	Status     string    `db:"status"`
	Payload    string    `db:"payload"`
	RecordedAt time.Time `db:"recorded_at"`
}

func (r subStepRow) subStep() ports.SubStep {
	ss := ports.SubStep{ID: r.ID, StepID: r.StepID, Name: r.Name, Status: r.Status, RecordedAt: r.RecordedAt.UTC()}
	_ = json.Unmarshal([]byte(r.Payload), &ss.Payload)
	return ss
}

// attachSubSteps fills each activity's SubSteps, in the order sent.
func (s *Store) attachSubSteps(ctx context.Context, threadID string, acts []ports.Activity) error {
	var rows []subStepRow
	if err := s.db.SelectContext(ctx, &rows, s.q(`SELECT id, step_id, name, status, CAST(payload AS TEXT) AS payload,
 recorded_at FROM step_substeps WHERE thread_id = ? ORDER BY position, recorded_at, id`), threadID); err != nil {
		return sqldb.TranslateError(err)
	}
	at := make(map[string]int, len(acts))
	for i, a := range acts {
		at[a.ID] = i
	}
	for _, r := range rows {
		if i, ok := at[r.StepID]; ok {
			acts[i].SubSteps = append(acts[i].SubSteps, r.subStep())
		}
	}
	return nil
}

// HasActivity reports whether any attempt of (thread, step, key) exists.
// It probes thread_step_states' primary key (thread_id, step_name,
// idempotency_key), one row, instead of thread_activities (whose only
// thread index since 00085 is (thread_id, seq): every attempt of the thread
// would be read, O(n²) over a trace's spans): a state row exists exactly
// when an attempt with its identity does. writePlans writes every attempt
// with the state of the same thread, step and key in one transaction;
// refused steps write neither (step_refusals); sub-steps are neither;
// nothing deletes either table's rows but DeleteThreads, which deletes a
// thread's rows of both.
func (s *Store) HasActivity(ctx context.Context, threadID, stepName, key string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.q(hasActivityQuery), threadID, stepName, key)
	return n > 0, sqldb.TranslateError(err)
}

const hasActivityQuery = `SELECT COUNT(*) FROM thread_step_states WHERE thread_id = ? AND step_name = ?
 AND idempotency_key = ?`
