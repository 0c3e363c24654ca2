// Command ingest is a load harness for the /threads WebSocket protocol: N
// connections speak the SDK protocol (connect, startThread, recordThreadEvent)
// for a bounded time and it prints acknowledged steps/s, ack latency
// percentiles and the engine's memory. Loopback targets only.
//
//	go run ./test/load/ingest --url ws://127.0.0.1:8081/threads --key td_… --conns 50 --duration 20s [--pid N]
//	go run ./test/load/ingest --bin ./threadengine --db sqlite:///tmp/load.db --conns 50 --duration 20s
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

func main() {
	var (
		wsURL    = flag.String("url", "", "engine WebSocket URL (ws://127.0.0.1:port/threads)")
		key      = flag.String("key", "", "API key")
		conns    = flag.Int("conns", 50, "concurrent connections")
		duration = flag.Duration("duration", 20*time.Second, "how long to write (max 5m)")
		pipeline = flag.Int("pipeline", 1, "steps in flight per connection (1 = await each step, like SDK code that awaits)")
		perThr   = flag.Int("steps-per-thread", 50, "steps before a connection starts a new thread")
		pid      = flag.Int("pid", 0, "engine process id, for RSS")
		bin      = flag.String("bin", "", "start this engine binary itself (with --db)")
		dbURL    = flag.String("db", "", "database URL for --bin")
	)
	flag.Parse()
	if *duration > 5*time.Minute || *duration <= 0 {
		fail("--duration must be in (0, 5m]")
	}
	if *pipeline < 1 || *conns < 1 {
		fail("--pipeline and --conns must be >= 1")
	}
	if *bin != "" {
		u, k, p, stop := startEngine(*bin, *dbURL)
		defer stop()
		*wsURL, *key, *pid = u, k, p
	}
	u, err := url.Parse(*wsURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		fail("--url must be ws://127.0.0.1:port/threads")
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fail("load traffic is only sent to loopback addresses")
	}
	if *key == "" {
		fail("--key is required (or use --bin)")
	}

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		acked     atomic.Int64
		errs      atomic.Int64
		wg        sync.WaitGroup
	)
	rssBefore := rss(*pid)
	start := time.Now()
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			lat, err := runConn(ctx, *wsURL, *key, c, *pipeline, *perThr, &acked, &errs)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "conn %d: %v\n", c, err)
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			mu.Unlock()
		}(c)
	}
	var peak int64
	go func() {
		for ctx.Err() == nil {
			if r := rss(*pid); r > peak {
				peak = r
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)]
	}
	fmt.Printf("conns=%d pipeline=%d duration=%s\n", *conns, *pipeline, elapsed.Round(time.Millisecond))
	fmt.Printf("acked_steps=%d errors=%d steps_per_s=%.0f\n", acked.Load(), errs.Load(), float64(acked.Load())/elapsed.Seconds())
	fmt.Printf("ack_latency p50=%s p99=%s max=%s\n", pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), pct(1).Round(10*time.Microsecond))
	if *pid > 0 {
		fmt.Printf("engine_rss_before=%dMiB engine_rss_peak=%dMiB engine_rss_after=%dMiB\n", rssBefore>>10, peak>>10, rss(*pid)>>10)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "ingest:", msg)
	os.Exit(2)
}

