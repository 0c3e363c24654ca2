package readgate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadengine/engine/app/budget"
	"github.com/threadengine/engine/domain"
)

// read is one read of cost points by who, as a caller of Enter makes it:
// admitted, it runs for d and leaves. Every caller is inside a synctest
// bubble, so d is virtual time.
func read(g *Gate, who string, cost int, d time.Duration) error {
	leave, err := g.Enter(context.Background(), who, cost)
	if err != nil {
		return err
	}
	time.Sleep(d)
	leave()
	return nil
}

func limitOf(err error) string {
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeLimitExceeded || de.Kind != domain.KindRateLimited {
		return ""
	}
	l, _ := de.Details["limit"].(string)
	return l
}

// One principal's reads wait for each other beyond its share, and are
// refused after the queue timeout; another principal is not held up by
// them until the engine-wide cap is reached.
func TestGateConcurrency(t *testing.T) {
	t.Parallel()
	var refused []string
	g := NewGate(GateLimits{MaxConcurrent: 3, MaxConcurrentPerPrincipal: 2, QueueTimeout: time.Millisecond},
		func(l string) { refused = append(refused, l) })
	ctx := context.Background()
	a1, err := g.Enter(ctx, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := g.Enter(ctx, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Enter(ctx, "a", 1); limitOf(err) != LimitReadsPerPrincipal {
		t.Fatalf("a's third read: %v", err)
	}
	b1, err := g.Enter(ctx, "b", 1)
	if err != nil {
		t.Fatalf("b is held up by a: %v", err)
	}
	if _, err := g.Enter(ctx, "c", 1); limitOf(err) != LimitReadsConcurrent {
		t.Fatalf("a fourth read on the engine: %v", err)
	}
	if g.Running() != 3 {
		t.Fatalf("running %d", g.Running())
	}
	a1()
	a1() // leaving twice gives back one place
	c1, err := g.Enter(ctx, "c", 1)
	if err != nil {
		t.Fatalf("a place was given back: %v", err)
	}
	a2()
	b1()
	c1()
	if g.Running() != 0 || len(g.mine) != 0 {
		t.Fatalf("running %d, principals tracked %d", g.Running(), len(g.mine))
	}
	if len(refused) != 2 {
		t.Fatalf("refusals counted %v", refused)
	}
	// A waiter gets the place given back while it waits.
	g2 := NewGate(GateLimits{MaxConcurrent: 1, MaxConcurrentPerPrincipal: 1, QueueTimeout: time.Hour}, nil)
	hold, _ := g2.Enter(ctx, "a", 1)
	got := make(chan error)
	go func() {
		leave, err := g2.Enter(ctx, "a", 1)
		if err == nil {
			leave()
		}
		got <- err
	}()
	hold()
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	// A caller whose own context ends while waiting is told so, not
	// counted as a refusal.
	hold, _ = g2.Enter(ctx, "a", 1)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g2.Enter(cctx, "a", 1); domain.Public(err).Code != domain.CodeUnavailable {
		t.Fatalf("cancelled waiter: %v", err)
	}
	hold()
}

// The points budget: a principal spending more than its burst is refused
// with the wait until its points are back as Retry-After; others are not.
func TestGatePointsBudget(t *testing.T) {
	t.Parallel()
	g := NewGate(GateLimits{MaxConcurrent: 10, MaxConcurrentPerPrincipal: 10, QueueTimeout: time.Second,
		PointsPerSecond: 10, PointsBurst: 1000}, nil)
	ctx := context.Background()
	leave, err := g.Enter(ctx, "a", 900)
	if err != nil {
		t.Fatal(err)
	}
	leave()
	_, err = g.Enter(ctx, "a", 900)
	if limitOf(err) != LimitReadPoints {
		t.Fatalf("second 900 points: %v", err)
	}
	var de *domain.Error
	errors.As(err, &de)
	if de.RetryAfter <= 0 || de.RetryAfter > 80*time.Second { // (900-100)/10 s, less what refilled
		t.Fatalf("retry after %s", de.RetryAfter)
	}
	if leave, err := g.Enter(ctx, "b", 900); err != nil {
		t.Fatalf("b pays for a: %v", err)
	} else {
		leave()
	}
	// What an admitted read costs beyond its price is charged too.
	g.Charge("b", 100)
	if _, err := g.Enter(ctx, "b", 50); limitOf(err) != LimitReadPoints {
		t.Fatalf("after a charge: %v", err)
	}
	var nilGate *Gate
	if leave, err := nilGate.Enter(ctx, "a", 1<<30); err != nil {
		t.Fatal(err)
	} else {
		leave()
	}
}

// Expensive operations take one of fewer places; cheap ones pass beside
// them.
func TestGateExpensive(t *testing.T) {
	t.Parallel()
	g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 4, QueueTimeout: time.Millisecond,
		ExpensiveCost: 100, MaxExpensive: 1}, nil)
	ctx := context.Background()
	heavy, err := g.Enter(ctx, "a", 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Enter(ctx, "b", 100); limitOf(err) != LimitExpensiveReads {
		t.Fatalf("a second expensive read: %v", err)
	}
	cheap, err := g.Enter(ctx, "b", 99)
	if err != nil {
		t.Fatalf("a cheap read beside an expensive one: %v", err)
	}
	cheap()
	heavy()
	if leave, err := g.Enter(ctx, "b", 100); err != nil {
		t.Fatalf("the expensive place was given back: %v", err)
	} else {
		leave()
	}
	if g.Running() != 0 || len(g.heavy) != 0 {
		t.Fatalf("places held after leaving: %d, %d", g.Running(), len(g.heavy))
	}
}

// The point buckets of principals that stopped reading are forgotten once
// they are full again (a full bucket is a new one), so the gate's memory
// follows the principals reading now, not every principal that ever read;
// a principal whose bucket is still refilling keeps it (its debt is not
// forgiven by the sweep).
func TestGateForgetsIdleBuckets(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// 200 points refill in 200 s: longer than the sweep interval.
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 2, QueueTimeout: time.Second,
			PointsPerSecond: 1, PointsBurst: 200}, nil)
		buckets := g.points.Len
		for i := range 1000 {
			if err := read(g, fmt.Sprintf("p%d", i), 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := read(g, "debtor", 200, 0); err != nil {
			t.Fatal(err)
		}
		if n := buckets(); n != 1001 {
			t.Fatalf("%d buckets, want 1001", n)
		}
		// After a sweep interval the 1,000 one-point buckets are full again
		// (1 point a second) and go; the debtor's (200 points spent) is not.
		time.Sleep(budget.SweepEvery + time.Second)
		if err := read(g, "newcomer", 1, 0); err != nil {
			t.Fatal(err)
		}
		if n := buckets(); n != 2 {
			t.Errorf("%d buckets after the sweep, want the debtor's and the newcomer's", n)
		}
		if err := read(g, "debtor", 200, 0); limitOf(err) != LimitReadPoints {
			t.Errorf("the debtor's refilling bucket was forgotten: %v", err)
		}
		// Once it is full again it goes too, at the next sweep.
		time.Sleep(200 * time.Second)
		if err := read(g, "newcomer", 1, 0); err != nil {
			t.Fatal(err)
		}
		if n := buckets(); n != 1 {
			t.Errorf("%d buckets after the debtor refilled, want the newcomer's", n)
		}
	})
}

