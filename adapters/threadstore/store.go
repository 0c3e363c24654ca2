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
	"sort"
	"sync"
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
}

var _ ports.ThreadStore = (*Store)(nil)

// New returns a store on an open, migrated database.
func New(db *sqldb.DB) *Store {
	return &Store{db: db, stmts: map[string]*sqlx.Stmt{}, pending: map[string]bool{}}
}

// prepared returns the statement for query inside tx, or nil (and marks the
// query for preparation after the transaction).
func (s *Store) prepared(ctx context.Context, tx *sqlx.Tx, query string) *sqlx.Stmt {
	s.stmtMu.Lock()
	st := s.stmts[query]
	if st == nil {
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

const maxTxAttempts = 5

// callerError carries an error from a caller's closure through db.Tx
// unchanged (it must not be translated as a driver error).
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }
func (e callerError) Unwrap() error { return e.err }

func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = s.db.Tx(ctx, fn)
		s.preparePending(ctx)
		var ce callerError
		if errors.As(err, &ce) {
			return ce.err
		}
		if err == nil || !sqldb.IsSerializationFailure(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
	return sqldb.TranslateError(err)
}

func (s *Store) q(query string) string { return s.db.Rebind(query) }

// ts: UTC, microseconds (PostgreSQL's precision) so both dialects return the
// same value — the hash chain hashes these times.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func fromNull(nt sql.NullTime) *time.Time {
	if !nt.Valid {
		return nil
	}
	t := nt.Time.UTC()
	return &t
}

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
	LastHash        string         `db:"last_hash"`
	StepCount       int            `db:"step_count"`
	Tags            string         `db:"tags"`
	CreatedAt       time.Time      `db:"created_at"`
	UpdatedAt       time.Time      `db:"updated_at"`
	CompletedAt     sql.NullTime   `db:"completed_at"`
}

const threadCols = `id, contract_id, contract_name, contract_version, label, owner_kind, owner_id, service_name,
 status, error, last_hash, step_count, CAST(tags AS TEXT) AS tags, created_at, updated_at, completed_at`

func (r threadRow) record() ports.ThreadRecord {
	t := ports.ThreadRecord{
		ID: r.ID, ContractID: r.ContractID.String, ContractName: r.ContractName.String,
		ContractVersion: int(r.ContractVersion.Int64), Label: r.Label.String, OwnerKind: r.OwnerKind,
		OwnerID: r.OwnerID, ServiceName: r.ServiceName.String, Status: r.Status, Error: r.Error.String,
		LastHash: r.LastHash, StepCount: r.StepCount, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		CompletedAt: fromNull(r.CompletedAt),
	}
	_ = json.Unmarshal([]byte(r.Tags), &t.Tags)
	return t
}

// CreateThread inserts the thread, its refs and the owner's access row.
func (s *Store) CreateThread(ctx context.Context, t ports.ThreadRecord, refs map[string]string, owner ports.ThreadAccess) error {
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	var cv any
	if t.ContractVersion > 0 {
		cv = t.ContractVersion
	}
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO threads (id, contract_id, contract_name, contract_version, label,
 owner_kind, owner_id, service_name, status, last_hash, step_count, tags, created_at, updated_at)
 VALUES (?,?,?,?,?,?,?,?,?,'',0,?,?,?)`),
			t.ID, nullStr(t.ContractID), nullStr(t.ContractName), cv, nullStr(t.Label), t.OwnerKind, t.OwnerID,
			nullStr(t.ServiceName), t.Status, jsonText(tags), ts(t.CreatedAt), ts(t.CreatedAt)); err != nil {
			return err
		}
		if err := s.upsertRefs(ctx, tx, t.ID, refs); err != nil {
			return err
		}
		return s.grant(ctx, tx, owner)
	})
}

// GetThread returns one thread row.
func (s *Store) GetThread(ctx context.Context, id string) (ports.ThreadRecord, error) {
	var r threadRow
	err := s.db.GetContext(ctx, &r, s.q(`SELECT `+threadCols+` FROM threads WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.ThreadRecord{}, domain.NotFound("thread")
	}
	if err != nil {
		return ports.ThreadRecord{}, sqldb.TranslateError(err)
	}
	return r.record(), nil
}

