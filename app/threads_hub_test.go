package app_test

import (
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/ports"
)

// fakeSub records what the hub pushes to it.
type fakeSub struct {
	mu  sync.Mutex
	got []string
}

func (f *fakeSub) Deliver(_ string, n ports.NotificationRecord) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, n.ID)
	return true
}

func (f *fakeSub) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func note(id, owner, step string) ports.NotificationRecord {
	return ports.NotificationRecord{ID: id, ThreadID: "t1", StepName: step, OwnerID: owner, Source: "execution",
		NotificationType: "execution.success"}
}

func TestHubHoldsNotificationsForAReconnectingPrincipal(t *testing.T) {
	cases := []struct {
		name         string
		hadSession   bool // u1 had a subscribed session that closed
		holdFor      time.Duration
		wait         time.Duration // between the publish and the new subscription
		owner        string
		resubscribe  string
		wantReceived []string
	}{
		{"reconnect within the hold time gets it", true, time.Minute, 0, "u1", "ship", []string{"n1"}},
		{"after the hold time it is gone", true, 20 * time.Millisecond, 60 * time.Millisecond, "u1", "ship", nil},
		{"holding disabled", true, 0, 0, "u1", "ship", nil},
		{"a principal that never subscribed is not held for", false, time.Minute, 0, "u1", "ship", nil},
		{"another principal's notification is not delivered", true, time.Minute, 0, "u2", "ship", nil},
		{"a different step is held until its subscriber comes", true, time.Minute, 0, "u1", "pack", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := app.NewHub(nil)
			h.SetHoldFor(tc.holdFor)
			if tc.hadSession {
				old := h.Register(&fakeSub{}, "u1", 10)
				old.Subscribe("ship", nil)
				old.Close()
			}
			h.Publish([]ports.NotificationRecord{note("n1", tc.owner, "ship")})
			time.Sleep(tc.wait)
			sub := &fakeSub{}
			s := h.Register(sub, "u1", 10)
			s.Subscribe(tc.resubscribe, nil)
			got := sub.ids()
			if len(got) != len(tc.wantReceived) || (len(got) > 0 && got[0] != tc.wantReceived[0]) {
				t.Fatalf("received %v, want %v", got, tc.wantReceived)
			}
			if tc.resubscribe != "ship" {
				s.Subscribe("ship", nil) // still held for this step's subscriber
				if got := sub.ids(); len(got) != 1 || got[0] != "n1" {
					t.Fatalf("after subscribing to ship: received %v, want [n1]", got)
				}
			}
		})
	}
}

// A push still unacknowledged when its session closes goes to the principal's
// next session for that step.
func TestHubHandsUnacknowledgedPushesToTheNextSession(t *testing.T) {
	h := app.NewHub(nil)
	first := &fakeSub{}
	s1 := h.Register(first, "u1", 10)
	s1.Subscribe("ship", []string{"step.success"})
	h.Publish([]ports.NotificationRecord{note("n1", "u1", "ship"), note("n2", "u1", "ship")})
	if got := first.ids(); len(got) != 2 {
		t.Fatalf("first session got %v", got)
	}
	s1.Close()
	second := &fakeSub{}
	s2 := h.Register(second, "u1", 10)
	s2.Subscribe("ship", []string{"step.success"})
	if got := second.ids(); len(got) != 2 || got[0] != "n1" || got[1] != "n2" {
		t.Fatalf("second session got %v, want [n1 n2] in order", got)
	}
}
