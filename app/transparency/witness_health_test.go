package transparency

import (
	"testing"
	"time"

	"github.com/threadengine/engine/ports"
)

// A witness that keeps failing is logged on a change of state, then once
// per witnessWarnEvery; its recovery is reported once.
func TestWitnessHealthRateLimitsWarnings(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	type event struct {
		at             time.Duration // since t0
		fail           bool
		state          witnessState
		wantWarn       bool
		wantSuppressed int
		wantRecovered  bool
		wantFailures   int
	}
	cases := []struct {
		name   string
		events []event
	}{
		{"first failure is logged, the next ones within a minute are not", []event{
			{at: 0, fail: true, state: witnessFailing, wantWarn: true},
			{at: time.Second, fail: true, state: witnessFailing},
			{at: 30 * time.Second, fail: true, state: witnessFailing},
			{at: witnessWarnEvery, fail: true, state: witnessFailing, wantWarn: true, wantSuppressed: 2},
			{at: witnessWarnEvery + time.Second, fail: true, state: witnessFailing},
		}},
		{"a change of state is logged at once", []event{
			{at: 0, fail: true, state: witnessFailing, wantWarn: true},
			{at: time.Second, fail: true, state: witnessRefusesFork, wantWarn: true},
			{at: 2 * time.Second, fail: true, state: witnessRefusesFork},
			{at: 3 * time.Second, fail: true, state: witnessFailing, wantWarn: true, wantSuppressed: 1},
		}},
		{"recovery is reported once, and the next failure is logged again", []event{
			{at: 0, fail: true, state: witnessFailing, wantWarn: true},
			{at: time.Second, fail: true, state: witnessFailing},
			{at: 2 * time.Second, wantRecovered: true, wantFailures: 2},
			{at: 3 * time.Second},
			{at: 4 * time.Second, fail: true, state: witnessFailing, wantWarn: true},
		}},
		{"a healthy witness logs nothing", []event{{at: 0}, {at: time.Second}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h witnessHealth
			for i, e := range c.events {
				if e.fail {
					warn, suppressed := h.failed(t0.Add(e.at), e.state)
					if warn != e.wantWarn || suppressed != e.wantSuppressed {
						t.Errorf("event %d: warn %v suppressed %d, want %v %d", i, warn, suppressed, e.wantWarn, e.wantSuppressed)
					}
					continue
				}
				failures, recovered := h.succeeded()
				if recovered != e.wantRecovered || (recovered && failures != e.wantFailures) {
					t.Errorf("event %d: recovered %v after %d failures, want %v %d", i, recovered, failures, e.wantRecovered, e.wantFailures)
				}
			}
		})
	}
}

// The mailbox keeps the newest checkpoint only, and an offer never blocks.
func TestNewestKeepsTheNewestCheckpoint(t *testing.T) {
	n := newNewest()
	if _, ok := n.take(); ok {
		t.Fatal("an empty mailbox gave a checkpoint")
	}
	for size := int64(1); size <= 5; size++ {
		n.offer(ports.SignedCheckpoint{Size: size}) // nobody takes: must not block
	}
	n.offer(ports.SignedCheckpoint{Size: 3}) // older than the one held: ignored
	select {
	case <-n.ready:
	default:
		t.Fatal("no wake-up after offers")
	}
	if cp, ok := n.take(); !ok || cp.Size != 5 {
		t.Fatalf("took %d %v, want the newest, 5", cp.Size, ok)
	}
	if _, ok := n.take(); ok {
		t.Fatal("a checkpoint was taken twice")
	}
	// The same size again (it may carry cosignatures since) is taken.
	n.offer(ports.SignedCheckpoint{Size: 5, Note: "again"})
	if cp, ok := n.take(); !ok || cp.Note != "again" {
		t.Fatalf("took %+v %v, want the re-offered checkpoint", cp, ok)
	}
}