// lockForStep locks the thread row and, in the same round trip, reads the
// latest attempt's step name, the writer's access row and the current state
// of the step identity being written.
func (s *Store) lockForStep(ctx context.Context, tx *sqlx.Tx, id, principalID, stepName, key string) (ports.StepTx, error) {
	var r struct {
		threadRow
		LastStep    string         `db:"last_step"`
		AccessLevel sql.NullString `db:"access_level"`
		AccessRole  sql.NullString `db:"access_role"`
		CurStatus   sql.NullString `db:"cur_status"`
		CurRetry    sql.NullInt64  `db:"cur_retry"`
		CurStepID   sql.NullString `db:"cur_step_id"`
		CurPrev     sql.NullString `db:"cur_prev"`
		CurActor    sql.NullString `db:"cur_actor"`
		CurService  sql.NullString `db:"cur_service"`
		CurContext  sql.NullString `db:"cur_context"`
		CurFirst    sql.NullTime   `db:"cur_first"`
		CurUpdated  sql.NullTime   `db:"cur_updated"`
		CurStarted  sql.NullTime   `db:"cur_started"`
		CurFinished sql.NullTime   `db:"cur_finished"`
	}
	lock := ""
	if s.db.Dialect == sqldb.Postgres {
		lock = " FOR UPDATE OF t"
	}
	err := s.get(ctx, tx, &r, (`SELECT t.id, t.contract_id, t.contract_name, t.contract_version, t.label,
 t.owner_kind, t.owner_id, t.service_name, t.status, t.error, t.last_hash, t.step_count, CAST(t.tags AS TEXT) AS tags,
 t.created_at, t.updated_at, t.completed_at,
 COALESCE((SELECT a.step_name FROM thread_activities a WHERE a.thread_id = t.id AND a.seq = t.step_count), '') AS last_step,
 (SELECT x.access_level FROM thread_access x WHERE x.thread_id = t.id AND x.principal_id = ?) AS access_level,
 (SELECT x.role FROM thread_access x WHERE x.thread_id = t.id AND x.principal_id = ?) AS access_role,
 s.status AS cur_status, s.retry_count AS cur_retry, s.latest_step_id AS cur_step_id, s.previous_step AS cur_prev,
 s.actor AS cur_actor, s.actor_service AS cur_service, CAST(s.latest_context AS TEXT) AS cur_context,
 s.first_seen_at AS cur_first, s.last_updated_at AS cur_updated, s.started_at AS cur_started, s.finished_at AS cur_finished
 FROM threads t LEFT JOIN thread_step_states s ON s.thread_id = t.id AND s.step_name = ? AND s.idempotency_key = ?
 WHERE t.id = ?` + lock), principalID, principalID, stepName, key, id)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.StepTx{}, callerError{domain.NotFound("thread")}
	}
	if err != nil {
		return ports.StepTx{}, err
	}
	v := ports.StepTx{Thread: r.threadRow.record(), LastStepName: r.LastStep}
	if r.AccessLevel.Valid {
		v.Access = &ports.ThreadAccess{ThreadID: id, PrincipalID: principalID, AccessLevel: r.AccessLevel.String, Role: r.AccessRole.String}
	}
	if r.CurStatus.Valid {
		st := ports.StepState{StepName: stepName, IdempotencyKey: key, Status: r.CurStatus.String,
			RetryCount: int(r.CurRetry.Int64), LatestStepID: r.CurStepID.String, PreviousStep: r.CurPrev.String,
			Actor: r.CurActor.String, ActorService: r.CurService.String, FirstSeenAt: r.CurFirst.Time.UTC(),
			LastUpdatedAt: r.CurUpdated.Time.UTC(), StartedAt: fromNull(r.CurStarted), FinishedAt: fromNull(r.CurFinished)}
		_ = json.Unmarshal([]byte(r.CurContext.String), &st.LatestContext)
		v.Current = &st
	}
	return v, nil
}

