package threadstore

import (
	"context"
	"database/sql"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// A group-commit batch is written in rounds: round k holds the k-th append of
// each thread in the batch, so a round never holds a thread twice. Each round
// is one statement that locks its threads and reads what the plans need, the
// plans (hash chain included) computed in Go, then one multi-row statement per
// table. The next round reads what the previous one wrote (same transaction),
// so several appends of one thread chain in order. Per step this is a share of
// about 6 statements per round instead of 6 per step — the round trips, not
// the SQL, were the measured cost.

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
		start := time.Now()
		err := s.logTx(ctx, false, func(tx *sqlx.Tx) error { return s.appendBatch(ctx, tx, batch, outs, errs) })
		took := time.Since(start)
		cancel()
		s.preparePending(context.Background())
		if err == nil {
			s.wakeLog()
			s.groupCommits.Add(1)
			s.metrics.CommitBatch(len(batch), took)
			for i, j := range batch {
				j.out, j.err = outs[i], errs[i]
			}
			return
		}
		// The batch rolled back (a conflict, a failing statement): redo each
		// append alone so one failure stays its own.
		s.groupFallbacks.Add(1)
	}
	for _, j := range batch {
		j.out, j.err = s.appendOne(j)
	}
}

func (s *Store) appendOne(j *appendJob) (ports.StepPlan, error) {
	var out ports.StepPlan
	start := time.Now()
	err := s.logTx(j.ctx, true, func(tx *sqlx.Tx) error {
		outs, errs := make([]ports.StepPlan, 1), make([]error, 1)
		if err := s.appendBatch(j.ctx, tx, []*appendJob{j}, outs, errs); err != nil {
			return err
		}
		if errs[0] != nil {
			return sqldb.CallerError(errs[0]) // nothing of it was written; roll back
		}
		out = outs[0]
		return nil
	})
	if err == nil {
		s.wakeLog()
		s.metrics.CommitBatch(1, time.Since(start))
	}
	return out, err
}

// appendBatch runs jobs inside tx. A job refused by its plan (or whose thread
// does not exist) gets its error in errs and writes nothing; any other error
// aborts the whole batch.
func (s *Store) appendBatch(ctx context.Context, tx *sqlx.Tx, jobs []*appendJob, outs []ports.StepPlan, errs []error) error {
	round := make([]int, len(jobs))
	seen := make(map[string]int, len(jobs))
	rounds := 0
	for i, j := range jobs {
		round[i] = seen[j.threadID]
		seen[j.threadID]++
		rounds = max(rounds, round[i]+1)
	}
	idx := make([]int, 0, len(jobs))
	var written []ports.StepPlan
	for r := 0; r < rounds; r++ {
		idx = idx[:0]
		for i := range jobs {
			if round[i] == r {
				idx = append(idx, i)
			}
		}
		plans, err := s.appendRound(ctx, tx, jobs, idx, outs, errs)
		if err != nil {
			return err
		}
		written = append(written, plans...)
	}
	// On SQLite the steps' leaves go to the tree in this transaction, all
	// rounds' at once (one tlog_batches row per group commit), in the order the rounds wrote them.
	if !s.noLog && s.logInPlace() && len(written) > 0 {
		return s.appendStepLeaves(ctx, tx, written)
	}
	return nil
}

