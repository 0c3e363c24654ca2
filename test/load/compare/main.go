// Command compare measures the engine against PostgreSQL alone on the same
// database, side by side: pgbench and the engine's load harnesses run
// interleaved, round after round, and it prints each figure and each
// engine/pgbench ratio with its min, median and max. It is a measuring tool,
// not a test.
//
//	go run ./test/load/compare [--pg postgres://postgres@127.0.0.1:5432/test?sslmode=disable] [--rounds 3] [--duration 15s]
//
// Per round, on one fresh database (created as threadengine_compare and
// dropped afterwards unless --keep):
//
//   - ingest: pgbench single-row INSERT at --write-conns clients vs the
//     engine's acknowledged steps/s (test/load/ingest, --write-conns SDK
//     connections each awaiting its step);
//   - thread(id) with 20 steps: pgbench of the statements the engine runs
//     for it vs the engine's req/s (test/load/graphql), --read-conns each;
//   - threads(limit: 50): the same.
//
// With --sweep it measures instead ingestion's latency (p50, p99) during a
// retention sweep of --sweep-frac of --sweep-threads seeded threads against
// ingestion without one, interleaved, on PostgreSQL or (--store sqlite) on
// SQLite in a temporary file (sweep.go):
//
//	go run ./test/load/compare --sweep --sweep-threads 1000000 --sweep-batch 1000
//	go run ./test/load/compare --sweep --store sqlite --sweep-threads 100000
//
// The statements pgbench replays are captured from the engine's own read
// path (see statements.go). Only loopback PostgreSQL is accepted.
//
// An interrupt (Ctrl-C, SIGINT or SIGTERM) at any moment stops the tool
// cleanly: the run in progress is cut short, the engines it started are
// stopped, the database dropped (unless --keep) and the temporary
// directory removed; a second interrupt kills it at once.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq"

	"github.com/threadengine/engine/adapters/graphqlapi"
	"github.com/threadengine/engine/test/load/loadgen"
)

const dbName = "threadengine_compare"

type config struct {
	pg         *url.URL
	rounds     int
	duration   time.Duration
	writeConns int
	readConns  int
	bin        string
	keep       bool
	profiles   string // directory for CPU profiles of the engine runs
	pprofAddr  string
	dir        string
	db         *sql.DB // the measured database, for backend CPU samples
	// sweepBatch and sweepPause set retention.batch_size and
	// retention.batch_pause of the sweeping engine (--sweep; 0 and -1: the
	// engine's defaults).
	sweepBatch int
	sweepPause time.Duration
	// With --sweep: the store, the threads seeded and the fraction of them
	// each round adds expired and sweeps.
	store        string
	sweepThreads int
	sweepFrac    float64
}

