package threadstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
)

// The CPU a benchmark spends, measured instead of wall time on a shared,
// busy machine (docs/contributors/performance.md, "Transparency log"): the
// load stretches wall time by waiting for a core, but hardly changes how
// much CPU the work takes. cpuMeter adds the benchmark process's user+sys
// time (getrusage: every goroutine, the GC, SQLite's work) and, on
// PostgreSQL, the user+sys time of the server backends serving this
// benchmark's connections (/proc/<pid>/stat; found by an application_name
// unique to the run). The server's shared background processes (WAL
// writer, checkpointer) are not counted.

// openMetered opens a fresh migrated database whose PostgreSQL connections
// carry a unique application_name, returned with it ("" on SQLite).
func openMetered(b *testing.B, d sqldb.Dialect) (*sqldb.DB, string) {
	b.Helper()
	u, app := sqldbtest.URL(b, d), ""
	if d == sqldb.Postgres {
		buf := make([]byte, 6)
		_, _ = rand.Read(buf)
		app = "bench_" + hex.EncodeToString(buf)
		pu, err := url.Parse(u)
		if err != nil {
			b.Fatal(err)
		}
		q := pu.Query()
		q.Set("application_name", app)
		pu.RawQuery = q.Encode()
		u = pu.String()
	}
	db, err := sqldb.Open(context.Background(), u)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db, app
}

type cpuMeter struct {
	db       *sqldb.DB
	app      string
	self     int64         // µs of this process at start
	backends map[int]int64 // µs of each server backend at start
	tick     int64         // µs per clock tick
}

func startCPU(b *testing.B, db *sqldb.DB, app string) *cpuMeter {
	m := &cpuMeter{db: db, app: app, tick: 10000} // USER_HZ is 100 on Linux
	m.backends = m.serverCPU(b)
	m.self = selfCPU(b)
	return m
}

// report adds cpu-µs/op (this process) and, on PostgreSQL, pgcpu-µs/op and
// allcpu-µs/op (the sum) to the benchmark's metrics.
func (m *cpuMeter) report(b *testing.B) {
	self := selfCPU(b) - m.self
	b.ReportMetric(float64(self)/float64(b.N), "cpu-µs/op")
	if m.app == "" {
		return
	}
	var srv int64
	for pid, t := range m.serverCPU(b) {
		srv += t - m.backends[pid] // a backend started since counts from 0
	}
	b.ReportMetric(float64(srv)/float64(b.N), "pgcpu-µs/op")
	b.ReportMetric(float64(self+srv)/float64(b.N), "allcpu-µs/op")
}

func selfCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
}

// serverCPU reads the CPU time of every backend of this run's connections.
func (m *cpuMeter) serverCPU(b *testing.B) map[int]int64 {
	out := map[int]int64{}
	if m.app == "" {
		return out
	}
	var pids []int
	if err := m.db.SelectContext(context.Background(), &pids, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.app); err != nil {
		b.Fatal(err)
	}
	var missing error
	for _, pid := range pids {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			// A backend whose connection closed since it was listed is
			// gone (its CPU is not counted); none readable means the
			// server runs elsewhere.
			missing = err
			continue
		}
		// Fields after the command (which may hold spaces) in parentheses:
		// utime and stime are fields 14 and 15 of the line.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = (ut + st) * m.tick
	}
	if len(out) == 0 && missing != nil {
		b.Fatalf("the PostgreSQL server must run on this machine to meter its CPU: %v", missing)
	}
	return out
}
