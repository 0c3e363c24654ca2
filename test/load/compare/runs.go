package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadengine/engine/test/load/loadgen"
)

// result is one run: operations per second, the p99 latency where the tool
// reports it, and CPU per operation of the engine and of PostgreSQL.
type result struct {
	rate      float64
	p50, p99  time.Duration // p50: ingest only
	elapsed   time.Duration // ingest only: how long the harness wrote
	engineCPU time.Duration // per operation; 0 for pgbench runs
	pgCPU     time.Duration // per operation, the database's client backends
	rssMiB    int64         // engine peak RSS (ingest only)
	errors    int64
}

type row struct {
	round      int
	work       string
	pg, engine result
}

const insertTable = `CREATE TABLE IF NOT EXISTS compare_insert (
  id bigserial PRIMARY KEY,
  thread_id uuid NOT NULL,
  step_name text NOT NULL,
  status text NOT NULL,
  context jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now())`

// insertScript is PostgreSQL's own floor for ingestion: one single-row
// INSERT per transaction, committed before the client sends the next.
const insertScript = `\set n random(0, 7)
INSERT INTO compare_insert (thread_id, step_name, status, context) VALUES (gen_random_uuid(), 'step-' || :n, 'success', '{"n": "1"}');
`

type pgbenchJob struct {
	name    string
	script  string
	defs    []string
	clients int
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

func runPgbench(ctx context.Context, c config, db url.URL, j pgbenchJob) (result, error) {
	path := filepath.Join(c.dir, j.name+".sql")
	if err := os.WriteFile(path, []byte(j.script), 0o600); err != nil {
		return result{}, err
	}
	port := db.Port()
	if port == "" {
		port = "5432"
	}
	user := "postgres"
	if db.User != nil {
		user = db.User.Username()
	}
	args := []string{"-n", "-M", "prepared", "-h", db.Hostname(), "-p", port, "-U", user,
		"-c", strconv.Itoa(j.clients), "-j", strconv.Itoa(min(j.clients, 2)), "-T", strconv.Itoa(int(c.duration.Seconds())), "-f", path}
	for _, d := range j.defs {
		args = append(args, "-D", d)
	}
	args = append(args, strings.TrimPrefix(db.Path, "/"))
	cpu := startBackendCPU(c.db)
	out, err := exec.CommandContext(ctx, "pgbench", args...).CombinedOutput()
	pgCPU := cpu.Stop()
	if err != nil {
		return result{}, fmt.Errorf("pgbench %s: %w\n%s", j.name, err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return result{}, fmt.Errorf("pgbench %s: no tps in output\n%s", j.name, out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	r := result{rate: tps}
	if ops := tps * c.duration.Seconds(); ops > 0 {
		r.pgCPU = time.Duration(float64(pgCPU) / ops)
	}
	return r, nil
}

var (
	stepsLine    = regexp.MustCompile(`acked_steps=(\d+) errors=(\d+) steps_per_s=([0-9.]+)`)
	ackLatency   = regexp.MustCompile(`ack_latency p50=(\S+) p99=(\S+)`)
	ingestLength = regexp.MustCompile(`conns=\d+ pipeline=\d+ duration=(\S+)`)
	rssPeak      = regexp.MustCompile(`engine_rss_peak=(\d+)MiB`)
	graphqlLine  = regexp.MustCompile(`requests=(\d+) errors=(\d+) req/s=([0-9.]+) .*p99=(\S+)`)
	firstErrLine = regexp.MustCompile(`first error: (.*)`)
)

func runIngest(ctx context.Context, c config, b binaries, e *loadgen.Engine, label string) (result, error) {
	return runIngestUntil(ctx, c, b, e, label, c.duration, nil)
}

// runIngestUntil is runIngest for d, ended early (by SIGINT, the harness
// then reports what it measured so far) when stop is closed.
func runIngestUntil(ctx context.Context, c config, b binaries, e *loadgen.Engine, label string, d time.Duration, stop <-chan struct{}) (result, error) {
	cmd := exec.Command(b.ingest, "--url", e.WSURL, "--key", e.Key, "--conns", strconv.Itoa(c.writeConns),
		"--duration", d.String(), "--pid", strconv.Itoa(e.PID))
	return measureUntil(ctx, c, e, label, cmd, stop, func(out []byte, r *result) (int64, error) {
		m := stepsLine.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("ingest: unexpected output\n%s", out)
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.errors, _ = strconv.ParseInt(string(m[2]), 10, 64)
		r.rate, _ = strconv.ParseFloat(string(m[3]), 64)
		if m := ackLatency.FindSubmatch(out); m != nil {
			r.p50, _ = time.ParseDuration(string(m[1]))
			r.p99, _ = time.ParseDuration(string(m[2]))
		}
		if m := ingestLength.FindSubmatch(out); m != nil {
			r.elapsed, _ = time.ParseDuration(string(m[1]))
		}
		if m := rssPeak.FindSubmatch(out); m != nil {
			r.rssMiB, _ = strconv.ParseInt(string(m[1]), 10, 64)
		}
		return n, nil
	})
}

func runGraphQL(ctx context.Context, c config, b binaries, e *loadgen.Engine, scenario, threadID, label string) (result, error) {
	return measure(ctx, c, e, label, exec.Command(b.graphql, "--url", e.BaseURL, "--key", e.Key, "--conns", strconv.Itoa(c.readConns),
		"--duration", c.duration.String(), "--scenario", scenario, "--thread-id", threadID, "--seed-threads", "0"),
		func(out []byte, r *result) (int64, error) {
			m := graphqlLine.FindSubmatch(out)
			if m == nil {
				return 0, fmt.Errorf("graphql %s: unexpected output\n%s", scenario, out)
			}
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			r.errors, _ = strconv.ParseInt(string(m[2]), 10, 64)
			r.rate, _ = strconv.ParseFloat(string(m[3]), 64)
			r.p99, _ = time.ParseDuration(string(m[4]))
			if m := firstErrLine.FindSubmatch(out); m != nil {
				fmt.Fprintf(os.Stderr, "graphql %s: %s\n", scenario, m[1])
			}
			return n, nil
		})
}

// measure runs a harness and charges the engine's and PostgreSQL's CPU over
// the run to the operations it reports.
func measure(ctx context.Context, c config, e *loadgen.Engine, label string, cmd *exec.Cmd, parse func([]byte, *result) (int64, error)) (result, error) {
	return measureUntil(ctx, c, e, label, cmd, nil, parse)
}

// measureUntil is measure, interrupting the harness (SIGINT) when stop is
// closed before it ends. When ctx ends (the tool is interrupted) the
// harness is interrupted too, waited for, and the run fails with ctx's
// error, so the caller stops its engine and returns.
func measureUntil(ctx context.Context, c config, e *loadgen.Engine, label string, cmd *exec.Cmd, stop <-chan struct{}, parse func([]byte, *result) (int64, error)) (result, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	profiled := profile(c, label)
	e0, cpu := loadgen.CPU(e.PID), startBackendCPU(c.db)
	err := cmd.Start()
	if err == nil {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-stop:
			_ = cmd.Process.Signal(os.Interrupt)
			err = <-done
		case <-ctx.Done():
			_ = cmd.Process.Signal(os.Interrupt)
			<-done
			err = ctx.Err()
		}
	}
	e1, pgCPU := loadgen.CPU(e.PID), cpu.Stop()
	if perr := <-profiled; perr != nil {
		fmt.Fprintf(os.Stderr, "profile %s: %v\n", label, perr)
	}
	if err != nil {
		return result{}, fmt.Errorf("%s: %w\n%s", filepath.Base(cmd.Path), err, out.Bytes())
	}
	var r result
	n, err := parse(out.Bytes(), &r)
	if err != nil {
		return r, err
	}
	if n > 0 {
		r.engineCPU = (e1 - e0) / time.Duration(n)
		r.pgCPU = pgCPU / time.Duration(n)
	}
	return r, nil
}

// profile records a CPU profile of the engine over most of a run (it
// starts with the run and ends a second before it) into c.profiles.
func profile(c config, label string) <-chan error {
	done := make(chan error, 1)
	if c.profiles == "" {
		done <- nil
		return done
	}
	secs := max(1, int(c.duration.Seconds())-1)
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", c.pprofAddr, secs))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(c.profiles, label+".pprof"))
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	return done
}

// backendCPU follows the CPU time of the PostgreSQL client backends
// serving one database while a run goes on. Backends that end during the
// run (pgbench's end with it) are counted up to their last sample, taken
// every 100 ms; other databases' backends (other work on the machine) and
// PostgreSQL's shared background processes are not counted.
type backendCPU struct {
	db    *sql.DB
	stop  chan struct{}
	done  chan struct{}
	start map[int]time.Duration
	last  map[int]time.Duration
}

func startBackendCPU(db *sql.DB) *backendCPU {
	b := &backendCPU{db: db, stop: make(chan struct{}), done: make(chan struct{}), start: map[int]time.Duration{}, last: map[int]time.Duration{}}
	b.sample(true)
	go func() {
		defer close(b.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				b.sample(false)
			}
		}
	}()
	return b
}

func (b *backendCPU) sample(first bool) {
	if b.db == nil { // SQLite: no server backends
		return
	}
	rows, err := b.db.Query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			continue
		}
		c := loadgen.CPU(pid)
		if c == 0 {
			continue
		}
		if _, seen := b.start[pid]; !seen {
			if first {
				b.start[pid] = c
			} else {
				b.start[pid] = 0 // a backend born during the run: all its time counts
			}
		}
		b.last[pid] = c
	}
}