func main() {
	// Caught from the start, so no interrupt kills the tool between
	// creating something and arranging its cleanup (the harnesses and
	// engines it starts catch theirs themselves): every step takes ctx, and
	// the cleanups run as run and runSweep return. Once it fired, the
	// default action is back: a second interrupt kills at once.
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stopSignals)
	var (
		pgURL = flag.String("pg", envOr("THREADENGINE_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"),
			"a PostgreSQL URL on loopback; the tool creates and drops its own database "+dbName+" beside it")
		c config
	)
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds")
	flag.DurationVar(&c.duration, "duration", 15*time.Second, "length of each run")
	flag.IntVar(&c.writeConns, "write-conns", 50, "pgbench clients and SDK connections for ingest")
	flag.IntVar(&c.readConns, "read-conns", 1, "pgbench clients and HTTP connections for the reads (above 1 the engine refuses part of its one principal's reads: see performance.md)")
	flag.StringVar(&c.bin, "bin", "", "engine binary (default: build ./cmd/threadengine)")
	flag.BoolVar(&c.keep, "keep", false, "keep the database afterwards")
	flag.IntVar(&c.sweepBatch, "sweep-batch", 0, "with --sweep: retention.batch_size of the sweeping engine (0: its default)")
	flag.DurationVar(&c.sweepPause, "sweep-pause", -1, "with --sweep: retention.batch_pause of the sweeping engine (negative: its default)")
	sweep := flag.Bool("sweep", false, "instead: ingestion latency with and without a retention sweep running, interleaved (see sweep.go)")
	flag.StringVar(&c.store, "store", "postgres", "with --sweep: postgres (a database beside --pg) or sqlite (a temporary file)")
	flag.IntVar(&c.sweepThreads, "sweep-threads", 100_000, "with --sweep: ended threads of 10 steps seeded (12 hours old)")
	flag.Float64Var(&c.sweepFrac, "sweep-frac", 0.1, "with --sweep: each round adds this fraction of --sweep-threads, expired, and sweeps it")
	flag.StringVar(&c.profiles, "profiles", "", "write a CPU profile of the engine for each engine run into this directory (go tool pprof <binary> <file>)")
	flag.Parse()
	u, err := url.Parse(*pgURL)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		fail("--pg must be a postgres:// URL")
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fail("only a loopback PostgreSQL is measured")
	}
	if c.rounds < 1 || c.duration <= 0 || c.duration > 5*time.Minute || c.writeConns < 1 || c.readConns < 1 {
		fail("--rounds >= 1, --duration in (0, 5m], --write-conns and --read-conns >= 1")
	}
	if c.store != "postgres" && (c.store != "sqlite" || !*sweep) {
		fail("--store is postgres, or sqlite with --sweep")
	}
	if c.sweepThreads < 1 || c.sweepFrac <= 0 || c.sweepFrac > 1 {
		fail("--sweep-threads >= 1, --sweep-frac in (0, 1]")
	}
	if _, err := exec.LookPath("pgbench"); err != nil && !*sweep {
		fail("pgbench is not installed (Debian: apt-get install postgresql-client or postgresql-contrib)")
	}
	c.pg = u
	if c.dir, err = os.MkdirTemp("", "threadengine-compare-"); err != nil {
		fail(err.Error())
	}
	do := run
	if *sweep {
		do = runSweep
	}
	err = do(ctx, c)
	os.RemoveAll(c.dir) // before fail's os.Exit, which skips deferred calls
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "compare: interrupted, cleaned up (%v)\n", err)
		os.Exit(130)
	case err != nil:
		fail(err.Error())
	}
}

// prepared is what every scenario starts from: the binaries built and a
// fresh database, open in c.db.
type prepared struct {
	bins  binaries
	dbURL string
	dbu   url.URL
}

// prepare builds the binaries and creates the database; cleanup closes it
// and drops it (unless --keep).
func prepare(ctx context.Context, c *config) (prepared, func(), error) {
	bins, err := build(ctx, *c)
	if err != nil {
		return prepared{}, nil, err
	}
	admin, dbURL, drop, err := freshDatabase(ctx, *c)
	if err != nil {
		return prepared{}, nil, err
	}
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		drop()
		admin.Close()
		return prepared{}, nil, err
	}
	c.db = db
	dbu := *c.pg
	dbu.Path = "/" + dbName
	return prepared{bins: bins, dbURL: dbURL, dbu: dbu}, func() { db.Close(); drop(); admin.Close() }, nil
}

