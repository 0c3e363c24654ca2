package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/threadengine/engine/adapters/sqldb"
)

// The seed: realistic threads written straight into the engine's schema
// (the rows the engine writes per thread and per step), not through the
// API, so a million threads take minutes. The mix is issue 28's: 5
// contracts × 2 versions (10 % free-form threads), 80 % completed / 10 %
// failed / 5 % active / 5 % cancelled, ~10 % violated, 3–8 steps, 1–2 refs,
// one or two tags, 20 service accounts. Per step: an attempt, a step state,
// a validation (governed threads) and two notifications (acknowledged).
// Not seeded: the transparency log's rows (a leaf and ~2 hashes per step).

// table is one table's seeded columns.
type table struct {
	name string
	cols []string
}

var (
	tThreads = table{"threads", []string{"id", "contract_id", "contract_name", "contract_version", "owner_kind", "owner_id", "service_name",
		"status", "error", "last_hash", "step_count", "tags", "created_at", "updated_at", "completed_at", "health", "failed_steps",
		"critical_issues", "first_issue_step", "first_issue_type", "first_issue_message", "first_issue_severity", "last_activity_at",
		"duration_ms", "health_version"}}
	tRefs       = table{"thread_refs", []string{"thread_id", "ref_key", "ref_value"}}
	tActivities = table{"thread_activities", []string{"id", "thread_id", "seq", "step_name", "idempotency_key", "status", "attempt", "actor",
		"actor_service", "context", "metadata", "started_at", "finished_at", "recorded_at", "content_hash", "hash", "prev_hash"}}
	tStates = table{"thread_step_states", []string{"thread_id", "step_name", "idempotency_key", "status", "latest_step_id", "actor",
		"actor_service", "latest_context", "first_seen_at", "last_updated_at", "started_at", "finished_at"}}
	tValidations = table{"thread_validations", []string{"id", "thread_id", "step_id", "step_name", "idempotency_key", "overall_status",
		"issues", "critical_count", "warning_count", "created_at"}}
	tNotifications = table{"thread_notifications", []string{"id", "seq", "thread_id", "step_id", "step_name", "idempotency_key", "contract_name",
		"owner_id", "source", "notification_type", "step_status", "validation_status", "severity", "message", "details", "created_at",
		"delivery", "deliveries", "settled_at"}}
	seedTables = []table{tThreads, tRefs, tActivities, tStates, tValidations, tNotifications}
)

// sink receives rows of one batch of threads.
type sink interface {
	add(t table, vals ...any) error
	flush() error // ends the batch (commits)
}

// gen draws the seed deterministically, so runs at the same size seed the
// same data.
type gen struct {
	r      *rand.Rand
	n      int
	start  time.Time
	span   time.Duration
	noteSq int64
	pm     map[pmKey]*pmRow // the process map roll-up (processmap.go)
}

