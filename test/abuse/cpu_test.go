package abuse

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// cpu is the CPU time the engine process has used so far (user + system),
// from /proc: unlike a throughput, it is what the engine itself spent, so
// other processes on a loaded machine change it little.
func (e *engine) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", e.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	// The command name (field 2) may hold spaces: count from after it.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	// utime and stime are fields 14 and 15, i.e. 11 and 12 after the name.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parsing /proc/%d/stat: %q", e.cmd.Process.Pid, rest)
	}
	return time.Duration(ut+st) * time.Second / clockTicks
}

// cpuWindow is the engine CPU used while the other writers recorded steps.
type cpuWindow struct {
	cpu   time.Duration
	steps int64
}

// attackShare is the CPU-based figure of an attack: of the engine CPU
// spent in the attack window, the share not explained by the other
// writers' steps at the cost per step of the window without the attack.
// It is less disturbed than the throughput ratio by other processes on a
// loaded machine (they slow the engine, not change what it spends).
func attackShare(base, under cpuWindow) string {
	if base.steps == 0 || under.cpu <= 0 {
		return "engine CPU: not measurable"
	}
	perStep := base.cpu / time.Duration(base.steps)
	writers := perStep * time.Duration(under.steps)
	share := 1 - float64(writers)/float64(under.cpu)
	return fmt.Sprintf("engine CPU %v for %d steps alone (%v a step), %v under the attack of which ≈ %.0f%% the attack's",
		base.cpu.Round(10*time.Millisecond), base.steps, perStep.Round(time.Microsecond), under.cpu.Round(10*time.Millisecond), 100*max(share, 0))
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