func run(ctx context.Context, c config) error {
	p, cleanup, err := prepare(ctx, &c)
	if err != nil {
		return err
	}
	defer cleanup()
	bins, dbURL, dbu, db := p.bins, p.dbURL, p.dbu, c.db

	// The per-principal read limits (issue 25) share a replica's reads
	// between principals; this comparison's one principal measures the
	// read path's capacity, so its points budget and the expensive
	// operations' share are lifted and its share of the time is the most
	// the configuration allows: one core's time, i.e. one request in
	// flight on average (hence --read-conns 1 by default; above it the
	// engine refuses part of the reads with 429, which the "errors" column
	// counts and the harness's requests/s includes).
	env := []string{"THREADENGINE_LIMITS__GRAPHQL__POINTS_PER_SECOND=1000000000", "THREADENGINE_LIMITS__GRAPHQL__POINTS_BURST=1000000000",
		"THREADENGINE_LIMITS__GRAPHQL__PRINCIPAL_SHARE=1", "THREADENGINE_LIMITS__GRAPHQL__EXPENSIVE_SHARE=1"}
	if c.profiles != "" {
		if err := os.MkdirAll(c.profiles, 0o755); err != nil {
			return err
		}
		env = append(env, "THREADENGINE_SERVER__PPROF_LISTEN=127.0.0.1:0")
	}
	e, err := loadgen.StartEngine(bins.engine, dbURL, "", env...)
	if err != nil {
		return err
	}
	defer e.Stop()
	c.pprofAddr = e.PprofAddr
	threadID, err := loadgen.Seed(e.BaseURL, e.Key, 20)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	for i := 0; i < 50; i++ {
		if _, err := loadgen.Seed(e.BaseURL, e.Key, 1); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	stmts, err := captureStatements(ctx, dbURL, map[string]graphqlapi.Request{
		"thread":  {Query: loadgen.ThreadQuery, Variables: map[string]any{"id": threadID}},
		"threads": {Query: loadgen.ThreadsQuery},
	})
	if err != nil {
		return fmt.Errorf("capture statements: %w", err)
	}
	if _, err := db.ExecContext(ctx, insertTable); err != nil {
		return err
	}
	insert := pgbenchJob{name: "insert", script: insertScript, clients: c.writeConns}
	reads := map[string]pgbenchJob{}
	for name, st := range stmts {
		script, defs := pgbenchScript("p", st)
		reads[name] = pgbenchJob{name: name, script: script, defs: defs, clients: c.readConns}
		fmt.Printf("# %s: %d statement(s) per request, replayed by pgbench:\n%s\n", name, len(st), indent(script))
	}
	fmt.Printf("# machine: %s; load average before: %s\n", machine(), loadavg())

	var rows []row
	for r := 1; r <= c.rounds; r++ {
		// Each pair starts from a vacuumed, analyzed table, whatever the
		// server's autovacuum setting: the writes of the round before leave
		// dead row versions (every step updates its thread's row) that
		// would otherwise slow whichever side runs later.
		if err := vacuum(ctx, db); err != nil {
			return err
		}
		pi, err := runPgbench(ctx, c, dbu, insert)
		if err != nil {
			return err
		}
		ei, err := runIngest(ctx, c, bins, e, fmt.Sprintf("ingest-%d", r))
		if err != nil {
			return err
		}
		rows = append(rows, row{round: r, work: "ingest", pg: pi, engine: ei})
		for _, name := range []string{"thread", "threads"} {
			if err := vacuum(ctx, db); err != nil {
				return err
			}
			pr, err := runPgbench(ctx, c, dbu, reads[name])
			if err != nil {
				return err
			}
			er, err := runGraphQL(ctx, c, bins, e, name, threadID, fmt.Sprintf("%s-%d", name, r))
			if err != nil {
				return err
			}
			rows = append(rows, row{round: r, work: name, pg: pr, engine: er})
		}
		fmt.Printf("# round %d done, load average %s\n", r, loadavg())
	}
	report(os.Stdout, c, rows)
	return nil
}

// freshDatabase (re)creates the measured database beside c.pg; drop removes
// it unless --keep.
func freshDatabase(ctx context.Context, c config) (*sql.DB, string, func(), error) {
	admin, err := sql.Open("postgres", c.pg.String())
	if err != nil {
		return nil, "", nil, err
	}
	for _, q := range []string{`DROP DATABASE IF EXISTS ` + dbName + ` WITH (FORCE)`, `CREATE DATABASE ` + dbName} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			admin.Close()
			return nil, "", nil, err
		}
	}
	drop := func() {
		if !c.keep {
			// Not cancelled with ctx: after an interrupt it still runs.
			_, _ = admin.ExecContext(context.WithoutCancel(ctx), `DROP DATABASE IF EXISTS `+dbName+` WITH (FORCE)`)
		}
	}
	dbu := *c.pg
	dbu.Path = "/" + dbName
	return admin, dbu.String(), drop, nil
}

type binaries struct{ engine, ingest, graphql string }

func build(ctx context.Context, c config) (binaries, error) {
	b := binaries{engine: c.bin, ingest: filepath.Join(c.dir, "ingest"), graphql: filepath.Join(c.dir, "graphql")}
	pkgs := [][2]string{{b.ingest, "./test/load/ingest"}, {b.graphql, "./test/load/graphql"}}
	if b.engine == "" {
		b.engine = filepath.Join(c.dir, "threadengine")
		pkgs = append(pkgs, [2]string{b.engine, "./cmd/threadengine"})
	}
	for _, p := range pkgs {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", p[0], p[1])
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return b, fmt.Errorf("go build %s (run from the repository root): %w", p[1], err)
		}
	}
	return b, nil
}

func vacuum(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `VACUUM (ANALYZE)`)
	return err
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "compare:", msg)
	os.Exit(2)
}

func indent(s string) string {
	return "#   " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n#   ")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func machine() string {
	cores := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cores = strings.Count(string(b), "\nprocessor")
		if strings.HasPrefix(string(b), "processor") {
			cores++
		}
	}
	return fmt.Sprintf("%d cores, %s", cores, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}
