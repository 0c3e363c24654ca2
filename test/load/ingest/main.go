// Command ingest is a load harness for the /threads WebSocket protocol: N
// connections speak the SDK protocol (connect, startThread, recordThreadEvent)
// for a bounded time and it prints acknowledged steps/s, ack latency
// percentiles and the engine's memory. Loopback targets only.
//
//	go run ./test/load/ingest --url ws://127.0.0.1:8081/threads --key td_… --conns 50 --duration 20s [--pid N]
//	go run ./test/load/ingest --bin ./threadengine --db sqlite:///tmp/load.db --conns 50 --duration 20s
//
// Several replicas: --url takes a comma-separated list (connections are
// spread round robin), or --bin with --replicas N starts N engines on one
// PostgreSQL --db. --subscribe adds a subscriber on the last URL (or on
// --subscribe-url, e.g. a replica no writer uses, to time only cross-replica
// pushes) that acknowledges every push of step-0 and reports the delivery
// latency twice: from the notification's timestamp (taken before the step's
// commit) and from the writer's receipt of the step's ack.
package main

import (
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
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/test/load/loadgen"
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
		replicas = flag.Int("replicas", 1, "with --bin: engines to start on the one --db (PostgreSQL for more than 1)")
		subLat   = flag.Bool("subscribe", false, "also subscribe to step-0 on the last URL and report delivery latency")
		subURL   = flag.String("subscribe-url", "", "with --subscribe: subscribe on this URL instead (e.g. a replica no writer uses)")
	)
	flag.Parse()
	if *duration > 5*time.Minute || *duration <= 0 {
		fail("--duration must be in (0, 5m]")
	}
	if *pipeline < 1 || *conns < 1 {
		fail("--pipeline and --conns must be >= 1")
	}
	if *bin != "" {
		urls, k, p, stop := startEngines(*bin, *dbURL, *replicas)
		defer stop()
		*wsURL, *key, *pid = strings.Join(urls, ","), k, p
	}
	urls := strings.Split(*wsURL, ",")
	checked := urls
	if *subURL != "" {
		checked = append(append([]string(nil), urls...), *subURL)
	}
	for _, raw := range checked {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
			fail("--url must be ws://127.0.0.1:port/threads (comma-separated for several replicas)")
		}
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			fail("load traffic is only sent to loopback addresses")
		}
	}
	if *key == "" {
		fail("--key is required (or use --bin)")
	}

	// SIGINT ends the run early; what was measured until then is reported.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(sigCtx, *duration)
	defer cancel()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		acked     atomic.Int64
		errs      atomic.Int64
		wg        sync.WaitGroup
	)
	rssBefore := loadgen.RSS(*pid)
	var subLats pushLatencies
	subDone := make(chan struct{})
	if *subLat {
		ready := make(chan struct{})
		go func() {
			defer close(subDone)
			at := urls[len(urls)-1]
			if *subURL != "" {
				at = *subURL
			}
			subLats = subscribe(ctx, at, *key, ready)
		}()
		<-ready
	} else {
		close(subDone)
	}
	start := time.Now()
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			lat, err := runConn(ctx, urls[c%len(urls)], *key, c, *pipeline, *perThr, &acked, &errs)
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
			if r := loadgen.RSS(*pid); r > peak {
				peak = r
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	pct := percentiles(latencies)
	fmt.Printf("replicas=%d conns=%d pipeline=%d duration=%s\n", len(urls), *conns, *pipeline, elapsed.Round(time.Millisecond))
	fmt.Printf("acked_steps=%d errors=%d steps_per_s=%.0f\n", acked.Load(), errs.Load(), float64(acked.Load())/elapsed.Seconds())
	fmt.Printf("ack_latency p50=%s p99=%s max=%s\n", pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), pct(1).Round(10*time.Microsecond))
	<-subDone
	if *subLat {
		r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
		q, a := percentiles(subLats.fromStep), percentiles(subLats.fromAck)
		fmt.Printf("pushes=%d delivery_latency p50=%s p99=%s max=%s\n", len(subLats.fromStep), r(q(0.5)), r(q(0.99)), r(q(1)))
		fmt.Printf("pushes_after_ack=%d after_ack_latency p50=%s p99=%s max=%s\n", len(subLats.fromAck), r(a(0.5)), r(a(0.99)), r(a(1)))
	}
	if *pid > 0 {
		fmt.Printf("engine_rss_before=%dMiB engine_rss_peak=%dMiB engine_rss_after=%dMiB\n", rssBefore>>10, peak>>10, loadgen.RSS(*pid)>>10)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "ingest:", msg)
	os.Exit(2)
}

// dialRetrying dials wsURL, again after a second while the engine answers
// 429 (for 30 s at most): fifty sockets of one address dialled at once
// pass the engine's unauthenticated-sockets share of an address (20,
// limits.ws.max_unauthenticated_per_address) until the first ones have
// sent connect, as SDKs reconnecting after Retry-After would.
func dialRetrying(wsURL string) (*websocket.Conn, error) {
	giveUp := time.Now().Add(30 * time.Second)
	for {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, resp, err := websocket.Dial(dctx, wsURL, nil)
		dcancel()
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(giveUp) {
			return conn, err
		}
		time.Sleep(time.Second)
	}
}

