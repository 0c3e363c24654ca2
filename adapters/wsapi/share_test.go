package wsapi

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
)

// A principal that spent its frame rate, closed its last socket and
// connected again finds the rate where it left it: reconnecting does not
// start the rate over.
func TestFrameRateSurvivesReconnect(t *testing.T) {
	t.Parallel()
	const burst = 3
	h, reg := floodHandler(t, func(l *config.WSLimits) {
		l.FramesPerSecond, l.FrameBurst = 0.001, burst // no token comes back during the test
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := strings.Replace(srv.URL, "http", "ws", 1)
	a := dialWS(t, url)
	if r := a.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
		t.Fatalf("connect: %v", r)
	}
	for i := range burst {
		if r := a.ask(fmt.Sprintf(`{"action":"waitFor","requestId":"w%d"}`, i)); r["code"] != "validation_failed" {
			t.Fatalf("frame %d within the burst: %v", i, r)
		}
	}
	_ = a.conn.Close(websocket.StatusNormalClosure, "")
	eventually(t, "the first socket is released", func() bool {
		h.admission.mu.Lock()
		defer h.admission.mu.Unlock()
		return h.admission.total == 0
	})
	b := dialWS(t, url)
	if r := b.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
		t.Fatalf("reconnect: %v", r)
	}
	if r := b.ask(`{"action":"waitFor","requestId":"again"}`); r["code"] != "rate_limited" {
		t.Errorf("the first frame after reconnecting: %v, want rate_limited", r)
	}
	if n := refused(t, reg, limits.WSFrameRate); n != 1 {
		t.Errorf("ws_frame_rate counted %d, want 1", n)
	}
}

// The shares of principals without sockets are kept while they carry
// anything a new share would not (a rate still refilling, bytes held) and
// dropped once idle, so the map is bounded by the principals active within
// a sweep interval plus their refill time.
func TestIdleSharesAreForgotten(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// 10 frames refill in 100 s, one in 10 s.
		h, _ := floodHandler(t, func(l *config.WSLimits) { l.FramesPerSecond, l.FrameBurst = 0.1, 10 })
		a := &h.admission
		a.mu.Lock()
		defer a.mu.Unlock()
		a.perPrincipal = map[string]*principalShare{}
		share := func(key string) *principalShare {
			sh := h.newShare()
			a.perPrincipal[key] = sh
			return sh
		}
		now := time.Now()
		share("touched").frames.AllowN(now, 1)
		share("spent").frames.AllowN(now, 10)
		share("connected").sockets = 1
		if !share("pending").pending.take(context.Background(), 100) {
			t.Fatal("take")
		}
		for i := range 1000 {
			share(fmt.Sprint("idle", i))
		}
		a.sweep(now)
		if len(a.perPrincipal) != 4 {
			t.Fatalf("%d shares after the first sweep, want the 4 not idle", len(a.perPrincipal))
		}
		time.Sleep(shareSweepEvery / 2)
		a.perPrincipal["touched"].frames.AllowN(time.Now(), 1)
		a.sweep(time.Now()) // within the interval: nothing is looked at
		if len(a.perPrincipal) != 4 {
			t.Fatalf("%d shares after an early sweep, want 4", len(a.perPrincipal))
		}
		time.Sleep(shareSweepEvery / 2)
		a.sweep(time.Now())
		for _, key := range []string{"spent", "connected", "pending"} {
			if a.perPrincipal[key] == nil {
				t.Errorf("%s's share was dropped while not idle", key)
			}
		}
		if a.perPrincipal["touched"] != nil {
			t.Errorf("the refilled share was kept")
		}
		time.Sleep(shareSweepEvery)
		a.perPrincipal["connected"].sockets = 0
		a.perPrincipal["pending"].pending.give(100)
		a.sweep(time.Now())
		if len(a.perPrincipal) != 0 {
			t.Errorf("%d shares once every principal is idle, want 0", len(a.perPrincipal))
		}
	})
}

