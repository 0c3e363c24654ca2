package sqldbtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Outage is a TCP relay in front of the test's PostgreSQL server: point a
// database URL at it (Via), then Cut it to make the server unreachable the
// way a crashed or partitioned database is — established connections are
// reset and new ones refused. Nothing of the driver is replaced.
type Outage struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool
	wg    sync.WaitGroup
}

// NewOutage relays to the host:port of target (a postgres:// URL) until
// Cut or the end of the test.
func NewOutage(t testing.TB, target string) *Outage {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &Outage{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	o.wg.Add(1)
	go o.accept()
	t.Cleanup(o.Cut)
	return o
}

// Via is rawURL with its host:port replaced by the relay's.
func (o *Outage) Via(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = o.ln.Addr().String()
	return u.String()
}

// Cut closes the relay's port and resets every relayed connection; it
// returns once every relay goroutine has ended.
func (o *Outage) Cut() {
	o.mu.Lock()
	o.cut = true
	for c := range o.conns {
		_ = c.Close()
	}
	o.mu.Unlock()
	_ = o.ln.Close()
	o.wg.Wait()
}

func (o *Outage) accept() {
	defer o.wg.Done()
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", o.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !o.track(c, s) {
			return
		}
		o.wg.Add(2)
		go o.pipe(c, s)
		go o.pipe(s, c)
	}
}

// track registers both ends of a relayed connection, unless Cut ran.
func (o *Outage) track(a, b net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cut {
		_, _ = a.Close(), b.Close()
		return false
	}
	o.conns[a], o.conns[b] = struct{}{}, struct{}{}
	return true
}

func (o *Outage) pipe(dst, src net.Conn) {
	defer o.wg.Done()
	_, _ = io.Copy(dst, src)
	_, _ = dst.Close(), src.Close()
}