// Expensive operations share the time: once they ran more than
// ExpensiveShare of it (beyond a burst of one deadline), the next is
// refused at once with the wait as its retry time when the wait is longer
// than the queue timeout, waits for its turn when shorter, and cheap reads
// are not held up meanwhile.
func TestGateExpensiveReadsShareTheTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var refused []string
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 4, QueueTimeout: time.Second,
			ExpensiveCost: 100, MaxExpensive: 1, ExpensiveShare: 0.25}, func(l string) { refused = append(refused, l) })
		ctx := context.Background()
		// Two 5 s operations: the first spends the 5 s burst (refilled by
		// 1.25 s as it runs), the second leaves 3.75 s of debt, paid in 15 s
		// at a quarter of a second a second.
		for i := range 2 {
			if err := read(g, "a", 100, 5*time.Second); err != nil {
				t.Fatalf("expensive read %d within the burst: %v", i, err)
			}
		}
		began := time.Now()
		_, err := g.Enter(ctx, "b", 500)
		var de *domain.Error
		if limitOf(err) != LimitExpensiveTime || !errors.As(err, &de) || de.RetryAfter < 14*time.Second || de.RetryAfter > 16*time.Second {
			t.Fatalf("an expensive read in debt: %v", err)
		}
		if time.Since(began) != 0 {
			t.Errorf("the refusal waited %v", time.Since(began))
		}
		if err := read(g, "b", 99, time.Second); err != nil {
			t.Errorf("a cheap read while expensive ones are in debt: %v", err)
		}
		// 14.5 s later the debt is a fraction of a second: the next waits for it.
		time.Sleep(13500 * time.Millisecond)
		began = time.Now()
		if err := read(g, "b", 500, 0); err != nil {
			t.Fatalf("an expensive read once the debt is nearly paid: %v", err)
		}
		if w := time.Since(began); w <= 0 || w > time.Second {
			t.Errorf("it waited %v, want the rest of the debt (under the 1 s queue timeout)", w)
		}
		if fmt.Sprint(refused) != "[graphql_expensive_time]" {
			t.Errorf("refusals %v", refused)
		}
	})
}