// A frame over the frame limit is drained (to answer it with its action
// and requestId) under the message deadline: one trickled in, or never
// finished, closes the socket 1008 at the deadline instead of holding its
// principal's reading slot for as long as the socket lives.
func TestOversizedFrameDrainHasADeadline(t *testing.T) {
	t.Parallel()
	h, reg := floodHandler(t, func(l *config.WSLimits) {})
	// The test fires the message deadline itself, once the frame passed
	// the limit (however long its first MiB took to arrive).
	var deadlines messageDeadlines
	h.afterMessageTimeout = deadlines.after
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := dialWS(t, strings.Replace(srv.URL, "http", "ws", 1))
	if r := c.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
		t.Fatalf("connect: %v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := c.conn.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	// Past the limit, then nothing more: the message never ends.
	if _, err := io.WriteString(w, `{"action":"waitFor","requestId":"big","pad":"`+strings.Repeat("x", MaxMessageBytes+4096)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame passes the limit and is drained", func() bool {
		return gauge(t, reg, "threadengine_budget_bytes_peak", limits.WSFrameBytes) >= MaxMessageBytes
	})
	if !deadlines.fireLast() {
		t.Fatal("the oversized frame's drain had no message deadline running")
	}
	if st := c.closed(); st != websocket.StatusPolicyViolation {
		t.Errorf("closed with %v, want 1008", st)
	}
	if n := refused(t, reg, limits.WSMessageTimeout); n != 1 {
		t.Errorf("ws_message_timeout counted %d, want 1", n)
	}
	if n := refused(t, reg, limits.WSMessageBytes); n != 0 {
		t.Errorf("the unfinished oversized frame was answered (%d)", n)
	}
	eventually(t, "the socket's reading slot and place are given back", func() bool {
		h.admission.mu.Lock()
		defer h.admission.mu.Unlock()
		for _, sh := range h.admission.perPrincipal {
			if len(sh.reading) != 0 || sh.sockets != 0 {
				return false
			}
		}
		return h.admission.total == 0
	})
}

// A frame over its principal's rates is refused from a scan of its bytes,
// before it is decoded: a frame that would not even decode gets
// rate_limited with its action and requestId once the rate is spent (and
// the invalid-JSON error while it is not), and a free action is still
// decoded and run.
func TestRateIsCheckedBeforeDecoding(t *testing.T) {
	t.Parallel()
	h, reg := floodHandler(t, func(l *config.WSLimits) {
		l.FramesPerSecond, l.FrameBurst = 0.001, 1 // no token comes back during the test
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := dialWS(t, strings.Replace(srv.URL, "http", "ws", 1))
	if r := c.ask(`{"action":"connect","apiKey":"good"}`); r["status"] != "success" {
		t.Fatalf("connect: %v", r)
	}
	broken := `{"action":"startThread","requestId":"r1","label":"x",}`
	if r := c.ask(broken); r["code"] != "validation_failed" {
		t.Fatalf("a broken frame within the rate: %v, want the decoding error", r)
	}
	r := c.ask(strings.Replace(broken, "r1", "r2", 1))
	if r["code"] != "rate_limited" || r["action"] != "startThread" || r["requestId"] != "r2" || r["retryAfterMs"] == nil {
		t.Errorf("a broken frame over the rate: %v, want rate_limited naming its action and requestId", r)
	}
	if r := c.ask(`{"action":"subscribe","stepName":"s","requestId":"s"}`); r["status"] != "success" {
		t.Errorf("a free action over the rate: %v", r)
	}
	if n := refused(t, reg, limits.WSFrameRate); n != 1 {
		t.Errorf("ws_frame_rate counted %d, want 1", n)
	}
}

// messageDeadlines stands for time.AfterFunc of the message deadlines: the
// test fires the last one set when it chooses.
type messageDeadlines struct {
	mu   sync.Mutex
	last *messageDeadline
}

type messageDeadline struct {
	mu            sync.Mutex
	f             func()
	stopped, done bool
}

func (m *messageDeadlines) after(_ time.Duration, f func()) (stop func() bool) {
	d := &messageDeadline{f: f}
	m.mu.Lock()
	m.last = d
	m.mu.Unlock()
	return func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.done || d.stopped {
			return false
		}
		d.stopped = true
		return true
	}
}

// fireLast starts the last deadline set, as its timer would; false if it
// was stopped (its message was read in time) or there is none.
func (m *messageDeadlines) fireLast() bool {
	m.mu.Lock()
	d := m.last
	m.mu.Unlock()
	if d == nil {
		return false
	}
	d.mu.Lock()
	if d.stopped || d.done {
		d.mu.Unlock()
		return false
	}
	d.done = true
	d.mu.Unlock()
	go d.f() // in a goroutine of its own, as time.AfterFunc does: it waits for the client's close
	return true
}
