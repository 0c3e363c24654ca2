package abuse

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/adapters/sqldb"
)

// dialFrom dials /threads as the client at ip (behind a trusted proxy).
func dialFrom(ctx context.Context, e *engine, ip string) (*wsClient, int, error) {
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+"/threads",
		&websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {ip}}})
	if err != nil {
		if resp != nil {
			return nil, resp.StatusCode, nil
		}
		return nil, 0, err
	}
	conn.SetReadLimit(8 << 20)
	return &wsClient{conn: conn}, 0, nil
}

// manyFields is a frame of about size bytes made of tiny top-level fields.
func manyFields(action string, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"action":"` + action + `"`)
	for i := 0; b.Len() < size-16; i++ {
		fmt.Fprintf(&b, `,"%d":0`, i)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// Issue 14 point 3, as a reviewer found it still open: one client address
// could hold every unauthenticated slot (now a share per address), and
// sockets could send megabyte frames of tiny fields before and after
// connect, which the engine decoded into maps (4.65 GiB with 200 sockets).
// Frames before connect are limited to 16 KiB (a larger one closes the
// socket at 64 KiB), a frame may have 64 top-level fields, and frames being
// handled share one byte budget; the engine stays within its RSS budget.
func TestUnauthenticatedSharesAndLargeFrames(t *testing.T) {
	t.Parallel()
	e := start(t, sqldb.SQLite, "THREADENGINE_SERVER__TRUSTED_PROXIES=127.0.0.1/32",
		"THREADENGINE_LIMITS__WS__MAX_UNAUTHENTICATED_PER_ADDRESS=5", "THREADENGINE_LIMITS__WS__CONNECT_TIMEOUT=20s")
	member := e.serviceKey(t, "writer", "member")
	normal, err := newNormalClient(e, e.serviceKey(t, "normal", "member"))
	if err != nil {
		t.Fatal(err)
	}
	defer normal.close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// One address holds five slots; its sixth is refused, another
	// address is not.
	var squat []*wsClient
	for i := 0; i < 6; i++ {
		c, status, err := dialFrom(ctx, e, "203.0.113.7")
		switch {
		case err != nil:
			t.Fatal(err)
		case i < 5 && c == nil, i == 5 && status != http.StatusTooManyRequests:
			t.Fatalf("socket %d from one address: %v %d", i, c != nil, status)
		case c != nil:
			squat = append(squat, c)
		}
	}
	other, status, err := dialFrom(ctx, e, "203.0.113.8")
	if err != nil || other == nil {
		t.Fatalf("another address refused: %d %v", status, err)
	}
	if _, err := other.ok(ctx, map[string]any{"action": "connect", "apiKey": member, "serviceName": "other"}); err != nil {
		t.Fatal(err)
	}
	other.close()

	// Before connect: a 20 KiB frame is refused with a reply, a 1 MiB one
	// closes the socket.
	r, err := squat[0].call(ctx, map[string]any{"action": "connect", "pad": strings.Repeat("x", 20<<10)})
	if err != nil || r["status"] != "error" || !strings.Contains(fmt.Sprint(r["message"]), "before connect") {
		t.Fatalf("20 KiB before connect: %v %v", r, err)
	}
	if err := squat[1].conn.Write(ctx, websocket.MessageText, manyFields("x", 1<<20)); err == nil {
		if code := closeCode(ctx, squat[1]); code != websocket.StatusMessageTooBig {
			t.Fatalf("1 MiB before connect closed with %v, want 1009", code)
		}
	}
	for _, c := range squat {
		c.close()
	}

	// The attack, with the normal client working meanwhile: 100 sockets
	// from 20 addresses send megabyte frames before connect, and 20
	// authenticated sockets send megabyte frames of tiny fields.
	preConnect, afterConnect := manyFields("connect", 1<<20), manyFields("startThread", 1<<20) // built once
	w := e.during(t, normal.round)
	var wg sync.WaitGroup
	var mu sync.Mutex
	tooMany := 0
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, _, err := dialFrom(ctx, e, fmt.Sprintf("198.51.100.%d", i%20))
			if err != nil || c == nil {
				return // refused: fine
			}
			defer c.close()
			for range 3 {
				if c.conn.Write(ctx, websocket.MessageText, preConnect) != nil {
					return
				}
			}
		}(i)
	}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, _, err := dialFrom(ctx, e, fmt.Sprintf("192.0.2.%d", i))
			if err != nil || c == nil {
				t.Errorf("authenticated attacker's socket refused: %v", err)
				return
			}
			defer c.close()
			if _, err := c.ok(ctx, map[string]any{"action": "connect", "apiKey": member, "serviceName": "flood"}); err != nil {
				t.Error(err)
				return
			}
			for range 3 {
				if err := c.conn.Write(ctx, websocket.MessageText, afterConnect); err != nil {
					t.Error(err)
					return
				}
				_, data, err := c.conn.Read(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				// Refused either way: decoded only up to its 65th field, or
				// not decoded at all because the frame is over its
				// principal's byte rate (checked before decoding).
				if strings.Contains(string(data), "Too many fields") || strings.Contains(string(data), `"rate_limited"`) {
					mu.Lock()
					tooMany++
					mu.Unlock()
				}
			}
		}(i)
	}
	wg.Wait()
	w.check(t, "large frames before and after connect")
	if tooMany != 60 {
		t.Errorf("%d of 60 many-field frames refused ('Too many fields' or rate_limited)", tooMany)
	}
}
