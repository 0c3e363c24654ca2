package abuse

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/sqldb"
)

// budgetPeak is threadengine_budget_bytes_peak for budget.
func (e *engine) budgetPeak(t *testing.T, budget string) float64 {
	t.Helper()
	return e.metric(t, `threadengine_budget_bytes_peak{budget="`+budget+`"}`)
}

// TestWriteFloodPerPrincipal is issue 25 item 4: 100 sockets of one member
// send 20 KB startThread frames without reading their replies (before:
// /healthz at 2.1-2.4 s). The principal's byte rate (lowered here to
// 2 MiB/s, burst 2 MiB, so the refusals are certain on any machine) refuses the excess
// rate_limited, and its queued replies stay within their budget, so the
// engine stops reading the flood instead of buffering it. Other writers'
// throughput with and without the flood, in the same run, is logged side by
// side; /healthz must answer throughout and RSS stay in budget.
func TestWriteFloodPerPrincipal(t *testing.T) {
	t.Parallel()
	for _, d := range dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			e := start(t, d, "THREADENGINE_LIMITS__WS__BYTES_PER_SECOND=2097152", "THREADENGINE_LIMITS__WS__BYTE_BURST=2097152")
			attacker := e.serviceKey(t, "flood", "member")
			bystander := e.serviceKey(t, "writer", "member")
			normal, err := newNormalClient(e, e.serviceKey(t, "normal", "member"))
			if err != nil {
				t.Fatal(err)
			}
			defer normal.close()
			writers(t, e, bystander, 4, time.Second) // warm up
			// The watch (healthz probes, the normal client) runs in both
			// windows, so neither figure charges its work to the flood.
			w := e.during(t, normal.round)
			frame := []byte(`{"action":"startThread","refs":{"orderId":"flood"},"label":"` + strings.Repeat("x", 20<<10) + `"}`)
			var sent atomic.Int64
			// Each round's flood: 100 fresh sockets, each writing 30 frames
			// (60 MB in all) and never reading: an unbounded writer in this
			// process spent the shared cores copying hundreds of megabytes
			// into loopback buffers the engine never read, which measured
			// the machine, not the engine.
			sideBySide(t, e, d, "100 sockets flooding 20 KB frames", bystander, measureRounds(), func() func() {
				ctx, stop := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var conns []*wsClient
				for range 100 {
					c, err := dialWS(ctx, e.URL)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := c.ok(ctx, map[string]any{"action": "connect", "apiKey": attacker, "serviceName": "flood"}); err != nil {
						t.Fatal(err)
					}
					conns = append(conns, c)
				}
				for _, c := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 30 && c.conn.Write(ctx, websocket.MessageText, frame) == nil; i++ {
							sent.Add(1)
						}
					}()
				}
				return func() {
					stop()
					wg.Wait()
					for _, c := range conns {
						_ = c.conn.CloseNow()
					}
				}
			})
			w.check(t, "write flood")
			refused := e.refusals(t, "ws_frame_rate")
			queuedPeak := e.budgetPeak(t, "ws_queued_bytes")
			t.Logf("%s: flood sent %d frames of 20 KB, %d refused rate_limited; queued bytes peak %.0f (budget 4 MiB); load %s",
				d, sent.Load(), refused, queuedPeak, loadavg())
			if refused == 0 {
				t.Errorf("no flood frame was refused rate_limited")
			}
			if queuedPeak > 4<<20 {
				t.Errorf("queued bytes of one principal peaked at %.0f, over 4 MiB", queuedPeak)
			}
		})
	}
}