func (s *Store) lockThread(ctx context.Context, tx *sqlx.Tx, id string) (ports.ThreadRecord, error) {
	var r threadRow
	// CAST in the select list is not allowed with FOR UPDATE on some planners;
	// it is on PostgreSQL, which is what matters here.
	err := tx.GetContext(ctx, &r, s.q(`SELECT `+threadCols+` FROM threads WHERE id = ?`+s.db.ForUpdate()), id)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.ThreadRecord{}, callerError{domain.NotFound("thread")}
	}
	return r.record(), err
}

type stateRow struct {
	StepName      string         `db:"step_name"`
	Key           string         `db:"idempotency_key"`
	Status        string         `db:"status"`
	RetryCount    int            `db:"retry_count"`
	LatestStepID  string         `db:"latest_step_id"`
	LatestSeq     int            `db:"latest_seq"`
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
func (s *Store) AppendStep(ctx context.Context, threadID, principalID, stepName, key string, withStates bool,
	plan func(ports.StepTx) (ports.StepPlan, error)) (ports.StepPlan, error) {
	j := &appendJob{ctx: ctx, threadID: threadID, principalID: principalID, stepName: stepName, key: key,
		withStates: withStates, plan: plan, done: make(chan struct{})}
	s.batchOnce.Do(s.startCommitters)
	h := fnv.New32a()
	h.Write([]byte(threadID))
	select {
	case s.shards[int(h.Sum32())%len(s.shards)] <- j:
	case <-ctx.Done():
		return ports.StepPlan{}, sqldb.TranslateError(ctx.Err())
	}
	// Once queued, the job may be committed: wait for the outcome whatever
	// happens to ctx, so success is never reported for an uncommitted step
	// nor an error for a committed one.
	<-j.done
	return j.out, j.err
}

type appendJob struct {
	ctx                                  context.Context
	threadID, principalID, stepName, key string
	withStates                           bool
	plan                                 func(ports.StepTx) (ports.StepPlan, error)
	out                                  ports.StepPlan
	err                                  error
	done                                 chan struct{}
}

// maxBatch bounds one group commit (and so the latency it adds to its first job).
const maxBatch = 32

func (s *Store) startCommitters() {
	n := 1 // SQLite has one writer connection
	if s.db.Dialect == sqldb.Postgres {
		n = 8 // each holds one pooled connection while committing
	}
	s.shards = make([]chan *appendJob, n)
	for i := range s.shards {
		s.shards[i] = make(chan *appendJob, 4*maxBatch)
		go s.committer(s.shards[i])
	}
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

func (s *Store) runBatch(batch []*appendJob) {
	defer func() {
		for _, j := range batch {
			close(j.done)
		}
	}()
	if len(batch) > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		outs := make([]ports.StepPlan, len(batch))
		errs := make([]error, len(batch))
		err := s.db.Tx(ctx, func(tx *sqlx.Tx) error {
			for i, j := range batch {
				p, err := s.appendInTx(j.ctx, tx, j)
				var ce callerError
				if errors.As(err, &ce) {
					errs[i] = ce.err // refused by the caller's rules: nothing of it was written
					continue
				}
				if err != nil {
					return err
				}
				outs[i] = p
			}
			return nil
		})
		cancel()
		s.preparePending(context.Background())
		if err == nil {
			for i, j := range batch {
				j.out, j.err = outs[i], errs[i]
			}
			return
		}
		// The batch rolled back (a conflict, a cancelled caller, a failing
		// statement): redo each append alone so one failure stays its own.
	}
	for _, j := range batch {
		j.out, j.err = s.appendOne(j)
	}
}

func (s *Store) appendOne(j *appendJob) (ports.StepPlan, error) {
	var out ports.StepPlan
	err := s.tx(j.ctx, func(tx *sqlx.Tx) error {
		p, err := s.appendInTx(j.ctx, tx, j)
		out = p
		return err
	})
	return out, err
}

// appendInTx is one append inside a transaction; errors from the caller's
// plan come back as callerError, with nothing written.
func (s *Store) appendInTx(ctx context.Context, tx *sqlx.Tx, j *appendJob) (ports.StepPlan, error) {
	view, err := s.lockForStep(ctx, tx, j.threadID, j.principalID, j.stepName, j.key)
	if err != nil {
		return ports.StepPlan{}, err
	}
	if j.withStates {
		if view.States, err = s.states(ctx, tx, j.threadID, "", ""); err != nil {
			return ports.StepPlan{}, err
		}
		for i := range view.States {
			if view.States[i].StepName == j.stepName && view.States[i].IdempotencyKey == j.key {
				view.Current = &view.States[i]
			}
		}
		if n := len(view.States); n > 0 {
			view.LastStepName = view.States[n-1].StepName
		}
	}
	p, err := j.plan(view)
	if err != nil {
		return ports.StepPlan{}, callerError{err}
	}
	if p.Duplicate {
		return p, nil
	}
	return p, s.writePlan(ctx, tx, j.threadID, p)
}

// states loads the thread's step states by latest attempt; with a step name
// only that identity's.
func (s *Store) states(ctx context.Context, q sqlx.QueryerContext, threadID, stepName, key string) ([]ports.StepState, error) {
	var rows []stateRow
	query := `SELECT s.step_name, s.idempotency_key, s.status, s.retry_count,
 s.latest_step_id, a.seq AS latest_seq, s.previous_step, s.actor, s.actor_service,
 CAST(s.latest_context AS TEXT) AS latest_context, s.first_seen_at, s.last_updated_at, s.started_at, s.finished_at
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
			LatestStepID: r.LatestStepID, LatestSeq: r.LatestSeq, PreviousStep: r.PreviousStep.String, Actor: r.Actor, ActorService: r.ActorService,
			FirstSeenAt: r.FirstSeenAt.UTC(), LastUpdatedAt: r.LastUpdatedAt.UTC(), StartedAt: fromNull(r.StartedAt),
			FinishedAt: fromNull(r.FinishedAt)}
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

func (s *Store) writePlan(ctx context.Context, tx *sqlx.Tx, threadID string, p ports.StepPlan) error {
	a := p.Activity
	if err := s.exec(ctx, tx, (`INSERT INTO thread_activities (id, thread_id, seq, activity_type, step_name,
 idempotency_key, status, attempt, actor, actor_service, context, metadata, started_at, finished_at, recorded_at,
 content_hash, hash, prev_hash) VALUES (?,?,?,'step_recorded',?,?,?,?,?,?,?,?,?,?,?,?,?,?)`),
		a.ID, threadID, a.Seq, a.StepName, a.IdempotencyKey, a.Status, a.Attempt, a.Actor, a.ActorService,
		jsonText(a.Context), jsonText(a.Metadata), tsPtr(a.StartedAt), tsPtr(a.FinishedAt), ts(a.RecordedAt),
		a.ContentHash, a.Hash, a.PrevHash); err != nil {
		return err
	}
	for _, ss := range p.SubSteps {
		if err := s.exec(ctx, tx, (`INSERT INTO step_substeps (id, thread_id, step_id, name, status, payload,
 recorded_at, created_at) VALUES (?,?,?,?,?,?,?,?)`), ss.ID, threadID, a.ID, ss.Name, ss.Status, jsonText(ss.Payload),
			ts(ss.RecordedAt), ts(a.RecordedAt)); err != nil {
			return err
		}
	}
	st := p.State
	if err := s.exec(ctx, tx, (`INSERT INTO thread_step_states (thread_id, step_name, idempotency_key, status,
 retry_count, latest_step_id, previous_step, actor, actor_service, latest_context, first_seen_at, last_updated_at,
 started_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
 ON CONFLICT (thread_id, step_name, idempotency_key) DO UPDATE SET status = excluded.status,
 retry_count = excluded.retry_count, latest_step_id = excluded.latest_step_id, actor = excluded.actor,
 actor_service = excluded.actor_service, latest_context = excluded.latest_context,
 last_updated_at = excluded.last_updated_at, started_at = excluded.started_at, finished_at = excluded.finished_at`),
		threadID, st.StepName, st.IdempotencyKey, st.Status, st.RetryCount, st.LatestStepID, nullStr(st.PreviousStep),
		st.Actor, st.ActorService, jsonText(st.LatestContext), ts(st.FirstSeenAt), ts(st.LastUpdatedAt),
		tsPtr(st.StartedAt), tsPtr(st.FinishedAt)); err != nil {
		return err
	}
	if v := p.Validation; v != nil {
		issues := v.Issues
		if issues == nil {
			issues = []any{}
		}
		if err := s.exec(ctx, tx, (`INSERT INTO thread_validations (id, thread_id, step_id, step_name,
 idempotency_key, overall_status, issues, critical_count, warning_count, minor_count, info_count, created_at)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`), v.ID, threadID, v.StepID, v.StepName, v.IdempotencyKey, v.OverallStatus,
			jsonText(issues), v.CriticalCount, v.WarningCount, v.MinorCount, v.InfoCount, ts(v.CreatedAt)); err != nil {
			return err
		}
	}
	if err := s.insertNotifications(ctx, tx, p.Notifications); err != nil {
		return err
	}
	return s.writeThread(ctx, tx, p.Thread)
}

func (s *Store) writeThread(ctx context.Context, tx *sqlx.Tx, t ports.ThreadRecord) error {
	return s.exec(ctx, tx, (`UPDATE threads SET status = ?, error = ?, last_hash = ?, step_count = ?,
 updated_at = ?, completed_at = ? WHERE id = ?`), t.Status, nullStr(t.Error), t.LastHash, t.StepCount,
		ts(t.UpdatedAt), tsPtr(t.CompletedAt), t.ID)
}

func (s *Store) insertNotifications(ctx context.Context, tx *sqlx.Tx, ns []ports.NotificationRecord) error {
	for _, n := range ns {
		// PostgreSQL numbers seq itself (BIGSERIAL); SQLite's column is a plain
		// unique integer, and the IMMEDIATE transaction makes MAX+1 safe.
		seqExpr := "DEFAULT"
		if s.db.Dialect == sqldb.SQLite {
			seqExpr = "(SELECT COALESCE(MAX(seq),0)+1 FROM thread_notifications)"
		}
		if err := s.exec(ctx, tx, (`INSERT INTO thread_notifications (id, seq, thread_id, step_id, step_name,
 idempotency_key, contract_name, owner_id, source, notification_type, step_status, validation_status, violation_type,
 severity, message, details, created_at) VALUES (?,` + seqExpr + `,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`),
			n.ID, n.ThreadID, n.StepID, n.StepName, n.IdempotencyKey, n.ContractName, n.OwnerID, n.Source,
			n.NotificationType, n.StepStatus, n.ValidationStatus, n.ViolationType, n.Severity, n.Message,
			jsonText(n.Details), ts(n.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// UpdateThread: see ports.ThreadStore.
func (s *Store) UpdateThread(ctx context.Context, threadID string, fn ports.ThreadUpdate) (ports.ThreadRecord, error) {
	var out ports.ThreadRecord
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		th, err := s.lockThread(ctx, tx, threadID)
		if err != nil {
			return err
		}
		ns, err := fn(&th)
		if err != nil {
			return callerError{err}
		}
		if err := s.writeThread(ctx, tx, th); err != nil {
			return err
		}
		out = th
		return s.insertNotifications(ctx, tx, ns)
	})
	return out, err
}

// UpsertRefs merges refs into the thread's refs.
func (s *Store) UpsertRefs(ctx context.Context, threadID string, refs map[string]string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		var one int
		if err := tx.GetContext(ctx, &one, s.q(`SELECT 1 FROM threads WHERE id = ?`), threadID); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return callerError{domain.NotFound("thread")}
			}
			return err
		}
		return s.upsertRefs(ctx, tx, threadID, refs)
	})
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

// GrantAccess inserts or replaces a principal's access row.
func (s *Store) GrantAccess(ctx context.Context, a ports.ThreadAccess) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error { return s.grant(ctx, tx, a) })
}

func (s *Store) grant(ctx context.Context, tx *sqlx.Tx, a ports.ThreadAccess) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO thread_access (thread_id, principal_kind, principal_id, role,
 access_level, granted_by, granted_at, expires_at) VALUES (?,?,?,?,?,?,?,?)
 ON CONFLICT (thread_id, principal_id) DO UPDATE SET principal_kind = excluded.principal_kind, role = excluded.role,
 access_level = excluded.access_level, granted_by = excluded.granted_by, granted_at = excluded.granted_at,
 expires_at = excluded.expires_at`), a.ThreadID, a.PrincipalKind, a.PrincipalID, a.Role, a.AccessLevel, a.GrantedBy,
		ts(a.GrantedAt), tsPtr(a.ExpiresAt))
	return err
}

// GetAccess returns a principal's access row.
func (s *Store) GetAccess(ctx context.Context, threadID, principalID string) (ports.ThreadAccess, error) {
	a, err := s.access(ctx, s.db, threadID, principalID)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.ThreadAccess{}, domain.NotFound("thread access")
	}
	return a, sqldb.TranslateError(err)
}

