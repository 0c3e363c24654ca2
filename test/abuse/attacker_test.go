package abuse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The attacking clients that loop HTTP requests (expensive reads, big
// contexts, OTLP exports) run in a child process of this test binary at the
// lowest CPU priority (nice 19), not in the test process beside the other
// writers they are measured against. On the 2-core machine an attacker's
// own client work (requests, answers read) took 5-12 % of a core from the
// writers, the engine and PostgreSQL (test process CPU logged with and
// without the attack): that is the attacker's machine, not the engine
// giving way. At nice 19 the child runs on what the others leave, as an
// attacker on another machine would; what the engine spends on its
// requests is still on the engine's side of the figure.

// attackerEnv carries a loopSpec to the child (TestMain runs it instead of
// the tests when it is set).
const attackerEnv = "THREADENGINE_ABUSE_ATTACKER"

// loopSpec is what an attacker process loops: Clients concurrent clients,
// client c sending Bodies[c], Bodies[c+Clients], … in turn, each waiting
// for its answer, and backing off Backoff after any answer but 200.
type loopSpec struct {
	URL, Key, Method, Path string
	Clients                int
	Bodies                 []string // files, read once at start
	Headers                []string // name, value pairs (Content-Type defaults to JSON)
	Backoff                time.Duration
	// Marks are substrings counted in the answers, per status.
	Marks []string
}

// loopReport is what an attacker process answered, once stopped.
type loopReport struct {
	Statuses map[int]int
	// Marked counts answers by "<status> <mark>".
	Marked map[string]int
	Bytes  int64
	// Samples holds the first answers of each status, cut to 300 bytes.
	Samples map[int][]string
}

// count is how many answers were status and held mark (every answer of
// status when mark is "").
func (r loopReport) count(status int, mark string) int {
	if mark == "" {
		return r.Statuses[status]
	}
	return r.Marked[fmt.Sprint(status, " ", mark)]
}

func (r loopReport) total() int {
	n := 0
	for _, c := range r.Statuses {
		n += c
	}
	return n
}

// attackerProc is a running attacker process.
type attackerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// refused counts the clients answered 429 at least once; firstRefusal
	// is closed at the first.
	refused      atomic.Int64
	firstRefusal chan struct{}
	// answered counts the answers, by tens as the process reports them.
	answered atomic.Int64
	// done is closed once the process's output ended, rep read (reported
	// false when no report came).
	done     chan struct{}
	rep      loopReport
	reported bool
	ended    sync.Once
	waitErr  error
}

// measuring tells a run for figures (THREADENGINE_ABUSE_ROUNDS set) from
// the suite's: only then does the attacker process run at nice 19. In the
// suite, on a loaded machine, a niced process got next to no CPU and sent
// too little for the assertions (refusals, requests stored), and the ratio
// is not asserted there anyway.
func measuring() bool { return os.Getenv("THREADENGINE_ABUSE_ROUNDS") != "" }

// startAttacker runs spec's clients in a child process (at nice 19 when
// measuring) and returns once they are about to send their first requests. The process
// is e's attacker until stopped (its CPU is in e's snapshots) and is
// stopped when the test ends, whatever failed.
func (e *engine) startAttacker(t *testing.T, spec loopSpec) *attackerProc {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if measuring() {
		cmd = exec.Command("nice", "-n", "19", os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), attackerEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &attackerProc{cmd: cmd, stdin: stdin, firstRefusal: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { a.end() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		defer close(a.done)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "ready":
				close(ready)
			case strings.HasPrefix(line, "refused "):
				if a.refused.Add(1) == 1 { // the first refusal, once
					close(a.firstRefusal)
				}
			case strings.HasPrefix(line, "answered "):
				n, _ := strconv.ParseInt(strings.TrimPrefix(line, "answered "), 10, 64)
				a.answered.Store(n)
			case strings.HasPrefix(line, "report "):
				a.reported = json.Unmarshal([]byte(strings.TrimPrefix(line, "report ")), &a.rep) == nil
			}
		}
	}()
	select {
	case <-ready:
	case <-a.done:
		t.Fatal("the attacker process ended before it began")
	case <-time.After(time.Minute):
		t.Fatal("the attacker process did not start")
	}
	e.setAttacker(a)
	return a
}

