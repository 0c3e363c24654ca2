// Command scale measures the read side at a year's worth of threads (issue
// 28). It seeds N realistic threads straight into a fresh database through
// the engine's own schema (seed.go), then runs every request of the issue's
// table end to end through GraphQL — the engine's read path in this
// process: threadquery → readmodel → graphqlapi, as the server wires it —
// and prints median and p95 per request, the database size per million
// threads and the retention sweep's speed.
//
//	go run ./test/load/scale --db 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' --threads 100000
//	go run ./test/load/scale --threads 100000            # SQLite in a temporary file
//	go run ./test/load/scale --db sqlite:///var/tmp/scale.db --threads 100000 --keep
//
// --keep keeps the database; --reuse measures a kept one again (after this
// binary's migrations) without seeding it.
//
// With --db postgres://…/name the tool creates a fresh database named
// scale_<n> on that server (dropped at the end unless --keep). Figures are
// recorded in docs/contributors/performance.md.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lib/pq"

	"github.com/threadengine/engine/adapters/graphqlapi"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
)

func main() {
	dbURL := flag.String("db", "", "PostgreSQL server URL (a fresh database is created on it); empty: SQLite in a temporary file")
	n := flag.Int("threads", 100_000, "threads to seed")
	reps := flag.Int("reps", 20, "timed runs per request (after 2 warm-up runs)")
	keep := flag.Bool("keep", false, "keep the database")
	name := flag.String("name", "", "PostgreSQL database to create (default scale_<threads>; pick your own when others run the tool on the same server)")
	reuse := flag.Bool("reuse", false, "measure a kept database (scale_<n>, or the --db sqlite:// file) again instead of seeding it anew")
	sweep := flag.Float64("sweep", 0.1, "fraction of threads the retention sweep deletes at the end (0: no sweep)")
	sweepBatch := flag.Int("sweep-batch", 100, "threads per retention batch (retention.batch_size)")
	stepsLast := flag.Int("steps-last", 0, "write steps only for the newest N threads (0: all); the older ones get their rows, refs and tags, so a large database fits the disk for the lists, searches and counts (storage per million threads is then not comparable)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	flag.StringVar(&only, "only", "", "time only the requests whose name contains this text")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := run(*dbURL, *name, *n, *reps, *keep, *reuse, *sweep, *sweepBatch, *stepsLast); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(server, name string, n, reps int, keep, reuse bool, sweepFrac float64, sweepBatch, stepsLast int) error {
	ctx := context.Background()
	dbURL, drop, err := freshDatabase(ctx, server, name, n, keep, reuse)
	if err != nil {
		return err
	}
	defer drop()
	db, err := sqldb.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	now := time.Now().UTC()
	fmt.Printf("scale: %s, %d threads, machine: %s\n", db.Dialect, n, machine())
	var have int
	if reuse {
		if err := db.GetContext(ctx, &have, `SELECT COUNT(*) FROM threads`); err != nil {
			return err
		}
	}
	var sample []string
	if have > 0 {
		// A kept database (--keep, then --reuse): measure it again, after
		// this binary's migrations, without seeding.
		var mid string
		at := have / 2
		if stepsLast > 0 && stepsLast < have { // the middle of the threads with steps
			at = have - stepsLast/2
		}
		if err := db.GetContext(ctx, &mid, db.Rebind(`SELECT id FROM threads ORDER BY created_at, id LIMIT 1 OFFSET ?`), at); err != nil {
			return err
		}
		sample = []string{mid}
		n = have
		fmt.Printf("reusing %d seeded threads\n", have)
	} else {
		var took time.Duration
		sample, took, err = seed(ctx, db, n, stepsLast, now, func(done int) {
			if done%100_000 == 0 {
				fmt.Printf("  seeded %d (%s)\n", done, machine())
			}
		})
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		fmt.Printf("seeded %d threads in %s (%.0f threads/s)\n", n, took.Round(time.Second), float64(n)/took.Seconds())
	}
	phase := time.Now()
	if err := analyze(ctx, db); err != nil {
		return err
	}
	fmt.Printf("  analyzed in %s\n", time.Since(phase).Round(time.Second))
	phase = time.Now()
	store := threadquery.New(db)
	defer store.Close()
	// The engine rolls up in the background, a day per call.
	if err := store.CatchUp(ctx, now); err != nil {
		return fmt.Errorf("roll-up: %w", err)
	}
	fmt.Printf("  rolled up in %s, machine: %s\n", time.Since(phase).Round(time.Second), machine())
	// The catch-up folded a contract-stats delta row per seeded thread
	// and rewrote roll-up rows: VACUUM again, as autovacuum would on a
	// live server (the CI server runs without it), so the size and the
	// roll-up reads are those of a database in its steady state.
	phase = time.Now()
	if err := analyze(ctx, db); err != nil {
		return err
	}
	fmt.Printf("  vacuumed (SQLite: analyzed) after the roll-up in %s\n", time.Since(phase).Round(time.Second))
	h, err := graphqlapi.New(readmodel.New(readmodel.Deps{Store: store, Stats: store, Problems: store, ProcessMaps: store,
		Contracts: seedContracts{}}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	admin := authz.WithPrincipal(ctx, domain.Principal{Kind: domain.PrincipalUser, ID: "scale", Role: domain.RoleAdmin})
	exec := func(q string, vars map[string]any) (map[string]any, error) {
		res, status := h.Execute(admin, graphqlapi.Request{Query: q, Variables: vars})
		if status != 200 || len(res.Errors) > 0 {
			return nil, fmt.Errorf("HTTP %d %v", status, res.Errors)
		}
		var m map[string]any
		b, _ := json.Marshal(res.Data)
		_ = json.Unmarshal(b, &m)
		return m, nil
	}
	reqs, err := requests(exec, sample, n)
	if err != nil {
		return err
	}
	if reps < 1 { // --reps 0: only the size and the sweep
		reqs = nil
	}
	if only != "" {
		reqs = slices.DeleteFunc(reqs, func(r request) bool { return !strings.Contains(r.name, only) })
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "request\tmedian\tp95\trows\t\n")
	// The machine's noise floor: one trivial statement through the same pool.
	if reps > 0 {
		var ds []time.Duration
		for i := 0; i < reps+2; i++ {
			began := time.Now()
			var one int
			if err := db.GetContext(ctx, &one, `SELECT 1`); err != nil {
				return err
			}
			if i >= 2 {
				ds = append(ds, time.Since(began))
			}
		}
		slices.Sort(ds)
		fmt.Fprintf(w, "baseline: SELECT 1\t%s\t%s\t1\t\n", ms(ds[len(ds)/2]), ms(ds[(len(ds)*95+99)/100-1]))
	}
	for _, r := range reqs {
		var ds []time.Duration
		rows := 0
		for i := 0; i < reps+2; i++ {
			began := time.Now()
			m, err := exec(r.query, r.vars)
			if err == nil && r.then != "" { // the page's second request
				var m2 map[string]any
				if m2, err = exec(r.then, r.vars); err == nil {
					m = m2
				}
			}
			d := time.Since(began)
			if err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			rows = r.rows(m)
			if i >= 2 {
				ds = append(ds, d)
			}
		}
		slices.Sort(ds)
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t\n", r.name, ms(ds[len(ds)/2]), ms(ds[(len(ds)*95+99)/100-1]), rows)
	}
	_ = w.Flush()
	size, err := dbSize(ctx, db, dbURL)
	if err != nil {
		return err
	}
	fmt.Printf("database: %.1f MiB, %.2f GiB per million threads\n", float64(size)/(1<<20), float64(size)/float64(n)*1e6/(1<<30))
	if sweepFrac > 0 {
		if err := sweep(ctx, db, now, n, sweepFrac, sweepBatch); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	return nil
}

// only keeps the requests whose name contains it (--only).
var only string

// request is one measured GraphQL request; rows counts what it returned.
type request struct {
	name  string
	query string
	vars  map[string]any
	rows  func(map[string]any) int // of the last query's answer
	then  string                   // a second query timed with it (a page's pair)
}

// uiFields are the thread list page's fields (web/assets/views/threads.js).
const uiFields = `id label contractName contractVersion status startedAt refs error tags durationMs health { status firstIssue { stepName message } }`

func conn(field string) func(map[string]any) int {
	return func(m map[string]any) int {
		c, _ := m[field].(map[string]any)
		l, _ := c["threads"].([]any)
		return len(l)
	}
}

func list(field string) func(map[string]any) int {
	return func(m map[string]any) int {
		l, _ := m[field].([]any)
		return len(l)
	}
}

// requests are the table, with subjects drawn from the seed.
func requests(exec func(string, map[string]any) (map[string]any, error), sample []string, n int) ([]request, error) {
	// A cursor 10,000 threads deep, for the keyset page beside the offset one.
	deep, err := exec(`{ threads(limit: 1, offset: 9999) { pageInfo { endCursor } } }`, nil)
	if err != nil {
		return nil, err
	}
	cursor, _ := deep["threads"].(map[string]any)["pageInfo"].(map[string]any)["endCursor"].(string)
	one := refValue(n / 2)
	if n > 23456 {
		one = "ord-123456"
	}
	uiQuery := `query($limit: Int, $offset: Int) { threads(limit: $limit, offset: $offset) { totalCount totalCountIsExact pageInfo { hasNextPage } threads { ` + uiFields + ` } } }`
	return []request{
		{"thread(id) with steps", `query($id: ID!) { thread(id: $id) { id status refs steps { stepName status retryCount history(limit: 1) { attempt } } subSteps: steps { stepName } } }`,
			map[string]any{"id": sample[len(sample)/2]}, func(m map[string]any) int {
				t, _ := m["thread"].(map[string]any)
				l, _ := t["steps"].([]any)
				return len(l)
			}, ""},
		{"threads(limit: 50) + totalCount", `{ threads(limit: 50) { totalCount threads { id status contractName startedAt completedAt } } }`, nil, conn("threads"), ""},
		{"threads(limit: 50), no totalCount", `{ threads(limit: 50) { threads { id status contractName startedAt completedAt } } }`, nil, conn("threads"), ""},
		{"threads(offset: 10000)", `{ threads(limit: 50, offset: 10000) { threads { id } } }`, nil, conn("threads"), ""},
		{"threads(after: cursor 10000 deep)", `query($c: String) { threads(limit: 50, after: $c) { threads { id } } }`, map[string]any{"c": cursor}, conn("threads"), ""},
		{"threads(orderBy: DURATION)", `{ threads(limit: 50, orderBy: DURATION) { threads { id durationMs } } }`, nil, conn("threads"), ""},
		{"threadsByRef(refValue) one match", `query($v: String!) { threadsByRef(refValue: $v) { totalCount threads { id refs } } }`, map[string]any{"v": one}, conn("threadsByRef"), ""},
		{"threads(refKey, refValue) one match", `query($v: String) { threads(refKey: "orderId", refValue: $v) { totalCount threads { id } } }`, map[string]any{"v": one}, conn("threads"), ""},
		{"threads(idPrefix: \"ab\")", `{ threads(limit: 50, idPrefix: "ab") { totalCount threads { id } } }`, nil, conn("threads"), ""},
		{"threads(tag: \"priority\")", `{ threads(limit: 50, tag: "priority") { totalCount threads { id } } }`, nil, conn("threads"), ""},
		{"threads(health: [VIOLATED])", `{ threads(limit: 50, health: [VIOLATED]) { totalCount threads { id } } }`, nil, conn("threads"), ""},
		{"threadsByContract", `{ threadsByContract(contractName: "contract-3", limit: 50) { totalCount threads { id } } }`, nil, conn("threadsByContract"), ""},
		{"threadsByContract(version 2, failed)", `{ threadsByContract(contractName: "contract-3", contractVersion: 2, status: "failed", limit: 50) { totalCount threads { id } } }`, nil, conn("threadsByContract"), ""},
		{"contractStats", `{ contractStats { name version threads active completed failed violated } }`, nil, list("contractStats"), ""},
		{"stepStats", `{ stepStats(contractName: "contract-3") { stepName attempts failed violated warnings } }`, nil, list("stepStats"), ""},
		{"UI thread list page (50)", uiQuery, map[string]any{"limit": 50, "offset": 0}, conn("threads"), ""},
		{"problems (24 h)", problemsQuery, map[string]any{"hours": 24}, problemGroups, ""},
		{"problems (30 days)", problemsQuery, map[string]any{"hours": 720}, problemGroups, ""},
		{"processMap nodes+edges (24 h)", processMapNodes, map[string]any{"from": nil}, processEdges, processMapEdges},
		{"processMap nodes+edges (7 days)", processMapNodes, map[string]any{"from": time.Now().Add(-7 * 24 * time.Hour).UTC().Format(time.RFC3339)}, processEdges, processMapEdges},
		{"processMap nodes+edges (30 days)", processMapNodes, map[string]any{"from": time.Now().Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339)}, processEdges, processMapEdges},
	}, nil
}

// The Problems view's and the process map's queries (web/assets/views/
// problems.js, processmap.js: the map's two requests, each under the
// complexity limit, timed one after the other).
const (
	problemsQuery = `query($hours: Int) { problems(hours: $hours) { since until bucketHours buckets total truncated
  groups { contractName contractVersion rule step messageClass count trend exampleThreadId } } }`
	processMapNodes = `query($from: String) { processMap(contractName: "contract-3", version: 2, from: $from) {
  since until started neverReached nodes { step count p50Ms p95Ms inContract } } }`
	processMapEdges = `query($from: String) { processMap(contractName: "contract-3", version: 2, from: $from) {
  edges { from to count p50Ms p95Ms allowed exampleThreadId } } }`
)

func problemGroups(m map[string]any) int {
	p, _ := m["problems"].(map[string]any)
	l, _ := p["groups"].([]any)
	return len(l)
}

func processEdges(m map[string]any) int {
	p, _ := m["processMap"].(map[string]any)
	l, _ := p["edges"].([]any)
	return len(l)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// sweep ages a fraction of the ended threads past retention and times the
// retention store's batches (ExpiredThreads + DeleteThreads, --sweep-batch a batch, as
// app/ops.Retention runs them).
func sweep(ctx context.Context, db *sqldb.DB, now time.Time, n int, frac float64, batch int) error {
	old := sqldb.Time(now.Add(-400 * 24 * time.Hour))
	want := int(float64(n) * frac)
	if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE threads SET updated_at = ? WHERE id IN
 (SELECT id FROM threads WHERE status <> 'active' ORDER BY created_at LIMIT ?)`), old, want); err != nil {
		return err
	}
	if err := analyze(ctx, db); err != nil {
		return err
	}
	st := threadstore.New(db)
	cutoff := now.Add(-365 * 24 * time.Hour)
	began := time.Now()
	deleted := 0
	for {
		ids, err := st.ExpiredThreads(ctx, cutoff, time.Time{}, batch)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		gone, err := st.DeleteThreads(ctx, ids)
		if err != nil {
			return err
		}
		deleted += len(gone)
	}
	d := time.Since(began)
	fmt.Printf("sweep: deleted %d threads in %s (%.0f threads/s, %d a batch), machine: %s\n", deleted, d.Round(time.Millisecond),
		float64(deleted)/d.Seconds(), batch, machine())
	return nil
}

// analyze brings the planner's statistics (and on PostgreSQL the
// visibility map, which index-only scans need) to where autovacuum keeps a
// live database.
func analyze(ctx context.Context, db *sqldb.DB) error {
	q := `ANALYZE`
	if db.Dialect == sqldb.Postgres {
		q = `VACUUM (ANALYZE)`
	}
	_, err := db.ExecContext(ctx, q)
	return err
}

func dbSize(ctx context.Context, db *sqldb.DB, dbURL string) (int64, error) {
	var n int64
	if db.Dialect == sqldb.Postgres {
		err := db.GetContext(ctx, &n, `SELECT pg_database_size(current_database())`)
		return n, err
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	fi, err := os.Stat(strings.TrimPrefix(dbURL, "sqlite://"))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// freshDatabase creates an empty database: scale_<n> on the PostgreSQL
// server, or a temporary SQLite file.
func freshDatabase(ctx context.Context, server, name string, n int, keep, reuse bool) (string, func(), error) {
	if f, ok := strings.CutPrefix(server, "sqlite://"); ok {
		if !reuse {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(f + suffix)
			}
		}
		return server, func() {
			if !keep {
				for _, suffix := range []string{"", "-wal", "-shm"} {
					_ = os.Remove(f + suffix)
				}
			}
		}, nil
	}
	if server == "" {
		dir, err := os.MkdirTemp("", "threadengine-scale-")
		if err != nil {
			return "", nil, err
		}
		return "sqlite://" + filepath.Join(dir, "scale.db"), func() {
			if !keep {
				_ = os.RemoveAll(dir)
			}
		}, nil
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", nil, err
	}
	admin, err := sql.Open("postgres", server)
	if err != nil {
		return "", nil, err
	}
	if name == "" {
		name = fmt.Sprintf("scale_%d", n)
	}
	quoted := pq.QuoteIdentifier(name)
	var exists bool
	if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", nil, err
	}
	if !reuse || !exists {
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoted); err != nil {
			return "", nil, err
		}
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+quoted); err != nil {
			return "", nil, err
		}
	}
	u.Path = "/" + name
	return u.String(), func() {
		if !keep {
			_, _ = admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoted+` WITH (FORCE)`)
		}
		_ = admin.Close()
	}, nil
}

func machine() string {
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d CPUs, load %s", runtime.NumCPU(), load)
}