func (s *Store) access(ctx context.Context, q sqlx.QueryerContext, threadID, principalID string) (ports.ThreadAccess, error) {
	var r struct {
		ThreadID      string       `db:"thread_id"`
		PrincipalKind string       `db:"principal_kind"`
		PrincipalID   string       `db:"principal_id"`
		Role          string       `db:"role"`
		AccessLevel   string       `db:"access_level"`
		GrantedBy     string       `db:"granted_by"`
		GrantedAt     time.Time    `db:"granted_at"`
		ExpiresAt     sql.NullTime `db:"expires_at"`
	}
	err := sqlx.GetContext(ctx, q, &r, s.q(`SELECT thread_id, principal_kind, principal_id, role, access_level, granted_by,
 granted_at, expires_at FROM thread_access WHERE thread_id = ? AND principal_id = ?`), threadID, principalID)
	if err != nil {
		return ports.ThreadAccess{}, err
	}
	return ports.ThreadAccess{ThreadID: r.ThreadID, PrincipalKind: r.PrincipalKind, PrincipalID: r.PrincipalID,
		Role: r.Role, AccessLevel: r.AccessLevel, GrantedBy: r.GrantedBy, GrantedAt: r.GrantedAt.UTC(),
		ExpiresAt: fromNull(r.ExpiresAt)}, nil
}