// end stops the process once: its input closed, its clients abandon their
// requests and it reports; killed if it has not within two minutes (a hang
// guard), and waited for.
func (a *attackerProc) end() {
	a.ended.Do(func() {
		_ = a.stdin.Close()
		select {
		case <-a.done:
		case <-time.After(2 * time.Minute):
			_ = a.cmd.Process.Kill()
			<-a.done
		}
		a.waitErr = a.cmd.Wait()
	})
}

// stop ends the attacker's clients and returns what they were answered.
func (a *attackerProc) stop(t *testing.T) loopReport {
	t.Helper()
	a.end()
	if a.waitErr != nil {
		t.Errorf("attacker process: %v", a.waitErr)
	}
	if !a.reported {
		t.Errorf("the attacker process sent no report of its answers")
	}
	return a.rep
}

// setAttacker makes a the engine's attacker: its CPU is in snapshots.
func (e *engine) setAttacker(a *attackerProc) {
	e.attackerMu.Lock()
	e.attacker = a
	e.attackerMu.Unlock()
}

// attackerCPU is the CPU the current attacker process has used so far
// (0 without one, or once it is gone), and its pid.
func (e *engine) attackerCPU() (time.Duration, int) {
	e.attackerMu.Lock()
	a := e.attacker
	e.attackerMu.Unlock()
	if a == nil {
		return 0, 0
	}
	d, _ := procCPU(a.cmd.Process.Pid)
	return d, a.cmd.Process.Pid
}

// bodyFiles writes bodies to files for a loopSpec.
func bodyFiles(t *testing.T, bodies ...[]byte) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, b := range bodies {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// runAttacker is the child's main: it loops spec's requests until its
// standard input closes, printing "ready" once, "refused <client>" at a
// client's first 429, "answered <n>" at every tenth answer and
// "report <json>" at the end.
func runAttacker(raw string) int {
	var spec loopSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "attacker spec:", err)
		return 2
	}
	var bodies [][]byte
	for _, p := range spec.Bodies {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "attacker body:", err)
			return 2
		}
		bodies = append(bodies, b)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: spec.Clients, DisableCompression: true}}
	ctx, cancel := context.WithCancel(context.Background())
	stop := ctx.Done()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	var mu sync.Mutex
	rep := loopReport{Statuses: map[int]int{}, Marked: map[string]int{}, Samples: map[int][]string{}}
	out := bufio.NewWriter(os.Stdout)
	say := func(s string) { mu.Lock(); fmt.Fprintln(out, s); out.Flush(); mu.Unlock() }
	say("ready")
	var wg sync.WaitGroup
	for c := range spec.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refused := false
			for n := c; ; n += spec.Clients {
				select {
				case <-stop:
					return
				default:
				}
				var body io.Reader
				if len(bodies) > 0 {
					body = bytes.NewReader(bodies[n%len(bodies)])
				}
				req, _ := http.NewRequestWithContext(ctx, spec.Method, spec.URL+spec.Path, body)
				req.Header.Set("X-API-Key", spec.Key)
				req.Header.Set("Content-Type", "application/json")
				for i := 0; i+1 < len(spec.Headers); i += 2 {
					req.Header.Set(spec.Headers[i], spec.Headers[i+1])
				}
				st, answer := 0, []byte(nil)
				if resp, err := client.Do(req); err == nil {
					answer, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					st = resp.StatusCode
					if err != nil {
						st = 0
					}
				}
				if ctx.Err() != nil {
					return // stopped: a request abandoned is not an answer
				}
				mu.Lock()
				rep.Statuses[st]++
				tenth := 0
				if n := rep.total(); n%10 == 0 {
					tenth = n
				}
				rep.Bytes += int64(len(answer))
				for _, m := range spec.Marks {
					if bytes.Contains(answer, []byte(m)) {
						rep.Marked[fmt.Sprint(st, " ", m)]++
					}
				}
				if len(rep.Samples[st]) < 3 {
					rep.Samples[st] = append(rep.Samples[st], string(answer[:min(len(answer), 300)]))
				}
				mu.Unlock()
				if tenth > 0 { // said after the lock: say takes it
					say(fmt.Sprint("answered ", tenth))
				}
				if st == http.StatusTooManyRequests && !refused {
					refused = true
					say(fmt.Sprint("refused ", c))
				}
				if st != http.StatusOK {
					select { // a client backing off a little, not for the whole Retry-After: the pressure stays
					case <-stop:
						return
					case <-time.After(spec.Backoff):
					}
				}
			}
		}()
	}
	wg.Wait()
	b, _ := json.Marshal(rep)
	say("report " + string(b))
	return 0
}
