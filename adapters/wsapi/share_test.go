package wsapi

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
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
	// Long enough for the first MiB to arrive on a loaded machine (the
	// peak checked below says it did), short enough for a test.
	h.messageTimeout = 5 * time.Second
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
	if st := c.closed(); st != websocket.StatusPolicyViolation {
		t.Errorf("closed with %v, want 1008", st)
	}
	if peak := gauge(t, reg, "threadengine_budget_bytes_peak", limits.WSFrameBytes); peak < MaxMessageBytes {
		t.Fatalf("the frame budget peaked at %.0f: the deadline came before the frame passed the limit, so its drain was not tested", peak)
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