// appendRound: jobs[idx] are on distinct threads. It returns the plans it
// wrote.
func (s *Store) appendRound(ctx context.Context, tx *sqlx.Tx, jobs []*appendJob, idx []int, outs []ports.StepPlan, errs []error) ([]ports.StepPlan, error) {
	views, err := s.lockForSteps(ctx, tx, jobs, idx)
	if err != nil {
		return nil, err
	}
	plans := make([]ports.StepPlan, 0, len(idx))
	for _, i := range idx {
		j := jobs[i]
		view, ok := views[j.threadID]
		if !ok {
			errs[i] = domain.NotFound("thread")
			continue
		}
		if j.withStates {
			if view.States, err = s.states(ctx, tx, j.threadID, "", ""); err != nil {
				return nil, err
			}
			view.Current = nil
			for k := range view.States {
				if view.States[k].StepName == j.stepName && view.States[k].IdempotencyKey == j.key {
					view.Current = &view.States[k]
				}
			}
			if n := len(view.States); n > 0 {
				view.LastStepName = view.States[n-1].StepName
			}
			if j.writer.WithGrants {
				if view.Grants, err = s.grants(ctx, tx, j.threadID); err != nil {
					return nil, err
				}
			}
		}
		p, err := j.plan(view)
		if err != nil {
			errs[i] = err
			continue
		}
		outs[i] = p
		if !p.Duplicate {
			plans = append(plans, p)
		}
	}
	return plans, s.writePlans(ctx, tx, plans)
}