// Expensive reads waiting for their turn of the run time hold no read
// slot: with the default limits, two principals' four expensive reads
// waiting out the expensive operations' debt leave every slot to the cheap
// reads, which are admitted at once.
func TestGateExpensiveWaitersHoldNoSlot(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 2, QueueTimeout: 2 * time.Second,
			ExpensiveCost: 100, MaxExpensive: 1, ExpensiveShare: 0.25}, nil)
		ctx := context.Background()
		// Expensive reads ran their burst and 375 ms more: the next ones
		// wait 1.5 s for their turn, within the 2 s queue timeout.
		g.ranHeavy(expensiveTimeBurst)
		g.ranHeavy(375 * time.Millisecond)
		release := make(chan struct{})
		done := make(chan error, 4)
		for _, who := range []string{"a", "a", "b", "b"} {
			go func() {
				leave, err := g.Enter(ctx, who, 100)
				if err == nil {
					<-release
					leave()
				}
				done <- err
			}()
		}
		synctest.Wait() // all four wait for their turn
		if n := g.Running(); n != 0 {
			t.Errorf("expensive reads waiting for their turn hold %d read slots", n)
		}
		began := time.Now()
		var cheap []func()
		for _, who := range []string{"c", "d", "c", "d"} {
			leave, err := g.Enter(ctx, who, 1)
			if err != nil {
				t.Errorf("a cheap read while expensive ones wait for their turn: %v", err)
				break
			}
			cheap = append(cheap, leave)
		}
		if w := time.Since(began); w != 0 {
			t.Errorf("the cheap reads waited %v", w)
		}
		for _, leave := range cheap {
			leave()
		}
		close(release)
		admitted := 0
		for range 4 {
			if err := <-done; err == nil {
				admitted++
			} else if l := limitOf(err); l != LimitExpensiveReads && l != LimitExpensiveTime && l != LimitReadsConcurrent {
				t.Errorf("an expensive read: %v", err)
			}
		}
		if admitted == 0 {
			t.Error("no expensive read ran once its turn came")
		}
	})
}

