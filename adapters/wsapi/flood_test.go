package wsapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/threads"
)

// floodHandler is a Handler with limits changed by set, counting on a
// registry of its own.
func floodHandler(t *testing.T, set func(*config.WSLimits)) (*Handler, *prometheus.Registry) {
	t.Helper()
	lim := config.DefaultLimits().WS
	set(&lim)
	reg := prometheus.NewRegistry()
	return &Handler{Threads: threads.New(nil, nil, nil, []byte("k"), nil), Authn: codedAuthn{}, Limits: lim,
		Refusals: limits.NewCounter(reg)}, reg
}

func gauge(t *testing.T, reg *prometheus.Registry, name string, budget limits.Budget) float64 {
	return metric(t, reg, name, string(budget))
}

func refused(t *testing.T, reg *prometheus.Registry, n limits.Name) int {
	return int(metric(t, reg, "threadengine_limit_refusals_total", string(n)))
}

// metric is the value of the series of name whose only label is label.
func metric(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == label {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%q}", name, label)
	return 0
}

// eventually waits (without a wall-clock budget beyond a generous safety
// net) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Frames over a principal's rate are answered rate_limited with
// retryAfterMs; acks, heartbeats and subscriptions are not counted.
func TestFrameRatePerPrincipal(t *testing.T) {
	t.Parallel()
	const burst = 5
	h, reg := floodHandler(t, func(l *config.WSLimits) {
		l.FramesPerSecond, l.FrameBurst = 0.001, burst // no token comes back during the test
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the sockets' cleanups: Close waits for their handlers
	url := strings.Replace(srv.URL, "http", "ws", 1)
	a, b := dialWS(t, url), dialWS(t, url)
	for _, c := range []*wsClient{a, b} {
		if r := c.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
			t.Fatalf("connect: %v", r)
		}
	}
	codes := map[string]int{}
	for i := range 2 * burst {
		c := a
		if i%2 == 1 {
			c = b // both sockets of the principal draw on one rate
		}
		// waitFor without threadId is refused as invalid before any store is read.
		r := c.ask(fmt.Sprintf(`{"action":"waitFor","requestId":"w%d"}`, i))
		codes[fmt.Sprint(r["code"])]++
		if r["code"] == "rate_limited" {
			if ms, _ := r["retryAfterMs"].(float64); ms <= 0 || r["requestId"] != fmt.Sprintf("w%d", i) {
				t.Errorf("rate_limited reply without retryAfterMs or requestId: %v", r)
			}
		}
	}
	if codes["validation_failed"] != burst || codes["rate_limited"] != burst {
		t.Errorf("replies %v, want %d handled and %d rate_limited", codes, burst, burst)
	}
	for range 3 {
		if r := a.ask(`{"action":"subscribe","stepName":"s","requestId":"s"}`); r["status"] != "success" {
			t.Errorf("subscribe counted against the rate: %v", r)
		}
	}
	if n := refused(t, reg, limits.WSFrameRate); n != burst {
		t.Errorf("ws_frame_rate counted %d, want %d", n, burst)
	}
}

// smallBuffers makes the kernel hold little of what a peer does not read,
// so the engine's own queue is what fills.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
		_ = tc.SetReadBuffer(4 << 10)
	}
	return c, err
}

func dialSmall(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	d := &net.Dialer{Control: nil}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return conn
}

// A client that sends frames and never reads its replies fills its
// principal's queued-bytes budget, and then the engine stops reading its
// frames: the queued bytes never exceed the budget, and every reply arrives
// once the client reads.
func TestQueuedBytesPerPrincipalAreBounded(t *testing.T) {
	t.Parallel()
	const budget = 16 << 10
	h, reg := floodHandler(t, func(l *config.WSLimits) { l.MaxQueuedBytesPerPrincipal = budget })
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close) // after the sockets' cleanups: Close waits for their handlers
	url := strings.Replace(srv.URL, "http", "ws", 1)
	const sockets = 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var conns []*websocket.Conn
	for range sockets {
		c := dialSmall(t, url)
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"connect","apiKey":"good"}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Each socket sends frames whose replies (~300 bytes each) are never
	// read, until its writes stop being taken.
	var sent atomic.Int64
	pad := strings.Repeat("x", 200)
	wctx, stopWriting := context.WithCancel(ctx)
	for _, c := range conns {
		go func() {
			for i := 0; ; i++ {
				f := fmt.Sprintf(`{"action":"waitFor","requestId":"w%d-%s"}`, i, pad)
				if c.Write(wctx, websocket.MessageText, []byte(f)) != nil {
					return
				}
				sent.Add(1)
			}
		}()
	}
	eventually(t, "the principal's queue fills", func() bool {
		return gauge(t, reg, "threadengine_budget_bytes", limits.WSQueuedBytes) > budget-1024
	})
	// Full: the engine reads no more of the principal's frames than it
	// can queue replies for.
	peak := gauge(t, reg, "threadengine_budget_bytes_peak", limits.WSQueuedBytes)
	t.Logf("%d frames sent when the queue was full; queued bytes peak %.0f (budget %d)", sent.Load(), peak, budget)
	if peak > budget {
		t.Errorf("queued bytes peaked at %.0f, over the budget %d", peak, budget)
	}
	stopWriting()
	// Read everything: the replies come, and the budget empties.
	for _, c := range conns {
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
	}
	eventually(t, "the queue drains once the client reads", func() bool {
		return gauge(t, reg, "threadengine_budget_bytes", limits.WSQueuedBytes) == 0
	})
}