// lockForSteps locks the threads of jobs[idx] (distinct) and, in the same
// round trip, reads each one's latest step name, the writer's parties (the
// one it acts as in full, the roles of the others) and the current state of
// the step identity being written. A missing thread has no entry in the result.
func (s *Store) lockForSteps(ctx context.Context, tx *sqlx.Tx, jobs []*appendJob, idx []int) (map[string]ports.StepTx, error) {
	var rows []struct {
		threadRow
		Principal   string         `db:"v_pid"`
		StepName    string         `db:"v_sname"`
		Key         string         `db:"v_ikey"`
		LastStep    string         `db:"last_step"`
		Roles       sql.NullString `db:"party_roles"`
		PKind       sql.NullString `db:"p_kind"`
		PRole       sql.NullString `db:"p_role"`
		PLevel      sql.NullString `db:"p_level"`
		PGrantedBy  sql.NullString `db:"p_granted_by"`
		PGrantedAt  sql.NullTime   `db:"p_granted_at"`
		PExpiresAt  sql.NullTime   `db:"p_expires_at"`
		CurStatus   sql.NullString `db:"cur_status"`
		CurRetry    sql.NullInt64  `db:"cur_retry"`
		CurStepID   sql.NullString `db:"cur_step_id"`
		CurInvoc    sql.NullString `db:"cur_invocation"`
		CurPrev     sql.NullString `db:"cur_prev"`
		CurActor    sql.NullString `db:"cur_actor"`
		CurService  sql.NullString `db:"cur_service"`
		CurFirst    sql.NullTime   `db:"cur_first"`
		CurUpdated  sql.NullTime   `db:"cur_updated"`
		CurStarted  sql.NullTime   `db:"cur_started"`
		CurFinished sql.NullTime   `db:"cur_finished"`
		Grant       sql.NullString `db:"grant_status"`
	}
	lock, roles := "", `group_concat(x.role, char(31))`
	if s.db.Dialect == sqldb.Postgres {
		lock, roles = " FOR UPDATE OF t", `string_agg(x.role, chr(31))`
	}
	args := make([]any, 0, 6*len(idx))
	for _, i := range idx {
		j := jobs[i]
		args = append(args, j.threadID, j.writer.PrincipalID, j.writer.Role, j.stepName, j.key, j.writer.InvocationID)
	}
	// The party joined in full is the one of the asked role, or the only one
	// when no role is asked. ORDER BY t.id: one lock order for every batch.
	err := s.selectTx(ctx, tx, &rows, `WITH v(tid, pid, prole, sname, ikey, inv) AS (VALUES `+placeholders(len(idx), 6)+`)
 SELECT t.id, t.contract_id, t.contract_name, t.contract_version, t.label,
 t.owner_kind, t.owner_id, t.service_name, t.status, t.error, t.end_reason, t.last_hash, t.step_count, CAST(t.tags AS TEXT) AS tags,
 t.created_at, t.updated_at, t.completed_at, t.trace_started_at, t.failed_steps, t.critical_issues, t.major_issues, t.warning_issues,
 t.first_issue_step, t.first_issue_type, t.first_issue_message, t.first_issue_severity, t.last_activity_at, v.pid AS v_pid, v.sname AS v_sname, v.ikey AS v_ikey,
 COALESCE((SELECT a.step_name FROM thread_activities a WHERE a.thread_id = t.id AND a.seq = t.step_count), '') AS last_step,
 (SELECT `+roles+` FROM thread_access x WHERE x.thread_id = t.id AND x.principal_id = v.pid) AS party_roles,
 p.principal_kind AS p_kind, p.role AS p_role, p.access_level AS p_level, p.granted_by AS p_granted_by,
 p.granted_at AS p_granted_at, p.expires_at AS p_expires_at,
 s.status AS cur_status, s.retry_count AS cur_retry, s.latest_step_id AS cur_step_id,
 s.invocation_id AS cur_invocation, s.previous_step AS cur_prev,
 s.actor AS cur_actor, s.actor_service AS cur_service,
 s.first_seen_at AS cur_first, s.last_updated_at AS cur_updated, s.started_at AS cur_started, s.finished_at AS cur_finished,
 (SELECT g.status FROM step_grants g WHERE g.thread_id = t.id AND g.invocation_id = v.inv AND v.inv <> '') AS grant_status
 FROM v JOIN threads t ON t.id = v.tid
 LEFT JOIN thread_access p ON p.thread_id = t.id AND p.principal_id = v.pid AND (p.role = v.prole OR v.prole = ''
  AND (SELECT COUNT(*) FROM thread_access y WHERE y.thread_id = t.id AND y.principal_id = v.pid) = 1)
 LEFT JOIN thread_step_states s ON s.thread_id = t.id AND s.step_name = v.sname AND s.idempotency_key = v.ikey
 ORDER BY t.id`+lock, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ports.StepTx, len(rows))
	for _, r := range rows {
		v := ports.StepTx{Thread: r.threadRow.record(), LastStepName: r.LastStep, Grant: domain.GrantStatus(r.Grant.String)}
		if r.PLevel.Valid {
			v.Thread.Parties = append(v.Thread.Parties, domain.Party{PrincipalKind: r.PKind.String, PrincipalID: r.Principal,
				Role: r.PRole.String, Level: domain.AccessLevel(r.PLevel.String), GrantedBy: r.PGrantedBy.String,
				GrantedAt: r.PGrantedAt.Time.UTC(), ExpiresAt: sqldb.FromNullTime(r.PExpiresAt)})
		}
		if r.Roles.Valid {
			for _, role := range strings.Split(r.Roles.String, "\x1f") {
				if !r.PLevel.Valid || role != r.PRole.String {
					v.Thread.Parties = append(v.Thread.Parties, domain.Party{PrincipalID: r.Principal, Role: role})
				}
			}
		}
		if r.CurStatus.Valid {
			st := ports.StepState{StepName: r.StepName, IdempotencyKey: r.Key, Status: r.CurStatus.String,
				RetryCount: int(r.CurRetry.Int64), LatestStepID: r.CurStepID.String, InvocationID: r.CurInvoc.String,
				PreviousStep: r.CurPrev.String,
				Actor:        r.CurActor.String, ActorService: r.CurService.String, FirstSeenAt: r.CurFirst.Time.UTC(),
				LastUpdatedAt: r.CurUpdated.Time.UTC(), StartedAt: sqldb.FromNullTime(r.CurStarted), FinishedAt: sqldb.FromNullTime(r.CurFinished)}
			// st.LatestContext stays empty: deciding a step never reads the
			// current attempt's context (content references read the
			// thread's states through store.states, from the attempts).
			v.Current = &st
		}
		out[r.ID] = v
	}
	return out, nil
}

// placeholders returns "(?,?),(?,?)…": rows groups of cols.
func placeholders(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}