// TestUnfinishedFragmentedMessages is issue 25 item 5: 100 sockets of one
// member each hold ~1 MB of a message they never finish (before: 300-330
// MiB). Four of the principal's sockets are read at once
// (limits.ws.max_reading_per_principal), the others wait unread; the bytes
// read are taken from the principal's pending share (4 MiB) as they
// arrive, and a message not complete 15 s after its reading began closes
// its socket (1008, counted as ws_message_timeout; then the next waiting
// socket is read). The test waits for the first four such closes, then
// checks memory and the share's peak.
func TestUnfinishedFragmentedMessages(t *testing.T) {
	t.Parallel()
	for _, d := range dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			e := start(t, d)
			attacker := e.serviceKey(t, "fragments", "member")
			normal, err := newNormalClient(e, e.serviceKey(t, "normal", "member"))
			if err != nil {
				t.Fatal(err)
			}
			defer normal.close()
			bystander := e.serviceKey(t, "bystander", "member")
			writers(t, e, bystander, 4, time.Second) // warm up
			w := e.during(t, normal.round)
			piece := []byte(`{"action":"startThread","label":"` + strings.Repeat("x", 64<<10))
			// Each round: 100 fresh sockets hold their messages; measured once
			// the engine has read what it reads of them (the held bytes of the
			// principal's four read sockets, ~3.75 MiB, at least 3 MiB: the
			// steady state), and closed at the round's end.
			sideBySide(t, e, d, "100 sockets holding unfinished messages", bystander, measureRounds(), func() func() {
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var conns []*wsClient
				hold(t, ctx, e, attacker, piece, &wg, &conns)
				e.until(t, `threadengine_budget_bytes{budget="ws_pending_bytes"}`, 3<<20)
				return func() { release(cancel, &wg, conns) }
			})
			// Then the bound: sockets held until the engine closes them.
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var conns []*wsClient
			hold(t, ctx, e, attacker, piece, &wg, &conns)
			closed := e.until(t, `threadengine_limit_refusals_total{limit="ws_message_timeout"}`, 4)
			peak := e.budgetPeak(t, "ws_pending_bytes")
			w.check(t, "unfinished fragmented messages")
			release(cancel, &wg, conns)
			t.Logf("%s: %.0f of 100 sockets closed 1008 by then (ws_message_timeout); pending bytes peak %.0f (share 4 MiB)", d, closed, peak)
			if peak > 4<<20 {
				t.Errorf("pending bytes of one principal peaked at %.0f, over 4 MiB", peak)
			}
		})
	}
}

// TestRefusedUpgradesCloseTheirConnections is issue 25 item 8: upgrades
// refused with 429 kept their HTTP connection open for the idle timeout
// (2,980 of 3,000 still open 15 s later). Each refused connection must be
// closed by the engine right after its answer (EOF on the next read; the
// read deadline is a safety net far under the 120 s idle timeout).
func TestRefusedUpgradesCloseTheirConnections(t *testing.T) {
	t.Parallel()
	e := start(t, sqldb.SQLite, "THREADENGINE_LIMITS__WS__MAX_UNAUTHENTICATED=5")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 5 {
		c, err := dialWS(ctx, e.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
	}
	const refusedN = 200
	var wg sync.WaitGroup
	var closedN, statusOK atomic.Int64
	for range refusedN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			fmt.Fprintf(c, "GET /threads HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"+
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				statusOK.Add(1)
			}
			if _, err := br.ReadByte(); err == io.EOF {
				closedN.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("refused upgrades: %d answered 429, %d of them closed by the engine", statusOK.Load(), closedN.Load())
	if statusOK.Load() != refusedN || closedN.Load() != refusedN {
		t.Errorf("%d of %d upgrades answered 429 and %d connections closed; want all", statusOK.Load(), refusedN, closedN.Load())
	}
}

// release closes sockets opened by hold and waits for their writers.
func release(cancel context.CancelFunc, wg *sync.WaitGroup, conns []*wsClient) {
	cancel()
	for _, c := range conns {
		_ = c.conn.CloseNow()
	}
	wg.Wait()
}

// hold opens 100 sockets of key, each sending ~1 MB of one message it
// never finishes (pieces under the 1 MiB frame limit, so the engine holds
// them rather than draining them).
func hold(t *testing.T, ctx context.Context, e *engine, key string, piece []byte, wg *sync.WaitGroup, conns *[]*wsClient) {
	t.Helper()
	for range 100 {
		c, err := dialWS(ctx, e.URL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ok(ctx, map[string]any{"action": "connect", "apiKey": key, "serviceName": "fragments"}); err != nil {
			t.Fatal(err)
		}
		*conns = append(*conns, c)
		wg.Add(1)
		go func() { // ~1 MB of one message, never finished
			defer wg.Done()
			mw, err := c.conn.Writer(ctx, websocket.MessageText)
			if err != nil {
				return
			}
			for range 15 { // under the 1 MiB frame limit, so it is held, not drained
				if _, err := mw.Write(piece); err != nil {
					return // closed by the engine
				}
			}
		}()
	}
}