// Stop ends the sampling and returns the CPU the backends used.
func (b *backendCPU) Stop() time.Duration {
	b.sample(false)
	close(b.stop)
	<-b.done
	var total time.Duration
	for pid, c := range b.last {
		total += c - b.start[pid]
	}
	return total
}

// report prints every run, then per work the engine/pgbench ratio's min,
// median and max over the rounds (each ratio from one round's back-to-back
// pair).
func report(w io.Writer, c config, rows []row) {
	fmt.Fprintf(w, "\n# %d round(s) of %s per run; ingest %d clients/connections, reads %d\n", c.rounds, c.duration, c.writeConns, c.readConns)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "round\twork\tpgbench tps\tpg CPU/op\tengine ops/s\tp99\tengine CPU/op\tpg CPU/op\tRSS MiB\terrors\tratio")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%.2f×\n", r.round, r.work, r.pg.rate, us(r.pg.pgCPU),
			r.engine.rate, r.engine.p99.Round(100*time.Microsecond), us(r.engine.engineCPU), us(r.engine.pgCPU), rssText(r.engine.rssMiB),
			r.engine.errors, ratio(r))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "work\tratio min\tmedian\tmax\tengine p99 max\tengine RSS max")
	for _, work := range []string{"ingest", "thread", "threads"} {
		var ratios []float64
		var p99 time.Duration
		var rss int64
		for _, r := range rows {
			if r.work == work {
				ratios = append(ratios, ratio(r))
				p99, rss = max(p99, r.engine.p99), max(rss, r.engine.rssMiB)
			}
		}
		if len(ratios) == 0 {
			continue
		}
		sort.Float64s(ratios)
		fmt.Fprintf(tw, "%s\t%.2f×\t%.2f×\t%.2f×\t%s\t%s\n", work, ratios[0], median(ratios), ratios[len(ratios)-1],
			p99.Round(100*time.Microsecond), rssText(rss))
	}
	tw.Flush()
}

func ratio(r row) float64 {
	if r.pg.rate == 0 {
		return 0
	}
	return r.engine.rate / r.pg.rate
}

func median(s []float64) float64 {
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

func rssText(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}
