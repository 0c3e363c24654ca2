// Package loadgen holds what the load tools under test/load share: starting
// an engine binary on a database, reading a process's memory and CPU from
// /proc, the GraphQL scenarios and seeding threads over the SDK protocol.
package loadgen

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Engine is an engine process started by StartEngine.
type Engine struct {
	BaseURL string // http://127.0.0.1:port
	WSURL   string // ws://127.0.0.1:port/threads
	Key     string // the bootstrapped owner's API key (or the one passed in)
	PID     int
	// PprofAddr is the profiler's address when the environment turned it on
	// (THREADENGINE_SERVER__PPROF_LISTEN=127.0.0.1:0), else "".
	PprofAddr string
	cmd       *exec.Cmd
	dir       string
}

// StartEngine serves bin on a free loopback port against dbURL. With an
// empty key it first bootstraps an owner and returns that owner's key;
// otherwise the database is assumed bootstrapped (another replica). env adds
// THREADENGINE_* settings (KEY=value) to the engine's environment.
func StartEngine(bin, dbURL, key string, env ...string) (*Engine, error) {
	if dbURL == "" {
		return nil, fmt.Errorf("a database URL is required")
	}
	dir, err := os.MkdirTemp("", "threadengine-load-")
	if err != nil {
		return nil, err
	}
	extra := env
	env = nil
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THREADENGINE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "THREADENGINE_DATABASE__URL="+dbURL, "THREADENGINE_LOG__LEVEL=warn")
	env = append(env, extra...)
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if key == "" {
		boot := exec.Command(abs, "bootstrap-owner", "--email", "load@example.com")
		boot.Env, boot.Dir, boot.Stderr = env, dir, os.Stderr
		out, err := boot.Output()
		if err != nil {
			return nil, fmt.Errorf("bootstrap-owner: %w", err)
		}
		f := strings.Fields(strings.TrimSpace(string(out)))
		if len(f) == 0 {
			return nil, fmt.Errorf("bootstrap-owner printed no key")
		}
		key = f[len(f)-1]
	}
	// Port 0: the engine picks a free port and writes the one it bound
	// into addressFile (server.address_file), so no other process can take
	// it between a choice and the bind.
	addressFile := filepath.Join(dir, "address")
	cmd := exec.Command(abs, "serve")
	cmd.Env, cmd.Dir, cmd.Stderr = append(env, "THREADENGINE_SERVER__LISTEN=127.0.0.1:0", "THREADENGINE_SERVER__ADDRESS_FILE="+addressFile), dir, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &Engine{Key: key, PID: cmd.Process.Pid, cmd: cmd, dir: dir}
	for i := 0; i < 400; i++ {
		if b, err := os.ReadFile(addressFile); err == nil {
			bound := strings.Fields(string(b)) // server.listen's, then server.pprof_listen's
			e.BaseURL, e.WSURL = "http://"+bound[0], "ws://"+bound[0]+"/threads"
			if len(bound) > 1 {
				e.PprofAddr = bound[1]
			}
			if resp, err := http.Get(e.BaseURL + "/healthz"); err == nil {
				resp.Body.Close()
				return e, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.Stop()
	return nil, fmt.Errorf("engine in %s did not answer /healthz within 20 s", dir)
}

// Stop terminates the engine and removes its data directory.
func (e *Engine) Stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	_ = e.cmd.Wait()
	os.RemoveAll(e.dir)
}

// RSS reads VmRSS (KiB) of pid from /proc; 0 when unknown.
func RSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// CPU returns the user+system CPU time pid has used so far, read from
// /proc/<pid>/stat; 0 when unknown.
func CPU(pid int) time.Duration { return cpu(pid, false) }

// CPUWithChildren is CPU plus the CPU of pid's children that have exited
// and been waited for: PostgreSQL's postmaster collects its finished
// backends' time this way.
func CPUWithChildren(pid int) time.Duration { return cpu(pid, true) }

func cpu(pid int, children bool) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its ')' are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0
	}
	var ticks int64
	fields := f[11:13] // utime, stime (fields 14, 15)
	if children {
		fields = f[11:15] // and cutime, cstime (16, 17)
	}
	for _, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ticks) * time.Second / ticksPerSecond
}
