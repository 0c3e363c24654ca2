package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

// The seed: realistic threads written straight into the engine's schema
// (the rows the engine writes per thread and per step), not through the
// API, so a million threads take minutes. The mix is issue 28's: 5
// contracts × 2 versions (10 % free-form threads), 80 % completed / 10 %
// failed / 5 % active / 5 % cancelled, ~10 % violated, 3–8 steps, 1–2 refs,
// one or two tags, 20 service accounts. Per step: an attempt, a step state,
// a validation result (governed threads: passed on the attempt, violated as a
// thread_validations row) and two notifications (acknowledged) if
// the step is younger than notifications.settled_retention (24 h by
// default): the engine deletes settled notifications after it.
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
		"actor_service", "context", "context_bytes", "metadata", "started_at", "finished_at", "recorded_at", "content_hash", "hash", "prev_hash", "validation_status"}}
	tStates = table{"thread_step_states", []string{"thread_id", "step_name", "idempotency_key", "status", "latest_step_id", "actor",
		"actor_service", "first_seen_at", "last_updated_at", "started_at", "finished_at"}}
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
}

// gen draws the seed deterministically, so runs at the same size seed the
// same data.
type gen struct {
	r      *rand.Rand
	n      int
	start  time.Time
	span   time.Duration
	noteSq int64
	// notesAfter: steps recorded before it have no notification rows left
	// (acknowledged at once, then pruned by the hub after the default
	// notifications.settled_retention).
	notesAfter time.Time
	pm         map[pmKey]*pmRow // the process map roll-ups (processmap.go)
	// hoursAfter: the process map's hour rows before it were deleted by
	// the engine's roll-up job (ports.ProcessMapHourlyPruned); their days'
	// rows stay.
	hoursAfter time.Time
	// stepsFrom: threads before it are written without their steps
	// (--steps-last), so a database of 10 M threads fits a disk that holds
	// the steps of a million: their rows, refs and tags are all there for
	// the lists, searches and counts.
	stepsFrom int
}

// noSteps drops a thread's step rows (attempts, states, validations,
// notifications) and keeps the rest.
type noSteps struct{ sink }

func (n noSteps) add(t table, vals ...any) error {
	switch t.name {
	case tActivities.name, tStates.name, tValidations.name, tNotifications.name:
		return nil
	}
	return n.sink.add(t, vals...)
}

