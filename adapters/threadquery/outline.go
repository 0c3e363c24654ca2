package threadquery

import (
	"context"
	"strings"

	"github.com/threadengine/engine/ports"
)

// The outline of a long thread: its steps grouped by name and the step
// orders it took. A pick wave repeats pick_item under 58 idempotency keys;
// the thread page shows one row "pick_item × 58 (1 failed)" and draws the
// graph from every step, whatever page of steps it has loaded.

type groupRow struct {
	ThreadID    string `db:"thread_id"`
	StepName    string `db:"step_name"`
	Steps       int    `db:"steps"`
	Failed      int    `db:"failed"`
	Succeeded   int    `db:"succeeded"`
	FirstSeenAt dbTime `db:"first_seen"`
	RN          int    `db:"rn"`
}

// StepGroups: see ports.StepReads.
func (s *Store) StepGroups(ctx context.Context, threadIDs []string, perThread int) (map[string][]ports.StepGroupView, error) {
	out := map[string][]ports.StepGroupView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []groupRow
	err := s.selectIn(ctx, &rows, `SELECT thread_id, step_name, steps, failed, succeeded, first_seen, rn FROM (
 SELECT thread_id, step_name, steps, failed, succeeded, first_seen,
 ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY first_seen, step_name) AS rn FROM (
 SELECT thread_id, step_name, COUNT(*) AS steps,
 SUM(CASE WHEN status IN ('failed', 'error') THEN 1 ELSE 0 END) AS failed,
 SUM(CASE WHEN status IN ('success', 'completed') THEN 1 ELSE 0 END) AS succeeded,
 MIN(first_seen_at) AS first_seen
 FROM thread_step_states WHERE thread_id IN (?) GROUP BY thread_id, step_name) g) x
 WHERE rn <= ? ORDER BY thread_id, rn`, threadIDs, perThread)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], ports.StepGroupView{ThreadID: r.ThreadID, StepName: r.StepName,
			Steps: r.Steps, Failed: r.Failed, Succeeded: r.Succeeded, FirstSeenAt: r.FirstSeenAt.T})
	}
	return out, nil
}

type edgeRow struct {
	ThreadID string `db:"thread_id"`
	From     string `db:"from_step"`
	To       string `db:"step_name"`
	Count    int    `db:"n"`
	RN       int    `db:"rn"`
}

// StepEdges: see ports.StepReads.
func (s *Store) StepEdges(ctx context.Context, threadIDs []string, perThread int) (map[string][]ports.StepEdgeView, error) {
	out := map[string][]ports.StepEdgeView{}
	if len(threadIDs) == 0 {
		return out, nil
	}
	var rows []edgeRow
	err := s.selectIn(ctx, &rows, `SELECT thread_id, from_step, step_name, n, rn FROM (
 SELECT thread_id, from_step, step_name, n, ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY first_seen, from_step, step_name) AS rn FROM (
 SELECT thread_id, COALESCE(previous_step, '') AS from_step, step_name, COUNT(*) AS n, MIN(first_seen_at) AS first_seen
 FROM thread_step_states WHERE thread_id IN (?) GROUP BY thread_id, COALESCE(previous_step, ''), step_name) g) x
 WHERE rn <= ? ORDER BY thread_id, rn`, threadIDs, perThread)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ThreadID] = append(out[r.ThreadID], ports.StepEdgeView{ThreadID: r.ThreadID, From: r.From, To: r.To, Count: r.Count})
	}
	return out, nil
}

type issueKeyRow struct {
	ThreadID string `db:"thread_id"`
	Key      string `db:"idempotency_key"`
}

// IssueKeys: see ports.StepReads. A failed attempt is found on the
// (thread_id, seq) chain, a violation on the thread's validations; one
// statement for each kind however many threads are asked.
func (s *Store) IssueKeys(ctx context.Context, refs []ports.IssueRef) (map[string]string, error) {
	out := map[string]string{}
	var failed, violated []ports.IssueRef
	for _, r := range refs {
		if r.Failed {
			failed = append(failed, r)
		} else {
			violated = append(violated, r)
		}
	}
	pairs := func(rs []ports.IssueRef, alias string) (string, []any) {
		conds := make([]string, len(rs))
		args := make([]any, 0, 2*len(rs))
		for i, r := range rs {
			conds[i] = "(" + alias + ".thread_id = ? AND " + alias + ".step_name = ?)"
			args = append(args, r.ThreadID, r.StepName)
		}
		return strings.Join(conds, " OR "), args
	}
	if len(failed) > 0 {
		where, args := pairs(failed, "a")
		var rows []issueKeyRow
		if err := s.selectRaw(ctx, &rows, `SELECT thread_id, idempotency_key FROM (
 SELECT a.thread_id, a.idempotency_key, ROW_NUMBER() OVER (PARTITION BY a.thread_id ORDER BY a.seq) AS rn
 FROM thread_activities a WHERE (`+where+`) AND a.status IN ('failed', 'error')) x WHERE rn = 1`, args...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.ThreadID] = r.Key
		}
	}
	if len(violated) > 0 {
		where, args := pairs(violated, "v")
		var rows []issueKeyRow
		if err := s.selectRaw(ctx, &rows, `SELECT thread_id, idempotency_key FROM (
 SELECT v.thread_id, v.idempotency_key, ROW_NUMBER() OVER (PARTITION BY v.thread_id ORDER BY v.created_at, v.id) AS rn
 FROM thread_validations v WHERE (`+where+`) AND v.overall_status = 'violated') x WHERE rn = 1`, args...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.ThreadID] = r.Key
		}
	}
	return out, nil
}