func runConn(ctx context.Context, wsURL, key string, c, pipeline, perThread int, acked, errs *atomic.Int64) ([]time.Duration, error) {
	conn, err := dialRetrying(wsURL)
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
		sent := make([]sentStep, 0, perThread)
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
			st := sentStep{at: now}
			if n%8 == 0 { // step-0, which the subscriber times
				st.key = m["idempotencyKey"].(string)
			}
			sent = append(sent, st)
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

// sentStep is a step sent and not yet acknowledged; key is set for the
// steps whose push is timed.
type sentStep struct {
	at  time.Time
	key string
}

// ackedAt holds when a writer read the ack of each timed step (by
// idempotency key), so the subscriber can time a push from the moment the
// step was known to be recorded, without the commit latency.
var ackedAt sync.Map

func readAck(conn *websocket.Conn, sent []sentStep, recv *int, lat *[]time.Duration, acked, errs *atomic.Int64) error {
	_, data, err := conn.Read(context.Background())
	if err != nil {
		return err
	}
	if !bytes.Contains(data, []byte(`"recordThreadEvent"`)) {
		return nil // a push or another reply
	}
	*lat = append(*lat, time.Since(sent[*recv].at))
	if k := sent[*recv].key; k != "" {
		ackedAt.Store(k, time.Now())
	}
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

// percentiles sorts d and returns its quantile function.
func percentiles(d []time.Duration) func(float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return func(p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[int(float64(len(d)-1)*p)]
	}
}

// pushLatencies times each push of step-0 twice: fromStep from the
// notification's timestamp, taken before the step's commit (so it includes
// the commit), and fromAck from the moment the writer read the step's ack
// (the delivery's own part; 0 when the push arrived first).
type pushLatencies struct{ fromStep, fromAck []time.Duration }

// subscribe connects to wsURL, subscribes to step-0 (step vocabulary) and
// acknowledges every push until ctx ends; it returns push latencies.
func subscribe(ctx context.Context, wsURL, key string, ready chan struct{}) pushLatencies {
	var once sync.Once
	signal := func() { once.Do(func() { close(ready) }) }
	defer signal()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	conn, _, err := websocket.Dial(dctx, wsURL, nil)
	dcancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "subscriber:", err)
		return pushLatencies{}
	}
	defer conn.CloseNow()
	write := func(m map[string]any) error {
		b, _ := json.Marshal(m)
		return conn.Write(context.Background(), websocket.MessageText, b)
	}
	_ = write(map[string]any{"action": "connect", "apiKey": key, "serviceName": "load-subscriber", "maxInFlight": 100})
	_, _, _ = conn.Read(context.Background())
	_ = write(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "step-0", "eventTypes": []string{"step.success"}})
	_, _, _ = conn.Read(context.Background())
	// Delivery is durable: pushes raised before this run (a previous run's
	// backlog, redelivered to this new subscriber) are acknowledged but not
	// timed.
	since := time.Now()
	signal()
	var lats pushLatencies
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return lats
		}
		var f struct {
			AckToken     string `json:"ackToken"`
			Notification struct {
				Timestamp      time.Time `json:"timestamp"`
				IdempotencyKey string    `json:"idempotencyKey"`
			} `json:"notification"`
		}
		if json.Unmarshal(data, &f) != nil || f.AckToken == "" {
			continue
		}
		if !f.Notification.Timestamp.Before(since) {
			lats.fromStep = append(lats.fromStep, time.Since(f.Notification.Timestamp))
			var d time.Duration
			if at, ok := ackedAt.Load(f.Notification.IdempotencyKey); ok {
				d = time.Since(at.(time.Time))
			}
			lats.fromAck = append(lats.fromAck, d)
		}
		_ = write(map[string]any{"action": "ack_notification", "ackToken": f.AckToken})
	}
}

// startEngines starts n engines on dbURL (one bootstrap); it returns their
// WS URLs, the key, the first pid and a stop function.
func startEngines(bin, dbURL string, n int) ([]string, string, int, func()) {
	if n < 1 || n > 8 {
		fail("--replicas must be 1-8")
	}
	if n > 1 && !strings.HasPrefix(dbURL, "postgres") {
		fail("--replicas above 1 needs a PostgreSQL --db")
	}
	var engines []*loadgen.Engine
	stop := func() {
		for _, e := range engines {
			e.Stop()
		}
	}
	key := ""
	for i := 0; i < n; i++ {
		e, err := loadgen.StartEngine(bin, dbURL, key)
		if err != nil {
			stop()
			fail(err.Error())
		}
		engines, key = append(engines, e), e.Key
	}
	urls := make([]string, len(engines))
	for i, e := range engines {
		urls[i] = e.WSURL
	}
	return urls, key, engines[0].PID, stop
}
