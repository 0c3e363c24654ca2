package httpapi

import (
	"fmt"
	"testing"
	"time"
)

func TestFailureLimiterBuckets(t *testing.T) {
	t.Parallel()
	l := newFailureLimiter(3, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	guess := bucket("10.0.0.1", "td_AAAAAAAAguess")
	for i := 0; i < 3; i++ {
		if wait := l.fail(guess, now); wait != 0 {
			t.Fatalf("failure %d blocked already (%v)", i+1, wait)
		}
	}
	if wait := l.fail(guess, now.Add(10*time.Second)); wait != 50*time.Second {
		t.Fatalf("fourth failure: wait %v, want 50s", wait)
	}
	// Another key prefix from the same address, and the same prefix from
	// another address, are their own buckets.
	if l.fail(bucket("10.0.0.1", "td_BBBBBBBBother"), now) != 0 || l.fail(bucket("10.0.0.2", "td_AAAAAAAAguess"), now) != 0 {
		t.Error("a different bucket is blocked")
	}
	// License attempts share one bucket per address, whatever the key.
	if bucket("10.0.0.1", "") != "10.0.0.1 license" || bucket("10.0.0.1", "") == bucket("10.0.0.2", "") {
		t.Error("license buckets")
	}
	// The window resets.
	if wait := l.fail(guess, now.Add(time.Minute)); wait != 0 {
		t.Errorf("after the window: wait %v", wait)
	}
}

func TestFailureLimiterMemoryIsBounded(t *testing.T) {
	t.Parallel()
	l := newFailureLimiter(1, time.Minute)
	now := time.Now()
	for i := 0; i < 3*maxFailureBuckets; i++ {
		l.fail(bucket(fmt.Sprint("10.1.", i/250, ".", i%250), "td_x"), now)
	}
	if len(l.m) > maxFailureBuckets {
		t.Errorf("%d buckets kept, max %d", len(l.m), maxFailureBuckets)
	}
}
