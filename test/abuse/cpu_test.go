package abuse

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/test/enginetest"
)

// procCPU is the CPU time (user + system) process pid has used so far;
// ok is false when the process is gone.
func procCPU(pid int) (time.Duration, bool) {
	_, d, err := enginetest.ProcStat(pid)
	return d, err == nil
}

// cpu is the CPU time the engine process has used so far (user + system),
// from /proc: unlike a throughput, it is what the engine itself spent, so
// other processes on a loaded machine change it little.
func (e *engine) cpu(t *testing.T) time.Duration {
	t.Helper()
	d, ok := procCPU(e.cmd.Process.Pid)
	if !ok {
		t.Fatalf("reading /proc/%d/stat", e.cmd.Process.Pid)
	}
	return d
}

// cpuSnap is the CPU time used so far by the engine, by the PostgreSQL
// backends serving its pools (by pid; none on SQLite, whose work is the
// engine's), by this test process (the writers, and the attacking clients
// of the cases that keep them here) and by the attacker process (by pid,
// attacker_test.go), so a window's figure says whose CPU an attack took.
type cpuSnap struct {
	engine, clients, attacker time.Duration
	attackerPID               int
	backends                  map[int]time.Duration
}

func (e *engine) snap(t *testing.T) cpuSnap {
	t.Helper()
	s := cpuSnap{engine: e.cpu(t), backends: map[int]time.Duration{}}
	s.clients, _ = procCPU(os.Getpid())
	s.attacker, s.attackerPID = e.attackerCPU()
	if e.pg == nil {
		return s
	}
	var pids []int
	if err := e.pg.Select(&pids, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, e.app); err != nil {
		t.Fatalf("listing the engine's backends: %v", err)
	}
	for _, pid := range pids {
		if d, ok := procCPU(pid); ok { // a backend gone since it was listed is not counted
			s.backends[pid] = d
		}
	}
	return s
}

// cpuWindow is the CPU used while the other writers recorded steps.
type cpuWindow struct {
	engine, db, clients, attacker time.Duration
	steps                         int64
}

// cpuIn is the CPU used from s0 to s1 by whom, while steps were recorded
// (a backend started in between counts from 0).
func cpuIn(s0, s1 cpuSnap, steps int64) cpuWindow {
	w := cpuWindow{engine: s1.engine - s0.engine, clients: s1.clients - s0.clients, steps: steps}
	if s1.attackerPID != 0 && s1.attackerPID == s0.attackerPID {
		w.attacker = s1.attacker - s0.attacker
	} else {
		w.attacker = s1.attacker // started in between: counted from 0
	}
	for pid, d := range s1.backends {
		w.db += d - s0.backends[pid]
	}
	return w
}

// attackShare is the CPU-based figure of an attack: of the engine CPU
// spent in the attack window, the share not explained by the other
// writers' steps at the cost per step of the window without the attack.
// It is less disturbed than the throughput ratio by other processes on a
// loaded machine (they slow the engine, not change what it spends). The
// database's and the test process's CPU in both windows follow: on a
// 2-core machine the writers' throughput falls with whatever the attack
// takes from any of the three.
func attackShare(base, under cpuWindow) string {
	if base.steps == 0 || under.engine <= 0 {
		return "engine CPU: not measurable"
	}
	perStep := base.engine / time.Duration(base.steps)
	writers := perStep * time.Duration(under.steps)
	share := 1 - float64(writers)/float64(under.engine)
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	return fmt.Sprintf("engine CPU %v for %d steps alone (%v a step), %v under the attack of which ≈ %.0f%% the attack's; database %v → %v, test process %v → %v, attacker process %v",
		r(base.engine), base.steps, perStep.Round(time.Microsecond), r(under.engine), 100*max(share, 0), r(base.db), r(under.db), r(base.clients), r(under.clients), r(under.attacker))
}

// rssMiB is the engine's resident set now, in MiB.
func rssMiB(t *testing.T, e *engine) float64 {
	cur, _ := e.rss(t)
	return float64(cur) / (1 << 20)
}

// loadavg is the machine's load averages, for the figures' log lines.
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// profile records the engine's CPU profile for d into
// $ABUSE_PPROF_DIR/<test>-<name>.pprof when that is set (a diagnosis aid:
// where the engine's CPU goes under an attack); wait blocks until it is
// written. Nothing happens without the variable.
func (e *engine) profile(t *testing.T, name string, d time.Duration) (wait func()) {
	dir := os.Getenv("ABUSE_PPROF_DIR")
	if dir == "" || e.pprof == "" {
		return func() {}
	}
	done := make(chan struct{})
	file := filepath.Join(dir, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()+"-"+name)+".pprof")
	go func() {
		defer close(done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.pprof, max(1, int(d/time.Second))))
		if err != nil {
			t.Logf("profile %s: %v", name, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(file)
		if err != nil {
			t.Logf("profile %s: %v", name, err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
		t.Logf("CPU profile of %s: %s", name, file)
	}()
	return func() { <-done }
}