// The points an admitted read is charged after it ran are taken even when
// the sweep dropped its principal's bucket while it ran (the bucket refilled
// during a long read): the next read of that principal waits for them.
func TestGateChargeAfterTheBucketWasSwept(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 2, QueueTimeout: time.Second,
			PointsPerSecond: 1, PointsBurst: 200}, nil)
		ctx := context.Background()
		leave, err := g.Enter(ctx, "a", 10)
		if err != nil {
			t.Fatal(err)
		}
		// The read runs past a sweep interval; a's bucket refills meanwhile
		// and another principal's read sweeps it away.
		time.Sleep(budget.SweepEvery + 20*time.Second)
		other, err := g.Enter(ctx, "b", 1)
		if err != nil {
			t.Fatal(err)
		}
		other()
		leave()
		g.Charge("a", 200)
		if _, err := g.Enter(ctx, "a", 1); limitOf(err) != LimitReadPoints {
			t.Errorf("the 200 points charged after a's read were lost: %v", err)
		}
	})
}

// Each principal's reads share a core's time: once one principal's
// operations ran more than PrincipalShare of it (beyond a burst of two
// deadlines), its next read is refused at once with the wait as its retry
// time when the wait is longer than the queue timeout, waits for its turn
// when shorter, and other principals are not held up.
func TestGatePrincipalsShareTheTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var refused []string
		// Points too (1 a second, bursts of 1,000): a read refused for its
		// time must take none of them.
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 4, QueueTimeout: time.Second,
			PrincipalShare: 0.5, PointsPerSecond: 1, PointsBurst: 1000}, func(l string) { refused = append(refused, l) })
		var waited []string
		g.OnWait(func(l string) { waited = append(waited, l) })
		ctx := context.Background()
		// Four 5 s reads: the 10 s burst, refilled by 2.5 s during each,
		// is spent after three; the fourth leaves 2.5 s of debt, paid in
		// 5 s at half a second a second.
		for i := range 4 {
			if err := read(g, "a", 1, 5*time.Second); err != nil {
				t.Fatalf("read %d within the burst: %v", i, err)
			}
		}
		began := time.Now()
		_, err := g.Enter(ctx, "a", 900)
		var de *domain.Error
		if limitOf(err) != LimitPrincipalTime || !errors.As(err, &de) || de.RetryAfter < 4*time.Second || de.RetryAfter > 6*time.Second {
			t.Fatalf("a read of a principal in debt: %v", err)
		}
		if time.Since(began) != 0 {
			t.Errorf("the refusal waited %v", time.Since(began))
		}
		if err := read(g, "b", 1, time.Second); err != nil {
			t.Errorf("another principal's read: %v", err)
		}
		// 4.5 s after the refusal the debt is a fraction of a second (b's
		// second counted): the next read of a waits for it.
		time.Sleep(3500 * time.Millisecond)
		began = time.Now()
		if err := read(g, "a", 900, 0); err != nil {
			t.Fatalf("a read of 900 points once the debt is nearly paid (the refused one took none): %v", err)
		}
		if w := time.Since(began); w <= 0 || w > time.Second {
			t.Errorf("it waited %v, want the rest of the debt (under the 1 s queue timeout)", w)
		}
		if fmt.Sprint(refused) != "[graphql_principal_time]" {
			t.Errorf("refusals %v", refused)
		}
		// The reads that waited for their turn are counted as paced
		// (OnWait): the last one, and the fourth of the burst, which found
		// the bucket empty (the three before spent it); not the refused one.
		if fmt.Sprint(waited) != "[graphql_principal_time graphql_principal_time]" {
			t.Errorf("waits %v", waited)
		}
	})
}

