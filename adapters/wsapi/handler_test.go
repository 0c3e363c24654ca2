package wsapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

type fakeAuthn struct {
	revoked atomic.Bool
	checks  chan struct{} // one per authentication, when set (never blocks)
}

func (f *fakeAuthn) AuthenticateAPIKey(_ context.Context, secret string) (domain.Principal, error) {
	select {
	case f.checks <- struct{}{}:
	default:
	}
	if secret != "good" || f.revoked.Load() {
		return domain.Principal{}, domain.ErrUnauthenticated
	}
	return domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember}, nil
}

func (f *fakeAuthn) AuthenticateSession(context.Context, string) (domain.Principal, error) {
	return domain.Principal{}, domain.ErrUnauthenticated
}

// A key revoked while its socket is open stops working within a ping interval.
func TestRevokedKeyClosesOpenSocket(t *testing.T) {
	authn := &fakeAuthn{checks: make(chan struct{}, 16)}
	h := &Handler{Threads: threads.New(nil, nil, nil, []byte("k"), nil), Authn: authn, PingInterval: 100 * time.Millisecond}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// Bounds a hang only; nothing below races the clock.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	frames := make(chan string, 16)
	readErr := make(chan error, 1)
	go func() { // a reader answers pings, as SDK socket libraries do
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				readErr <- err
				return
			}
			frames <- string(data)
		}
	}()
	send := func(m map[string]any) string {
		b, _ := json.Marshal(m)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-frames:
			return f
		case err := <-readErr:
			t.Fatalf("read: %v", err)
		}
		return ""
	}
	if f := send(map[string]any{"action": "connect", "apiKey": "good"}); !strings.Contains(f, `"status":"success"`) {
		t.Fatalf("connect: %s", f)
	}
	// Pings (answered) and re-checks keep a valid connection open: the
	// connect and three re-checks have authenticated the key.
	for range 4 {
		select {
		case <-authn.checks:
		case err := <-readErr:
			t.Fatalf("closed before the re-checks: %v", err)
		case <-ctx.Done():
			t.Fatal("no re-check")
		}
	}
	if f := send(map[string]any{"action": "heartbeat", "requestId": "h1"}); !strings.Contains(f, "heartbeat") {
		t.Fatalf("heartbeat: %s", f)
	}
	authn.revoked.Store(true)
	select {
	case err := <-readErr:
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("after revocation: %v, want close 1008", err)
		}
	case <-ctx.Done():
		t.Fatal("socket still open after the key was revoked")
	}
}

func TestRoutedEventTypes(t *testing.T) {
	for _, c := range []struct {
		key  string
		evs  []string
		want string
	}{
		{"global", []string{"step.success", "step.failed", "rule.passed", "rule.violated"}, "step.success,step.failed,rule.passed,rule.violated,thread.*"},
		{"global", []string{"step.success", "step.failed"}, "step.success,step.failed,thread.*"},
		{"global", []string{"thread.completed"}, "thread.completed"},
		{"global", []string{"execution.success", "thread.cancelled"}, "execution.success,thread.cancelled"},
		{"global", []string{"thread.failed"}, "thread.failed"},
		{"global", []string{"*"}, "*"},
		{"global", nil, ""},
		{"ship", []string{"step.success"}, "step.success"},
	} {
		if got := strings.Join(routedEventTypes(c.key, c.evs), ","); got != c.want {
			t.Errorf("routedEventTypes(%q, %v) = %q, want %q", c.key, c.evs, got, c.want)
		}
	}
}

// Every thread event the engine pushes (app/threads/step.go, end.go) can be
// subscribed to by name: thread.failed was once refused as unknown.
func TestKnownEventsCoverThreadPushes(t *testing.T) {
	for _, e := range []string{"thread.completed", "thread.failed", "thread.cancelled"} {
		if !knownEvents[e] {
			t.Errorf("subscribe to %q is refused as an unknown event type", e)
		}
	}
}