// ListActivities returns the thread's activities in chain order.
func (s *Store) ListActivities(ctx context.Context, threadID string) ([]ports.Activity, error) {
	var rows []struct {
		ID           string       `db:"id"`
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
		ContentHash  string       `db:"content_hash"`
		Hash         string       `db:"hash"`
		PrevHash     string       `db:"prev_hash"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.q(`SELECT id, seq, step_name, idempotency_key, status, attempt, actor,
 actor_service, CAST(context AS TEXT) AS context, CAST(metadata AS TEXT) AS metadata, started_at, finished_at,
 recorded_at, content_hash, hash, prev_hash FROM thread_activities WHERE thread_id = ? ORDER BY seq`), threadID); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.Activity, 0, len(rows))
	for _, r := range rows {
		a := ports.Activity{ID: r.ID, ThreadID: threadID, Seq: r.Seq, StepName: r.StepName, IdempotencyKey: r.Key,
			Status: r.Status, Attempt: r.Attempt, Actor: r.Actor, ActorService: r.ActorService,
			StartedAt: fromNull(r.StartedAt), FinishedAt: fromNull(r.FinishedAt), RecordedAt: r.RecordedAt.UTC(),
			ContentHash: r.ContentHash, Hash: r.Hash, PrevHash: r.PrevHash}
		_ = json.Unmarshal([]byte(r.Context), &a.Context)
		_ = json.Unmarshal([]byte(r.Metadata), &a.Metadata)
		out = append(out, a)
	}
	return out, nil
}

// HasActivity reports whether any attempt of (thread, step, key) exists.
func (s *Store) HasActivity(ctx context.Context, threadID, stepName, key string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ? AND step_name = ?
 AND idempotency_key = ?`), threadID, stepName, key)
	return n > 0, sqldb.TranslateError(err)
}