// A principal refused by its own budget is refused again, before anything
// is priced or taken, until the Retry-After it was given (points) or until
// a request of it would wait for its debt instead of being refused (run
// time): a client coming back early costs the engine no parse.
func TestGateHoldsARefusedPrincipal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var refused []string
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 4, QueueTimeout: time.Second,
			PointsPerSecond: 10, PointsBurst: 1000, PrincipalShare: 0.5}, func(l string) { refused = append(refused, l) })
		ctx := context.Background()
		retryAfter := func(err error) time.Duration {
			var de *domain.Error
			if !errors.As(err, &de) {
				t.Fatalf("not a domain error: %v", err)
			}
			return de.RetryAfter
		}
		if err := read(g, "a", 900, 0); err != nil {
			t.Fatal(err)
		}
		err := read(g, "a", 900, 0)
		if limitOf(err) != LimitReadPoints {
			t.Fatalf("second 900 points: %v", err)
		}
		d := retryAfter(err) // 80 s: 800 points at 10 a second
		if d != 80*time.Second {
			t.Fatalf("retry after %s, want 80s", d)
		}
		// One point is there (100 are), but a is back early: refused, with
		// the rest of its wait.
		time.Sleep(30 * time.Second)
		err = g.Held("a")
		if limitOf(err) != LimitReadPoints || retryAfter(err) != 50*time.Second {
			t.Fatalf("held a after 30 s: %v", err)
		}
		if err := read(g, "a", 1, 0); limitOf(err) != LimitReadPoints {
			t.Fatalf("a 1-point read of a held principal: %v", err)
		}
		if err := g.Held("b"); err != nil {
			t.Fatalf("b is not held: %v", err)
		}
		if err := read(g, "b", 900, 0); err != nil {
			t.Fatalf("b: %v", err)
		}
		time.Sleep(50 * time.Second)
		if err := read(g, "a", 900, 0); err != nil {
			t.Fatalf("a at its Retry-After: %v", err)
		}
		if fmt.Sprint(refused) != "[graphql_points graphql_points graphql_points]" {
			t.Errorf("refusals %v", refused)
		}

		// Run time: three reads of c running 10 s at once charge 30 s to a
		// bucket of 10 (refilled at half a second a second): 20 s of debt,
		// paid in 40 s.
		refused = nil
		var leaves []func()
		for range 3 {
			leave, err := g.Enter(ctx, "c", 1)
			if err != nil {
				t.Fatal(err)
			}
			leaves = append(leaves, leave)
		}
		time.Sleep(10 * time.Second)
		for _, leave := range leaves {
			leave()
		}
		err = read(g, "c", 1, 0)
		r := retryAfter(err)
		if limitOf(err) != LimitPrincipalTime || r < 39*time.Second || r > 41*time.Second {
			t.Fatalf("c in debt: %v", err)
		}
		// Held until a request would wait out the rest (within the 1 s
		// queue timeout) instead of being refused: R − 1 s.
		time.Sleep(r - 2*time.Second)
		began := time.Now()
		if err := read(g, "c", 1, 0); limitOf(err) != LimitPrincipalTime || retryAfter(err) != time.Second || time.Since(began) != 0 {
			t.Fatalf("c held: %v after %v", err, time.Since(began))
		}
		time.Sleep(1500 * time.Millisecond)
		began = time.Now()
		if err := read(g, "c", 1, 0); err != nil || time.Since(began) <= 0 || time.Since(began) > time.Second {
			t.Fatalf("c after its hold: %v after %v, want admitted after waiting out the rest of its debt", err, time.Since(began))
		}
		if fmt.Sprint(refused) != "[graphql_principal_time graphql_principal_time]" {
			t.Errorf("refusals %v", refused)
		}
	})
}

// Two requests of one principal refused at the same moment (both past
// Held before either was held): the cheaper one's Retry-After is the
// longer hold the dearer one set, not its own shorter wait.
func TestGateRetryAfterIsTheHold(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateLimits{MaxConcurrent: 4, MaxConcurrentPerPrincipal: 4, QueueTimeout: time.Second,
			PointsPerSecond: 10, PointsBurst: 1000}, nil)
		if err := g.spend("d", 1000); err != nil {
			t.Fatal(err)
		}
		var de *domain.Error
		if err := g.spend("d", 900); !errors.As(err, &de) || de.RetryAfter != 90*time.Second {
			t.Fatalf("900 points of an empty bucket: %v", err)
		}
		if err := g.spend("d", 10); !errors.As(err, &de) || de.RetryAfter != 90*time.Second {
			t.Fatalf("10 points refused beside it: %v, want the 90 s hold as Retry-After", err)
		}
	})
}
