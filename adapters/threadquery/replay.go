package threadquery

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var _ ports.ReplayReader = (*Store)(nil)

type replayThreadRow struct {
	ID              string `db:"id"`
	ContractVersion int    `db:"contract_version"`
	CreatedAt       dbTime `db:"created_at"`
	Status          string `db:"status"`
	Health          dbText `db:"health"`
	StepCount       int    `db:"step_count"`
}

type replayStepRow struct {
	ID             string `db:"id"`
	ThreadID       string `db:"thread_id"`
	StepName       string `db:"step_name"`
	IdempotencyKey string `db:"idempotency_key"`
	Status         string `db:"status"`
	Actor          string `db:"actor"`
	Context        dbText `db:"context"`
	StartedAt      dbTime `db:"started_at"`
	FinishedAt     dbTime `db:"finished_at"`
	RecordedAt     dbTime `db:"recorded_at"`
}

type replayPartyRow struct {
	ThreadID    string `db:"thread_id"`
	PrincipalID string `db:"principal_id"`
	Role        string `db:"role"`
}

// ContractThreads: see ports.ReplayReader. Threads are read per version of
// the contract, each branch a range of the threads_contract index
// (contract_name, contract_version, created_at) cut at the cursor and the
// page size, and merged; so a page costs the same at any depth and on any
// size of contract. Attempts are read by (thread_id, seq), parties by
// thread: three statements a page, plus one for the versions.
func (s *Store) ContractThreads(ctx context.Context, name string, after *ports.ReplayCursor, limit, maxSteps int) ([]ports.ReplayThread, int, error) {
	if limit <= 0 {
		return nil, 0, nil
	}
	var versions []int
	if err := s.selectRaw(ctx, &versions, `SELECT version FROM contract_versions WHERE name = ? ORDER BY version DESC`, name); err != nil {
		return nil, 0, err
	}
	if len(versions) == 0 {
		return nil, 1, nil
	}
	cut := ""
	var cutArgs []any
	if after != nil {
		at := sqldb.Time(after.CreatedAt)
		cut, cutArgs = ` AND (created_at < ? OR (created_at = ? AND id < ?))`, []any{at, at, after.ID}
	}
	branches := make([]string, len(versions))
	var args []any
	for i, v := range versions {
		branches[i] = `SELECT * FROM (SELECT id, contract_version, created_at, status, health, step_count FROM threads
 WHERE contract_name = ? AND contract_version = ?` + cut + ` ORDER BY created_at DESC, id DESC LIMIT ?) v` + strconv.Itoa(i)
		args = append(append(append(args, name, v), cutArgs...), limit)
	}
	q := `SELECT id, contract_version, created_at, status, health, step_count FROM (` + strings.Join(branches, "\n UNION ALL ") +
		`) x ORDER BY created_at DESC, id DESC LIMIT ?`
	var rows []replayThreadRow
	if err := s.selectRaw(ctx, &rows, q, append(args, limit)...); err != nil {
		return nil, 0, err
	}
	read := 1 + len(rows)
	if len(rows) == 0 {
		return nil, read, nil
	}
	ids := make([]string, len(rows))
	out := make([]ports.ReplayThread, len(rows))
	at := make(map[string]int, len(rows))
	for i, r := range rows {
		ids[i], at[r.ID] = r.ID, i
		out[i] = ports.ReplayThread{ID: r.ID, ContractVersion: r.ContractVersion, CreatedAt: r.CreatedAt.T, Status: r.Status,
			Health: domain.HealthStatus(r.Health.S), StepCount: r.StepCount}
	}
	var parties []replayPartyRow
	if err := s.selectIn(ctx, &parties, `SELECT thread_id, principal_id, role FROM thread_access WHERE thread_id IN (?)
 ORDER BY thread_id, granted_at, role`, ids); err != nil {
		return nil, 0, err
	}
	roles := map[[2]string][]string{}
	for _, p := range parties {
		k := [2]string{p.ThreadID, p.PrincipalID}
		roles[k] = append(roles[k], p.Role)
	}
	var steps []replayStepRow
	if err := s.selectIn(ctx, &steps, `SELECT a.id, a.thread_id, a.step_name, a.idempotency_key, a.status, a.actor,
 CAST(a.context AS TEXT) AS context, a.started_at, a.finished_at, a.recorded_at
 FROM thread_activities a WHERE a.thread_id IN (?) AND a.seq <= ? AND a.activity_type = 'step_recorded' ORDER BY a.thread_id, a.seq`,
		ids, maxSteps); err != nil {
		return nil, 0, err
	}
	read += len(parties) + len(steps)
	for _, r := range steps {
		t := &out[at[r.ThreadID]]
		t.Steps = append(t.Steps, domain.ReplayStep{ID: r.ID, Name: r.StepName, IdempotencyKey: r.IdempotencyKey, Status: r.Status,
			Context: stringMap(r.Context.S), StartedAt: r.StartedAt.T, FinishedAt: r.FinishedAt.T, RecordedAt: r.RecordedAt.T,
			Roles: roles[[2]string{r.ThreadID, r.Actor}]})
	}
	return out, read, nil
}

// stringMap reads a stored context: an object of strings (the SDKs send
// strings); any other value is kept as its JSON text.
func stringMap(s string) map[string]string {
	out := map[string]string{}
	var m map[string]json.RawMessage
	if s == "" || json.Unmarshal([]byte(s), &m) != nil {
		return out
	}
	for k, raw := range m {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			out[k] = v
		} else {
			out[k] = string(raw)
		}
	}
	return out
}
