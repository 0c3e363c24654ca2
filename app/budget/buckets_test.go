package budget

import (
	"testing"
	"time"
)

func TestBucketsChargeIntoDebtAndRefill(t *testing.T) {
	t.Parallel()
	b := NewBuckets(1000, 2000) // 1,000 a second, burst 2,000
	now := time.Unix(1_700_000_000, 0)
	if d := b.Debt("a", now); d != 0 {
		t.Fatalf("a new principal owes %v", d)
	}
	b.Charge("a", 1500, now)
	if d := b.Debt("a", now); d != 0 {
		t.Fatalf("within the burst, a owes %v", d)
	}
	b.Charge("a", 1500, now) // 1,000 over: one second of debt (plus the token Debt asks for)
	if d := b.Debt("a", now); d < time.Second || d > time.Second+2*time.Millisecond {
		t.Fatalf("a owes %v, want about 1 s", d)
	}
	if d := b.Debt("b", now); d != 0 {
		t.Fatalf("another principal owes %v for a's charges", d)
	}
	if d := b.Debt("a", now.Add(1100*time.Millisecond)); d != 0 {
		t.Fatalf("after the debt's time a still owes %v", d)
	}
	// Debt only looks: asking again takes nothing.
	for range 5 {
		b.Debt("a", now.Add(1100*time.Millisecond))
	}
	if d := b.Debt("a", now.Add(1100*time.Millisecond)); d != 0 {
		t.Fatalf("looking took tokens: a owes %v", d)
	}
	// A charge larger than the burst costs one burst, not more.
	b.Charge("c", 1_000_000, now)
	if d := b.Debt("c", now); d > 2*time.Second+2*time.Millisecond {
		t.Fatalf("c owes %v for one charge, want at most the 2 s a full bucket takes", d)
	}
}

func TestBucketsForgetIdlePrincipals(t *testing.T) {
	t.Parallel()
	b := NewBuckets(1000, 2000)
	now := time.Unix(1_700_000_000, 0)
	b.Charge("a", 2000, now)
	b.Charge("b", 10, now)
	if b.Len() != 2 {
		t.Fatalf("%d buckets, want 2", b.Len())
	}
	// Two seconds later both are full again; the next use after the sweep
	// interval forgets them, keeping the one charged now.
	later := now.Add(SweepEvery + time.Second)
	b.Charge("c", 2000, later)
	if b.Len() != 1 {
		t.Fatalf("%d buckets after the sweep, want 1 (c)", b.Len())
	}
	if d := b.Debt("a", later); d != 0 {
		t.Fatalf("a forgotten principal owes %v", d)
	}
}