// rss reads VmRSS (KiB) of pid from /proc.
func rss(pid int) int64 {
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

func runConn(ctx context.Context, wsURL, key string, c, pipeline, perThread int, acked, errs *atomic.Int64) ([]time.Duration, error) {
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	conn, _, err := websocket.Dial(dctx, wsURL, nil)
	dcancel()
	if err != nil {
		return nil, err
	}
	defer conn.CloseNow()
	bg := context.Background()
	call := func(m map[string]any) (map[string]any, error) {
		b, _ := json.Marshal(m)
		if err := conn.Write(bg, websocket.MessageText, b); err != nil {
			return nil, err
		}
		_, data, err := conn.Read(bg)
		if err != nil {
			return nil, err
		}
		var r map[string]any
		return r, json.Unmarshal(data, &r)
	}
	if r, err := call(map[string]any{"action": "connect", "apiKey": key, "serviceName": "load-service", "maxInFlight": 10}); err != nil || r["status"] != "success" {
		return nil, fmt.Errorf("connect: %v %v", r, err)
	}
	var lat []time.Duration
	i := 0
	for ctx.Err() == nil {
		r, err := call(map[string]any{"action": "startThread", "contractName": nil,
			"refs": map[string]any{"serviceName": "load-service", "label": fmt.Sprintf("load-%d-%d", c, i)}})
		if err != nil || r["status"] != "success" {
			return lat, fmt.Errorf("startThread: %v %v", r, err)
		}
		tid := r["threadId"].(string)
		sent := make([]time.Time, 0, perThread)
		recv := 0
		for n := 0; n < perThread && ctx.Err() == nil; n++ {
			now := time.Now().UTC()
			ts := now.Format("2006-01-02T15:04:05.000Z")
			m := map[string]any{"action": "recordThreadEvent", "threadId": tid, "stepName": fmt.Sprint("step-", n%8),
				"startedAt": ts, "finishedAt": ts, "status": "success", "serviceName": "load-service",
				"context": map[string]any{"n": strconv.Itoa(n), "conn": strconv.Itoa(c)}, "idempotencyKey": fmt.Sprintf("%d-%d-%d", c, i, n)}
			b, _ := json.Marshal(m)
			if err := conn.Write(bg, websocket.MessageText, b); err != nil {
				return lat, err
			}
			sent = append(sent, now)
			for len(sent)-recv >= pipeline {
				if err := readAck(conn, sent, &recv, &lat, acked, errs); err != nil {
					return lat, err
				}
			}
		}
		for recv < len(sent) {
			if err := readAck(conn, sent, &recv, &lat, acked, errs); err != nil {
				return lat, err
			}
		}
		i++
	}
	return lat, nil
}

func readAck(conn *websocket.Conn, sent []time.Time, recv *int, lat *[]time.Duration, acked, errs *atomic.Int64) error {
	_, data, err := conn.Read(context.Background())
	if err != nil {
		return err
	}
	if !bytes.Contains(data, []byte(`"recordThreadEvent"`)) {
		return nil // a push or another reply
	}
	*lat = append(*lat, time.Since(sent[*recv]))
	*recv++
	if bytes.Contains(data, []byte(`"status":"success"`)) {
		acked.Add(1)
	} else {
		errs.Add(1)
		if errs.Load() <= 3 {
			fmt.Fprintf(os.Stderr, "error reply: %s\n", data)
		}
	}
	return nil
}

// startEngine bootstraps an owner and serves the binary on a free loopback
// port; it returns the WS URL, the key, the pid and a stop function.
func startEngine(bin, dbURL string) (string, string, int, func()) {
	if dbURL == "" {
		fail("--db is required with --bin")
	}
	dir, err := os.MkdirTemp("", "ingest-load-")
	if err != nil {
		fail(err.Error())
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THREADENGINE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "THREADENGINE_DATABASE__URL="+dbURL, "THREADENGINE_LOG__LEVEL=warn")
	abs, _ := filepath.Abs(bin)
	boot := exec.Command(abs, "bootstrap-owner", "--email", "load@example.com")
	boot.Env, boot.Dir, boot.Stderr = env, dir, os.Stderr
	out, err := boot.Output()
	if err != nil {
		fail("bootstrap-owner: " + err.Error())
	}
	f := strings.Fields(strings.TrimSpace(string(out)))
	key := f[len(f)-1]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err.Error())
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(abs, "serve")
	cmd.Env, cmd.Dir, cmd.Stderr = append(env, "THREADENGINE_SERVER__LISTEN="+addr), dir, os.Stderr
	if err := cmd.Start(); err != nil {
		fail(err.Error())
	}
	for i := 0; i < 200; i++ {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	return "ws://" + addr + "/threads", key, cmd.Process.Pid, stop
}