func newGen(n int, now time.Time) *gen {
	return &gen{r: rand.New(rand.NewPCG(28, uint64(n))), n: n, start: now.Add(-30 * 24 * time.Hour), span: 30*24*time.Hour - time.Hour,
		notesAfter: now.Add(-24 * time.Hour), hoursAfter: ports.ProcessMapHourlyPruned(now)}
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// uuidAt is a UUIDv7 of t, as the engine makes the ids of the rows a step
// writes (app/threads timeOrderedID): t's Unix milliseconds, then g's
// random bits (as many drawn as uuid draws, so the rest of the seed is the
// same either way).
func (g *gen) uuidAt(t time.Time) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
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
	withSteps := i >= g.stepsFrom
	if !withSteps {
		s = noSteps{s}
	}
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
		started := at
		stepID := g.uuidAt(started)
		at = at.Add(time.Duration(50+g.r.IntN(5000)) * time.Millisecond)
		prevAt, prevStep := time.Time{}, ""
		if s0 > 1 {
			prevAt, prevStep = started, fmt.Sprintf("step-%d", s0-1)
		}
		if withSteps {
			g.pmStep(cname, cversion, id, prevStep, name, started, at, prevAt)
		}
		st := "success"
		if status == "failed" && s0 == steps {
			st = "failed"
			failedSteps++
			health = "FAILED"
		}
		vstatus, issues := "passed", `[]`
		if violated && s0 == 2 {
			vstatus = "violated"
			issues = `[{"type":"content_rule","severity":"critical","message":"amount must be positive","field":"amount"}]`
			critical++
			health = "VIOLATED"
			issueStep, issueType, issueMsg, issueSev = name, "content_rule", "amount must be positive", "critical"
		}
		// A governed step's passed result without issues is its attempt's
		// validation_status, with no row, as the engine writes it since
		// migration 00102; the violated ones are rows.
		var compact any
		if cname != "" && vstatus == "passed" {
			compact = vstatus
		}
		h := g.hash()
		if err := s.add(tActivities, stepID, id, s0, name, key, st, 1, sa, service, ctxJSON, len(ctxJSON), `{}`, started, at, at, g.hash(), h, prev,
			compact); err != nil {
			return "", err
		}
		prev = h
		if err := s.add(tStates, id, name, key, st, stepID, sa, service, started, at, started, at); err != nil {
			return "", err
		}
		if cname != "" {
			vid := g.uuidAt(at) // drawn either way: the rest of the seed does not depend on the form
			if compact == nil {
				if err := s.add(tValidations, vid, id, stepID, name, key, vstatus, issues, 1, 0, at); err != nil {
					return "", err
				}
			}
		}
		for _, src := range []string{"execution", "validation"} {
			nid := g.uuidAt(at) // drawn either way: the rest of the seed does not depend on what is kept
			if at.Before(g.notesAfter) {
				continue
			}
			g.noteSq++
			sev, vst := "info", ""
			if src == "validation" {
				vst = vstatus
				if vstatus == "violated" {
					sev = "critical"
				}
			}
			if err := s.add(tNotifications, nid, g.noteSq, id, stepID, name, key, cname, sa, src, src+"."+st, st, vst, sev,
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

// batch holds the rows of a batch of threads, per table; the generator
// fills one while the previous one is written.
type batch map[string][][]any

func (b batch) add(t table, vals ...any) error {
	b[t.name] = append(b[t.name], vals)
	return nil
}

// writePG copies a batch with COPY in one transaction, table by table in
// seedTables' order (threads before their children).
func writePG(db *sqldb.DB, b batch) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit a no-op
	// A bulk load's commit need not wait for the WAL flush.
	if _, err := tx.Exec(`SET LOCAL synchronous_commit = off`); err != nil {
		return err
	}
	for _, t := range seedTables {
		st, err := tx.Prepare(`COPY ` + t.name + ` (` + strings.Join(t.cols, ", ") + `) FROM STDIN`)
		if err != nil {
			return err
		}
		for _, r := range b[t.name] {
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
	return tx.Commit()
}

// writeSQLite inserts a batch with multi-row INSERTs in one transaction.
func writeSQLite(db *sqldb.DB, b batch) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit a no-op
	for _, t := range seedTables {
		// Multi-row INSERTs of up to 30,000 parameters each, the full-size
		// statement prepared once per table and batch.
		rows := b[t.name]
		per := 30000 / len(t.cols)
		mark := "(" + strings.TrimSuffix(strings.Repeat("?,", len(t.cols)), ",") + ")"
		stmts := map[int]*sql.Stmt{}
		for len(rows) > 0 {
			k := min(per, len(rows))
			st := stmts[k]
			if st == nil {
				q := `INSERT INTO ` + t.name + ` (` + strings.Join(t.cols, ",") + `) VALUES ` + strings.TrimSuffix(strings.Repeat(mark+",", k), ",")
				if st, err = tx.Prepare(q); err != nil {
					return fmt.Errorf("insert %s: %w", t.name, err)
				}
				defer st.Close()
				stmts[k] = st
			}
			args := make([]any, 0, k*len(t.cols))
			for _, r := range rows[:k] {
				args = append(args, r...)
			}
			if _, err := st.Exec(args...); err != nil {
				return fmt.Errorf("insert %s: %w", t.name, err)
			}
			rows = rows[k:]
		}
	}
	return tx.Commit()
}

// seed writes n threads in batches and returns one thread id per batch
// (query subjects) and how long it took. It loads in bulk, as a restore
// does: the seeded tables' secondary indexes (and on PostgreSQL their keys
// and foreign keys) are dropped first and built again at the end, each in
// one sorted pass instead of a random insert per row; PostgreSQL's COPY
// commits without waiting for the WAL flush, SQLite's transactions run with
// synchronous=OFF and foreign keys off (the generator writes parents
// first; PostgreSQL checks every foreign key when it adds it back). The
// generator fills the next batch while the last one is written.
func seed(ctx context.Context, db *sqldb.DB, n, stepsLast int, now time.Time, progress func(done int)) ([]string, time.Duration, error) {
	write := writeSQLite
	drop := dropSQLiteIndexes
	if db.Dialect == sqldb.Postgres {
		write, drop = writePG, dropPGIndexes
	}
	began := time.Now()
	restore, err := drop(ctx, db)
	if err != nil {
		return nil, 0, err
	}
	const per = 5000
	type job struct {
		b    batch
		done int
	}
	jobs := make(chan job, 1)
	var sample []string
	genErr := make(chan error, 1)
	g := newGen(n, now) // the generator's until jobs is closed
	if stepsLast > 0 && stepsLast < n {
		g.stepsFrom = n - stepsLast
	}
	go func() {
		defer close(jobs)
		b := batch{}
		for i := 0; i < n; i++ {
			id, err := g.thread(b, i)
			if err != nil {
				genErr <- err
				return
			}
			if (i+1)%per == 0 || i == n-1 {
				if i >= g.stepsFrom { // thread(id)'s subject has steps
					sample = append(sample, id)
				}
				select {
				case jobs <- job{b, i + 1}:
				case <-ctx.Done():
					genErr <- ctx.Err()
					return
				}
				b = batch{}
			}
		}
		genErr <- nil
	}()
	for j := range jobs {
		if err := write(db, j.b); err != nil {
			for range jobs { // let the generator finish
			}
			return nil, 0, err
		}
		progress(j.done)
	}
	if err := <-genErr; err != nil {
		return nil, 0, err
	}
	if _, err := g.writeProcessMap(ctx, db); err != nil {
		return nil, 0, err
	}
	if err := restore(); err != nil {
		return nil, 0, err
	}
	return sample, time.Since(began), nil
}

func seedTableNames() []string {
	names := make([]string, len(seedTables))
	for i, t := range seedTables {
		names[i] = t.name
	}
	return names
}

// dropPGIndexes drops the seeded tables' secondary indexes, primary keys,
// unique constraints and foreign keys (and the foreign keys of other
// tables that reference them) and returns what adds them back: keys and
// indexes first, then the foreign keys, each checked in one pass.
func dropPGIndexes(ctx context.Context, db *sqldb.DB) (func() error, error) {
	names := pq.Array(seedTableNames())
	type def struct {
		Table string `db:"tbl"`
		Name  string `db:"name"`
		Def   string `db:"def"`
	}
	var cons []def
	if err := db.SelectContext(ctx, &cons, `SELECT c.conrelid::regclass::text AS tbl, c.conname AS name, pg_get_constraintdef(c.oid) AS def
 FROM pg_constraint c WHERE c.contype IN ('p', 'u', 'f') AND c.connamespace = current_schema()::regnamespace
 AND (c.conrelid::regclass::text = ANY($1) OR (c.contype = 'f' AND c.confrelid::regclass::text = ANY($1)))
 ORDER BY c.contype = 'f' DESC`, names); err != nil {
		return nil, err
	}
	var idx []def
	if err := db.SelectContext(ctx, &idx, `SELECT tablename AS tbl, indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = current_schema()
 AND tablename = ANY($1) AND indexname NOT IN (SELECT conname FROM pg_constraint)`, names); err != nil {
		return nil, err
	}
	for _, c := range cons { // foreign keys first (they depend on the keys)
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+c.Table+` DROP CONSTRAINT `+pq.QuoteIdentifier(c.Name)); err != nil {
			return nil, err
		}
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
		if _, err := conn.ExecContext(ctx, `SET maintenance_work_mem = '512MB'`); err != nil {
			return err
		}
		began := time.Now()
		for i := len(cons) - 1; i >= 0; i-- { // keys before the foreign keys that need them
			c := cons[i]
			if _, err := conn.ExecContext(ctx, `ALTER TABLE `+c.Table+` ADD CONSTRAINT `+pq.QuoteIdentifier(c.Name)+` `+c.Def); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		for _, x := range idx {
			if _, err := conn.ExecContext(ctx, x.Def); err != nil {
				return fmt.Errorf("%s: %w", x.Name, err)
			}
		}
		fmt.Printf("  built %d indexes and %d keys again in %s\n", len(idx), len(cons), time.Since(began).Round(time.Second))
		return nil
	}, nil
}

// dropSQLiteIndexes drops the seeded tables' secondary indexes (the ones
// created by CREATE INDEX; keys stay) and relaxes durability and foreign
// keys for the load; what it returns builds the indexes again and restores
// both pragmas.
func dropSQLiteIndexes(ctx context.Context, db *sqldb.DB) (func() error, error) {
	// One connection (sqldb opens SQLite with one), so the pragmas hold
	// for every batch.
	for _, q := range []string{`PRAGMA synchronous = OFF`, `PRAGMA foreign_keys = OFF`, `PRAGMA cache_size = -262144`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	var idx []struct {
		Name string `db:"name"`
		SQL  string `db:"sql"`
	}
	q := `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (?` +
		strings.Repeat(",?", len(seedTables)-1) + `)`
	args := make([]any, len(seedTables))
	for i, t := range seedTables {
		args[i] = t.name
	}
	if err := db.SelectContext(ctx, &idx, q, args...); err != nil {
		return nil, err
	}
	for _, x := range idx {
		if _, err := db.ExecContext(ctx, `DROP INDEX "`+x.Name+`"`); err != nil {
			return nil, err
		}
	}
	return func() error {
		began := time.Now()
		for _, x := range idx {
			if _, err := db.ExecContext(ctx, x.SQL); err != nil {
				return fmt.Errorf("%s: %w", x.Name, err)
			}
		}
		fmt.Printf("  built %d indexes again in %s\n", len(idx), time.Since(began).Round(time.Second))
		for _, q := range []string{`PRAGMA synchronous = NORMAL`, `PRAGMA foreign_keys = ON`} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
