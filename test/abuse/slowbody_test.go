package abuse

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
)

// TestSlowBodies replays issue 14 point 3's slow request bodies on
// /auth/api-key/exchange (held at least 45 s before): the read timeout,
// configured to 2 s here, cuts each off.
func TestSlowBodies(t *testing.T) {
	t.Parallel()
	const readTimeout = 2 * time.Second
	e := start(t, sqldb.SQLite, "THREADENGINE_LIMITS__HTTP__READ_TIMEOUT="+readTimeout.String())
	normal, err := newNormalClient(e, e.serviceKey(t, "normal", "member"))
	if err != nil {
		t.Fatal(err)
	}
	defer normal.close()
	w := e.during(t, normal.round)
	const conns = 50
	var wg sync.WaitGroup
	held := make(chan time.Duration, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			t0 := time.Now()
			fmt.Fprintf(c, "POST /auth/api-key/exchange HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
			// One byte a second until the server gives up.
			br := bufio.NewReader(c)
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := http.ReadResponse(br, nil)
				if err == nil {
					resp.Body.Close()
				}
			}()
			for {
				select {
				case <-done:
					held <- time.Since(t0)
					return
				case <-time.After(time.Second):
					if _, err := c.Write([]byte(" ")); err != nil {
						<-done
						held <- time.Since(t0)
						return
					}
				}
				// Without the read timeout the body trickles for 1,000 s;
				// a minute only bounds that, however busy the machine.
				if time.Since(t0) > time.Minute {
					t.Errorf("a slow body was held over a minute")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(held)
	var worst time.Duration
	for d := range held {
		worst = max(worst, d)
	}
	t.Logf("slow bodies: %d connections, the longest held %v (read timeout %v)", conns, worst.Round(10*time.Millisecond), readTimeout)
	w.check(t, "slow bodies")
}