func newGen(n int, now time.Time) *gen {
	return &gen{r: rand.New(rand.NewPCG(28, uint64(n))), n: n, start: now.Add(-30 * 24 * time.Hour), span: 30*24*time.Hour - time.Hour}
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (g *gen) hash() string {
	var b [32]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return hex.EncodeToString(b[:])
}

var tagSets = [][]string{{"web"}, {"mobile"}, {"api"}, {"web", "priority"}, {"batch"}}

// refValue is thread i's order reference: six digits from ord-100000, so at
// 100 k threads "ord-123456" matches exactly one thread.
func refValue(i int) string { return fmt.Sprintf("ord-%d", 100000+i) }

// thread writes thread i and its steps.
func (g *gen) thread(s sink, i int) (string, error) {
	id := g.uuid()
	created := g.start.Add(time.Duration(float64(g.span) * float64(i) / float64(g.n))).Add(time.Duration(g.r.IntN(1000)) * time.Millisecond)
	created = sqldb.Time(created)
	var contract, contractID any
	var version any
	cname, cversion := "", 0
	if g.r.IntN(10) > 0 {
		c := g.r.IntN(5)
		cname, cversion = fmt.Sprintf("contract-%d", c), 1+g.r.IntN(2)
		contract, contractID, version = cname, fmt.Sprintf("ct-%d", c), cversion
	}
	status := "completed"
	switch p := g.r.IntN(100); {
	case p >= 95:
		status = "cancelled"
	case p >= 90:
		status = "active"
	case p >= 80:
		status = "failed"
	}
	violated := cname != "" && g.r.IntN(9) == 0 // ~10 % of all threads
	sa := fmt.Sprintf("sa-%02d", g.r.IntN(20))
	service := fmt.Sprintf("svc-%d", g.r.IntN(6))
	steps := 3 + g.r.IntN(6)
	at := created
	var prev string
	var failedSteps, critical int
	var issueStep, issueType, issueMsg, issueSev any
	health := "OK"
	ctxJSON := fmt.Sprintf(`{"orderId":%q,"amount":%d.%02d,"currency":"EUR","items":%d,"customer":"cust-%d","channel":"web"}`,
		refValue(i), g.r.IntN(500), g.r.IntN(100), 1+g.r.IntN(9), i%5000)
	for s0 := 1; s0 <= steps; s0++ {
		name, key := fmt.Sprintf("step-%d", s0), fmt.Sprintf("k%d", s0)
		stepID := g.uuid()
		started := at
		at = at.Add(time.Duration(50+g.r.IntN(5000)) * time.Millisecond)
		prevAt, prevStep := time.Time{}, ""
		if s0 > 1 {
			prevAt, prevStep = started, fmt.Sprintf("step-%d", s0-1)
		}
		g.pmStep(cname, cversion, id, prevStep, name, started, at, prevAt)
		st := "success"
		if status == "failed" && s0 == steps {
			st = "failed"
			failedSteps++
			health = "FAILED"
		}
		h := g.hash()
		if err := s.add(tActivities, stepID, id, s0, name, key, st, 1, sa, service, ctxJSON, `{}`, started, at, at, g.hash(), h, prev); err != nil {
			return "", err
		}
		prev = h
		if err := s.add(tStates, id, name, key, st, stepID, sa, service, ctxJSON, started, at, started, at); err != nil {
			return "", err
		}
		vstatus, issues := "passed", `[]`
		if violated && s0 == 2 {
			vstatus = "violated"
			issues = `[{"type":"content_rule","severity":"critical","message":"amount must be positive","field":"amount"}]`
			critical++
			health = "VIOLATED"
			issueStep, issueType, issueMsg, issueSev = name, "content_rule", "amount must be positive", "critical"
		}
		if cname != "" {
			crit := 0
			if vstatus == "violated" {
				crit = 1
			}
			if err := s.add(tValidations, g.uuid(), id, stepID, name, key, vstatus, issues, crit, 0, at); err != nil {
				return "", err
			}
		}
		for _, src := range []string{"execution", "validation"} {
			g.noteSq++
			sev, vst := "info", ""
			if src == "validation" {
				vst = vstatus
				if vstatus == "violated" {
					sev = "critical"
				}
			}
			if err := s.add(tNotifications, g.uuid(), g.noteSq, id, stepID, name, key, cname, sa, src, src+"."+st, st, vst, sev,
				fmt.Sprintf("%s %s: %s", name, src, st), `{"attempt":1}`, at, "acked", 1, at); err != nil {
				return "", err
			}
		}
	}
	var completed any
	if status != "active" {
		completed = at
	}
	var errText any
	if status == "failed" {
		errText = "step failed"
	}
	tags := tagSets[g.r.IntN(len(tagSets))]
	tagJSON := `["` + strings.Join(tags, `","`) + `"]`
	if err := s.add(tThreads, id, contractID, contract, version, "service_account", sa, service, status, errText, prev, steps, tagJSON,
		created, at, completed, health, failedSteps, critical, issueStep, issueType, issueMsg, issueSev, at,
		at.Sub(created).Milliseconds(), 1); err != nil {
		return "", err
	}
	if err := s.add(tRefs, id, "orderId", refValue(i)); err != nil {
		return "", err
	}
	if i%2 == 0 {
		if err := s.add(tRefs, id, "customerId", fmt.Sprintf("cust-%d", i%5000)); err != nil {
			return "", err
		}
	}
	return id, nil
}

// pgSink copies rows with COPY, one transaction per batch; rows are kept per
// table and copied in table order (threads before their children).
type pgSink struct {
	db   *sqldb.DB
	rows map[string][][]any
}

func (p *pgSink) add(t table, vals ...any) error {
	if p.rows == nil {
		p.rows = map[string][][]any{}
	}
	p.rows[t.name] = append(p.rows[t.name], vals)
	return nil
}

func (p *pgSink) flush() error {
	tx, err := p.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit a no-op
	for _, t := range seedTables {
		st, err := tx.Prepare(`COPY ` + t.name + ` (` + strings.Join(t.cols, ", ") + `) FROM STDIN`)
		if err != nil {
			return err
		}
		for _, r := range p.rows[t.name] {
			if _, err := st.Exec(r...); err != nil {
				return fmt.Errorf("copy %s: %w", t.name, err)
			}
		}
		if _, err := st.Exec(); err != nil {
			return fmt.Errorf("copy %s: %w", t.name, err)
		}
		if err := st.Close(); err != nil {
			return err
		}
	}
	p.rows = nil
	return tx.Commit()
}

// sqliteSink inserts with prepared statements, one transaction per batch.
type sqliteSink struct {
	db   *sqldb.DB
	rows map[string][][]any
}

func (s *sqliteSink) add(t table, vals ...any) error {
	if s.rows == nil {
		s.rows = map[string][][]any{}
	}
	s.rows[t.name] = append(s.rows[t.name], vals)
	return nil
}

func (s *sqliteSink) flush() error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit a no-op
	for _, t := range seedTables {
		// Multi-row INSERTs of up to 30,000 parameters each.
		rows := s.rows[t.name]
		per := 30000 / len(t.cols)
		mark := "(" + strings.TrimSuffix(strings.Repeat("?,", len(t.cols)), ",") + ")"
		for len(rows) > 0 {
			k := min(per, len(rows))
			args := make([]any, 0, k*len(t.cols))
			for _, r := range rows[:k] {
				args = append(args, r...)
			}
			q := `INSERT INTO ` + t.name + ` (` + strings.Join(t.cols, ",") + `) VALUES ` + strings.TrimSuffix(strings.Repeat(mark+",", k), ",")
			if _, err := tx.Exec(q, args...); err != nil {
				return fmt.Errorf("insert %s: %w", t.name, err)
			}
			rows = rows[k:]
		}
	}
	s.rows = nil
	return tx.Commit()
}