// maxParams bounds the parameters of one statement (PostgreSQL allows 65535,
// SQLite 32766).
const maxParams = 16000

// part is one statement of a write.
type part struct {
	q    string
	args []any
}

// rowsParts returns prefix VALUES (…),(…) suffix over rows, in chunks.
func rowsParts(prefix, row, suffix string, cols int, rows [][]any) []part {
	var out []part
	per := max(1, maxParams/cols)
	for len(rows) > 0 {
		n := min(len(rows), per)
		args := make([]any, 0, n*cols)
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		out = append(out, part{prefix + strings.TrimSuffix(strings.Repeat(row+",", n), ",") + suffix, args})
		rows = rows[n:]
	}
	return out
}

// execParts runs parts in order. On PostgreSQL they are sent as one statement
// (data-modifying WITH clauses): one round trip for a whole round's writes.
// They touch different tables, and foreign keys are checked at the end of the
// statement, so running them together is the same as running them in order.
func (s *Store) execParts(ctx context.Context, tx *sqlx.Tx, parts []part) error {
	if s.db.Dialect == sqldb.Postgres && len(parts) > 1 {
		n := 0
		for _, p := range parts {
			n += len(p.args)
		}
		if n <= maxParams {
			var b strings.Builder
			args := make([]any, 0, n)
			for i, p := range parts[:len(parts)-1] {
				if i == 0 {
					b.WriteString("WITH ")
				} else {
					b.WriteString(", ")
				}
				b.WriteString("w")
				b.WriteString(strconv.Itoa(i))
				b.WriteString(" AS (")
				b.WriteString(p.q)
				b.WriteString(")")
				args = append(args, p.args...)
			}
			last := parts[len(parts)-1]
			b.WriteString("\n")
			b.WriteString(last.q)
			parts = []part{{b.String(), append(args, last.args...)}}
		}
	}
	for _, p := range parts {
		var err error
		if len(p.args) <= maxPreparedArgs {
			err = s.exec(ctx, tx, p.q, p.args...)
		} else { // rare (many sub-steps): not worth a cached statement
			_, err = tx.ExecContext(ctx, s.q(p.q), p.args...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxPreparedArgs: larger statements are not kept prepared.
const maxPreparedArgs = 4096

// writePlans writes the plans of one round (distinct threads) with one
// statement per table (on PostgreSQL, one statement in all).
func (s *Store) writePlans(ctx context.Context, tx *sqlx.Tx, plans []ports.StepPlan) error {
	if len(plans) == 0 {
		return nil
	}
	var acts, subs, states, vals, refs, grants [][]any
	var notes []ports.NotificationRecord
	for _, p := range plans {
		a := p.Activity
		tid := p.Thread.ID
		// A passed result without issues is stored compactly, as the
		// attempt's validation_status (migration 00102, issue 28): no row.
		// Every other result is a row; no attempt gets both forms.
		var compact any
		if v := p.Validation; v != nil && compactValidation(v) {
			compact = v.OverallStatus
		}
		context := jsonText(a.Context)
		acts = append(acts, []any{a.ID, tid, a.Seq, a.StepName, a.IdempotencyKey, a.Status, a.Attempt, a.Actor,
			a.ActorService, context, len(context), jsonText(a.Metadata), sqldb.TimePtr(a.StartedAt), sqldb.TimePtr(a.FinishedAt),
			sqldb.Time(a.RecordedAt), a.ContentHash, a.Hash, a.PrevHash, compact})
		for i, ss := range p.SubSteps {
			subs = append(subs, []any{ss.ID, tid, a.ID, i, ss.Name, ss.Status, jsonText(ss.Payload), sqldb.Time(ss.RecordedAt), sqldb.Time(a.RecordedAt)})
		}
		st := p.State
		states = append(states, []any{tid, st.StepName, st.IdempotencyKey, st.Status, st.RetryCount, st.LatestStepID,
			nullStr(st.InvocationID), nullStr(st.PreviousStep), st.Actor, st.ActorService,
			sqldb.Time(st.FirstSeenAt), sqldb.Time(st.LastUpdatedAt), sqldb.TimePtr(st.StartedAt), sqldb.TimePtr(st.FinishedAt)})
		if v := p.Validation; v != nil && compact == nil {
			issues := v.Issues
			if issues == nil {
				issues = []any{}
			}
			vals = append(vals, []any{v.ID, tid, v.StepID, v.StepName, v.IdempotencyKey, v.OverallStatus,
				jsonText(issues), v.CriticalCount, v.WarningCount, v.MinorCount, v.InfoCount, sqldb.Time(v.CreatedAt)})
		}
		if g := p.Grant; g != nil {
			grants = append(grants, []any{tid, g.InvocationID, g.StepName, g.PrincipalID, string(g.Status), g.Consumed,
				sqldb.Time(g.GrantedAt), g.Answer, freshText(g.FreshConsumed)})
		}
		notes = append(notes, p.Notifications...)
		keys := make([]string, 0, len(p.Refs))
		for k := range p.Refs {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the lock order of upsertRefs
		for _, k := range keys {
			refs = append(refs, []any{tid, k, p.Refs[k]})
		}
	}
	// context_bytes is the context's size as written (migration 00105):
	// lists and exports bound contexts by it without reading them.
	parts := rowsParts(`INSERT INTO thread_activities (id, thread_id, seq, activity_type, step_name,
 idempotency_key, status, attempt, actor, actor_service, context, context_bytes, metadata, started_at, finished_at, recorded_at,
 content_hash, hash, prev_hash, validation_status) VALUES `, `(?,?,?,'step_recorded',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, "", 19, acts)
	parts = append(parts, rowsParts(`INSERT INTO step_substeps (id, thread_id, step_id, position, name, status, payload,
 recorded_at, created_at) VALUES `, `(?,?,?,?,?,?,?,?,?)`, "", 9, subs)...)
	// Rows are on distinct threads, so no two rows of this upsert hit the
	// same key (PostgreSQL refuses that in one statement).
	// The statement names no column this release does not need: the
	// steps' context is read from their latest attempt (issue 28), and
	// thread_step_states.latest_context, which the previous release still
	// sets to '{}' on update, is dropped by the next release's contract
	// migration (a new row takes its default meanwhile).
	parts = append(parts, rowsParts(`INSERT INTO thread_step_states (thread_id, step_name, idempotency_key, status,
 retry_count, latest_step_id, invocation_id, previous_step, actor, actor_service, first_seen_at,
 last_updated_at, started_at, finished_at) VALUES `, `(?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, `
 ON CONFLICT (thread_id, step_name, idempotency_key) DO UPDATE SET status = excluded.status,
 retry_count = excluded.retry_count, latest_step_id = excluded.latest_step_id,
 invocation_id = excluded.invocation_id, actor = excluded.actor,
 actor_service = excluded.actor_service,
 last_updated_at = excluded.last_updated_at, started_at = excluded.started_at, finished_at = excluded.finished_at`, 14, states)...)
	parts = append(parts, rowsParts(`INSERT INTO thread_validations (id, thread_id, step_id, step_name,
 idempotency_key, overall_status, issues, critical_count, warning_count, minor_count, info_count, created_at)
 VALUES `, `(?,?,?,?,?,?,?,?,?,?,?,?)`, "", 12, vals)...)
	// Keys are distinct per thread and threads distinct per round, so no row
	// of this upsert hits another's key.
	parts = append(parts, rowsParts(`INSERT INTO step_grants (thread_id, invocation_id, step_name, principal_id, status,
 consumed_step_id, granted_at, answer_id, fresh_consumed) VALUES `, `(?,?,?,?,?,?,?,?,?)`, "", 9, grants)...)
	parts = append(parts, rowsParts(`INSERT INTO thread_refs (thread_id, ref_key, ref_value) VALUES `, `(?,?,?)`,
		` ON CONFLICT (thread_id, ref_key) DO UPDATE SET ref_value = excluded.ref_value`, 3, refs)...)
	np, err := s.notificationParts(ctx, tx, notes)
	if err != nil {
		return err
	}
	parts = append(parts, np...)
	parts = append(parts, s.processMapParts(plans)...)
	// Each step's leaf goes to the log's outbox in the step's own
	// statement; the sequencer moves it into the tree (tlog.go). On SQLite
	// the leaves are appended to the tree in this transaction instead
	// (appendBatch).
	if !s.noLog && !s.logInPlace() {
		parts = append(parts, pendingParts(plans)...)
	}
	return s.execParts(ctx, tx, append(parts, s.threadParts(plans)...))
}

// threadParts updates the round's thread rows: one statement on PostgreSQL.
func (s *Store) threadParts(plans []ports.StepPlan) []part {
	if s.db.Dialect != sqldb.Postgres {
		out := make([]part, 0, len(plans))
		for _, p := range plans {
			out = append(out, threadPart(p.Thread))
		}
		return out
	}
	rows := make([][]any, 0, len(plans))
	for _, p := range plans {
		t := p.Thread
		rows = append(rows, append([]any{t.ID, string(t.Status), nullStr(t.Error), t.LastHash(), t.StepCount(), sqldb.Time(t.UpdatedAt),
			sqldb.TimePtr(t.CompletedAt)}, healthValues(t)...))
	}
	return rowsParts(`UPDATE threads AS t SET status = v.status, error = v.error, last_hash = v.last_hash,
 step_count = v.step_count, updated_at = v.updated_at, completed_at = v.completed_at,
 health = v.health, failed_steps = v.failed_steps, critical_issues = v.critical_issues, major_issues = v.major_issues,
 warning_issues = v.warning_issues, first_issue_step = v.first_issue_step, first_issue_type = v.first_issue_type,
 first_issue_message = v.first_issue_message, first_issue_severity = v.first_issue_severity,
 last_activity_at = v.last_activity_at, duration_ms = v.duration_ms, health_version = 1 FROM (VALUES `,
		`(?,?,CAST(? AS TEXT),?,CAST(? AS INTEGER),CAST(? AS TIMESTAMPTZ),CAST(? AS TIMESTAMPTZ),`+
			`?,CAST(? AS INTEGER),CAST(? AS INTEGER),CAST(? AS INTEGER),CAST(? AS INTEGER),CAST(? AS TEXT),CAST(? AS TEXT),`+
			`CAST(? AS TEXT),CAST(? AS TEXT),CAST(? AS TIMESTAMPTZ),CAST(? AS BIGINT))`,
		`) AS v(id, status, error, last_hash, step_count, updated_at, completed_at, health, failed_steps, critical_issues,
 major_issues, warning_issues, first_issue_step, first_issue_type, first_issue_message, first_issue_severity,
 last_activity_at, duration_ms) WHERE t.id = v.id`, 18, rows)
}

// compactValidation reports whether v is stored as its attempt's
// validation_status instead of a thread_validations row: a passed result
// without issues (98 % of them), whose row would say nothing the attempt's
// id and time do not (readers: threadquery's validationRows). Its own id is
// not kept: the result reads back with its attempt's id and recording time.
func compactValidation(v *ports.ValidationRecord) bool {
	return v.OverallStatus == domain.ValidationPassed && v.StepID != "" && noIssues(v.Issues) &&
		v.CriticalCount == 0 && v.WarningCount == 0 && v.MinorCount == 0 && v.InfoCount == 0
}

// noIssues: the issues list is nil or empty (of any slice type).
func noIssues(issues any) bool {
	if issues == nil {
		return true
	}
	rv := reflect.ValueOf(issues)
	return (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) && rv.Len() == 0
}