// Unfinished fragmented messages hold their principal's pending share as
// their bytes arrive: a socket that cannot get room is closed 1008 and
// counted, the share never exceeds its bound, and a finished message is
// answered.
func TestUnfinishedFragmentsCountAgainstTheShare(t *testing.T) {
	t.Parallel()
	const share = 64 << 10
	h, reg := floodHandler(t, func(l *config.WSLimits) { l.MaxPendingBytesPerPrincipal = share })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the sockets' cleanups: Close waits for their handlers
	url := strings.Replace(srv.URL, "http", "ws", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := dialWS(t, url), dialWS(t, url)
	for _, c := range []*wsClient{a, b} {
		if r := c.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
			t.Fatalf("connect: %v", r)
		}
	}
	// a holds 40 KiB of an unfinished message (the engine's buffer: 64 KiB).
	wa, err := a.conn.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	head := `{"action":"waitFor","requestId":"big","pad":"`
	if _, err := io.WriteString(wa, head+strings.Repeat("x", 40<<10)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's fragments are held", func() bool {
		return gauge(t, reg, "threadengine_budget_bytes", limits.WSPendingBytesBudget) >= 40<<10
	})
	// b's unfinished message finds no room and b is closed.
	wb, err := b.conn.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(wb, head+strings.Repeat("y", 40<<10)); err != nil {
		t.Fatal(err)
	}
	if st := b.closed(); st != websocket.StatusPolicyViolation {
		t.Errorf("b closed with %v, want 1008", st)
	}
	if n := refused(t, reg, limits.WSPendingBytes); n != 1 {
		t.Errorf("ws_pending_bytes counted %d, want 1", n)
	}
	if peak := gauge(t, reg, "threadengine_budget_bytes_peak", limits.WSPendingBytesBudget); peak > share {
		t.Errorf("pending bytes peaked at %.0f, over the share %d", peak, share)
	}
	// a finishes its message and gets its answer.
	if _, err := io.WriteString(wa, `"}`); err != nil {
		t.Fatal(err)
	}
	if err := wa.Close(); err != nil {
		t.Fatal(err)
	}
	_, data, err := a.conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	_ = json.Unmarshal(data, &r)
	if r["requestId"] != "big" || r["code"] != "validation_failed" {
		t.Errorf("a's finished message: %v", r)
	}
	eventually(t, "the share empties", func() bool {
		return gauge(t, reg, "threadengine_budget_bytes", limits.WSPendingBytesBudget) == 0
	})
}

// A refusal before the upgrade (a limit, a malformed handshake) closes the
// HTTP connection instead of keeping it alive for the idle timeout.
func TestRefusedUpgradeClosesTheConnection(t *testing.T) {
	t.Parallel()
	h, _ := floodHandler(t, func(l *config.WSLimits) { l.MaxSockets = 1 })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)                                         // after the sockets' cleanups: Close waits for their handlers
	held := dialWS(t, strings.Replace(srv.URL, "http", "ws", 1)) // takes the only place
	_ = held
	for _, tc := range []struct {
		name, key string
		status    int
	}{
		{"over the socket limit", "dGhlIHNhbXBsZSBub25jZQ==", http.StatusTooManyRequests},
		{"malformed handshake", "", http.StatusBadRequest},
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net; the close comes at once
		req := "GET /threads HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
		if tc.key != "" {
			req += "Sec-WebSocket-Key: " + tc.key + "\r\n"
		}
		if tc.status == http.StatusBadRequest {
			held.conn.CloseNow() // room again: the handshake itself is refused
			eventually(t, "the held socket is released", func() bool {
				h.admission.mu.Lock()
				defer h.admission.mu.Unlock()
				return h.admission.total == 0
			})
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !resp.Close {
			t.Errorf("%s: %d, Connection: %q; want %d and close", tc.name, resp.StatusCode, resp.Header.Get("Connection"), tc.status)
		}
		if n, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: the connection stayed open (%v %v)", tc.name, n, err)
		}
	}
}

// Large frames spend the byte rate: a principal's second 600 KB frame
// within the burst of 1 MiB is refused rate_limited.
func TestByteRatePerPrincipal(t *testing.T) {
	t.Parallel()
	h, reg := floodHandler(t, func(l *config.WSLimits) { l.BytesPerSecond, l.ByteBurst = 1, 1<<20 })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := dialWS(t, strings.Replace(srv.URL, "http", "ws", 1))
	if r := c.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
		t.Fatalf("connect: %v", r)
	}
	big := `{"action":"waitFor","requestId":"b","pad":"` + strings.Repeat("x", 600<<10) + `"}`
	if r := c.ask(big); r["code"] != "validation_failed" {
		t.Errorf("first large frame: %v", r)
	}
	if r := c.ask(big); r["code"] != "rate_limited" || r["retryAfterMs"] == nil {
		t.Errorf("second large frame: %v", r)
	}
	if r := c.ask(`{"action":"waitFor","requestId":"s"}`); r["code"] != "validation_failed" {
		t.Errorf("a small frame after: %v", r)
	}
	if n := refused(t, reg, limits.WSFrameRate); n != 1 {
		t.Errorf("ws_frame_rate counted %d, want 1", n)
	}
}