// seed writes n threads in batches and returns one thread id per batch
// (query subjects) and how long it took.
func seed(ctx context.Context, db *sqldb.DB, n int, now time.Time, progress func(done int)) ([]string, time.Duration, error) {
	var s sink = &sqliteSink{db: db}
	if db.Dialect == sqldb.Postgres {
		s = &pgSink{db: db}
	}
	var restore func() error
	if db.Dialect == sqldb.Postgres {
		// A bulk load: the secondary indexes are dropped and built again
		// afterwards (as pg_restore does), which is several times faster
		// than maintaining them row by row.
		var err error
		if restore, err = dropIndexes(ctx, db); err != nil {
			return nil, 0, err
		}
	}
	g := newGen(n, now)
	const batch = 2000
	var sample []string
	began := time.Now()
	for i := 0; i < n; i++ {
		id, err := g.thread(s, i)
		if err != nil {
			return nil, 0, err
		}
		if (i+1)%batch == 0 || i == n-1 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			if err := s.flush(); err != nil {
				return nil, 0, err
			}
			sample = append(sample, id)
			progress(i + 1)
		}
	}
	if _, err := g.writeProcessMap(ctx, db); err != nil {
		return nil, 0, err
	}
	if restore != nil {
		if err := restore(); err != nil {
			return nil, 0, err
		}
	}
	return sample, time.Since(began), nil
}

// dropIndexes drops the seeded tables' secondary indexes (not those behind
// constraints) and returns what builds them again.
func dropIndexes(ctx context.Context, db *sqldb.DB) (func() error, error) {
	names := make([]string, len(seedTables))
	for i, t := range seedTables {
		names[i] = t.name
	}
	var idx []struct {
		Name string `db:"indexname"`
		Def  string `db:"indexdef"`
	}
	if err := db.SelectContext(ctx, &idx, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()
 AND tablename = ANY($1) AND indexname NOT IN (SELECT conname FROM pg_constraint)`, pq.Array(names)); err != nil {
		return nil, err
	}
	for _, x := range idx {
		if _, err := db.ExecContext(ctx, `DROP INDEX `+pq.QuoteIdentifier(x.Name)); err != nil {
			return nil, err
		}
	}
	return func() error {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SET maintenance_work_mem = '256MB'`); err != nil {
			return err
		}
		began := time.Now()
		for _, x := range idx {
			if _, err := conn.ExecContext(ctx, x.Def); err != nil {
				return fmt.Errorf("%s: %w", x.Name, err)
			}
		}
		fmt.Printf("  built %d indexes again in %s\n", len(idx), time.Since(began).Round(time.Second))
		return nil
	}, nil
}
