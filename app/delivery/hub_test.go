package delivery_test

import (
	"context"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/ports"
)

// The hub's tests run in testing/synctest bubbles: the hub's tickers, the
// leases and the tests' waits all run on the bubble's fake clock, so a
// lease of a minute ends at once and "nothing more was pushed" is checked
// with synctest.Wait (every goroutine blocked), never with a sleep. Each
// test ends by stopping the hub; the bubble fails the test if a goroutine
// the hub started is still running (Run waits for every one of them).

// fakeSub records what the hub pushes to it.
type fakeSub struct {
	mu     sync.Mutex
	got    []string
	tokens []string
	full   bool // refuses pushes, as a socket whose buffer is full
}

func (f *fakeSub) Deliver(tok string, n ports.NotificationRecord) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.full {
		return false
	}
	f.got = append(f.got, n.ID)
	f.tokens = append(f.tokens, tok)
	return true
}

func (f *fakeSub) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func (f *fakeSub) token(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[i]
}

// memLog is an in-memory ports.NotificationLog.
type memLog struct {
	mu   sync.Mutex
	rows []*memRow
	// afterSeq is the cursor of the latest read of fresh rows.
	afterSeq int64
	// failLease fails the next lease (the database blinked).
	failLease bool
	reads     int
	seq       int64
}

type memRow struct {
	n         ports.NotificationRecord
	settled   string
	settledAt time.Time
	lease     time.Time
}

func (l *memLog) add(n ports.NotificationRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	n.Seq = l.seq
	l.rows = append(l.rows, &memRow{n: n})
}

func (l *memLog) PendingNotifications(_ context.Context, q ports.PendingQuery) ([]ports.NotificationRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	if !q.LeaseEnded {
		l.afterSeq = q.AfterSeq
	}
	var out []ports.NotificationRecord
	for _, r := range l.rows {
		who := slices.Contains(q.Owners, r.n.OwnerID) || slices.Contains(q.Threads, r.n.ThreadID)
		window := r.n.Seq > q.AfterSeq && !r.lease.After(q.Now)
		if q.LeaseEnded {
			window = !r.lease.IsZero() && r.lease.Before(q.Now)
		}
		if r.settled == "" && who && window && r.n.Deliveries < q.MaxDeliveries && len(out) < q.Limit {
			out = append(out, r.n)
		}
	}
	return out, nil
}

func (l *memLog) FollowedNotifications(_ context.Context, q ports.FollowQuery) ([]ports.NotificationRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ports.NotificationRecord
	for _, r := range l.rows {
		if slices.Contains(q.Threads, r.n.ThreadID) && r.n.Seq > q.AfterSeq && !r.n.CreatedAt.Before(q.Since) && len(out) < q.Limit {
			out = append(out, r.n)
		}
	}
	return out, nil
}

func (l *memLog) ClaimNotifications(_ context.Context, ids []string, now, until time.Time) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failLease {
		l.failLease = false
		return nil, context.DeadlineExceeded
	}
	var got []string
	for _, r := range l.rows {
		if slices.Contains(ids, r.n.ID) && r.settled == "" && !r.lease.After(now) {
			r.lease, r.n.Deliveries = until, r.n.Deliveries+1
			got = append(got, r.n.ID)
		}
	}
	return got, nil
}

func (l *memLog) ReleaseNotifications(_ context.Context, ids []string, now time.Time, pushed bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.rows {
		if slices.Contains(ids, r.n.ID) && r.settled == "" {
			r.lease = now.Add(-time.Microsecond)
			if !pushed && r.n.Deliveries > 0 {
				r.n.Deliveries--
			}
		}
	}
	return nil
}

func (l *memLog) settle(ids []string, how string, now time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var got []string
	for _, r := range l.rows {
		if slices.Contains(ids, r.n.ID) && r.settled == "" {
			r.settled, r.settledAt, r.lease = how, now, time.Time{}
			got = append(got, r.n.ID)
		}
	}
	return got
}

func (l *memLog) AckNotifications(_ context.Context, ids []string, now time.Time) ([]string, error) {
	return l.settle(ids, "acked", now), nil
}

func (l *memLog) DropNotifications(_ context.Context, ids []string, now time.Time) error {
	l.settle(ids, "dropped", now)
	return nil
}

// PruneNotifications deletes settled rows as the store does: never a
// pending one, never the one with the highest seq.
func (l *memLog) PruneNotifications(_ context.Context, before time.Time, limit int) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	l.rows = slices.DeleteFunc(l.rows, func(r *memRow) bool {
		del := n < limit && r.settled != "" && r.settledAt.Before(before) && r.n.Seq < l.seq
		if del {
			n++
		}
		return del
	})
	return n, nil
}

func (l *memLog) ExpireNotifications(_ context.Context, cutoff, now time.Time, max int) (int, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, drop := 0, 0
	for _, r := range l.rows {
		switch {
		case r.settled != "":
		case r.n.CreatedAt.Before(cutoff):
			r.settled, r.settledAt = "expired", now
			exp++
		case r.n.Deliveries >= max && r.lease.Before(now):
			r.settled, r.settledAt = "dropped", now
			drop++
		}
	}
	return exp, drop, nil
}

func (l *memLog) row(id string) memRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.rows {
		if r.n.ID == id {
			return *r
		}
	}
	return memRow{}
}

func (l *memLog) cursor() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.afterSeq
}

func note(id, owner, step string) ports.NotificationRecord {
	return ports.NotificationRecord{ID: id, ThreadID: "t1", StepName: step, OwnerID: owner, Source: "execution",
		NotificationType: "execution.success", CreatedAt: time.Now()}
}

// run starts h until the test ends; stop stops it and waits for Run.
func run(t *testing.T, h *delivery.Hub, bus ports.Broadcast) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx, bus) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func newHub(t *testing.T, log ports.NotificationLog) *delivery.Hub {
	h := delivery.NewHub(log, ports.SystemClock{}, nil)
	h.Configure(delivery.HubConfig{RedeliverAfter: time.Minute, Retention: time.Hour})
	run(t, h, nil)
	return h
}

// publish adds rows to the log and tells the hub, as a committed append does.
func publish(h *delivery.Hub, log *memLog, ns ...ports.NotificationRecord) {
	for _, n := range ns {
		log.add(n)
	}
	h.Published(context.Background(), ns)
}

func want(t *testing.T, sub *fakeSub, ids ...string) {
	t.Helper()
	synctest.Wait()
	if got := sub.ids(); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("pushed %v, want %v", got, ids)
	}
}

// Live pushes; an unacknowledged push comes back (same id, new token) when
// its lease ends, at most MaxDeliveries times; an ack by any token settles
// it; a closed session's pushes go to another session at once.
func TestHubRedeliversUntilAcked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := newHub(t, log)
		sub := &fakeSub{}
		s := h.Register(sub, "u1", 10)
		s.Subscribe("ship", nil)
		publish(h, log, note("n1", "u1", "ship"))
		want(t, sub, "n1")
		time.Sleep(30 * time.Second)
		want(t, sub, "n1") // inside the lease
		time.Sleep(time.Minute)
		want(t, sub, "n1", "n1")
		if sub.token(0) == sub.token(1) {
			t.Fatal("a redelivery reused the ack token")
		}
		if !s.Ack(sub.token(0)) { // an older token still names the notification
			t.Fatal("ack refused")
		}
		time.Sleep(2 * time.Minute)
		want(t, sub, "n1", "n1")

		publish(h, log, note("n2", "u1", "ship"))
		want(t, sub, "n1", "n1", "n2")
		other := &fakeSub{}
		o := h.Register(other, "u1", 10)
		o.Subscribe("ship", nil)
		s.Close()
		want(t, other, "n2")
	})
}

// maxInFlight holds further pushes until an ack; a push never acknowledged
// is dropped after MaxDeliveries, a row nobody takes expires after the
// retention; both are counted.
func TestHubFlowControlAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := newHub(t, log)
		sub := &fakeSub{}
		s := h.Register(sub, "u1", 1)
		s.Subscribe("ship", nil)
		publish(h, log, note("a", "u1", "ship"), note("b", "u1", "ship"), note("c", "u1", "ship"), note("x", "u9", "ship"))
		want(t, sub, "a")
		s.Ack(sub.token(0))
		want(t, sub, "a", "b")
		s.AckLater(sub.token(1))
		want(t, sub, "a", "b", "c")
		if log.row("b").settled != "acked" {
			t.Fatal("AckLater did not settle")
		}
		time.Sleep(2 * time.Hour) // past the retention; the settler expires every 30 s
		synctest.Wait()
		if c := h.Counts(); c.Expired != 1 || c.Dropped != 1 || log.row("c").settled != "dropped" || log.row("x").settled != "expired" {
			t.Fatalf("counts %+v; c %q, x %q", c, log.row("c").settled, log.row("x").settled)
		}
		if got := sub.ids(); strings.Join(got, ",") != "a,b,c,c,c" {
			t.Fatalf("pushed %v, want c three times (MaxDeliveries)", got)
		}
	})
}

// Settled rows are deleted once they have been settled for
// SettledRetention; pending ones stay, and delivery goes on after a prune.
func TestHubPrunesSettledRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := delivery.NewHub(log, ports.SystemClock{}, nil)
		h.Configure(delivery.HubConfig{RedeliverAfter: time.Minute, Retention: 48 * time.Hour, SettledRetention: time.Hour})
		run(t, h, nil)
		sub := &fakeSub{}
		s := h.Register(sub, "u1", 10)
		s.Subscribe("ship", nil)
		publish(h, log, note("a", "u1", "ship"), note("b", "u1", "ship"))
		want(t, sub, "a", "b")
		s.Ack(sub.token(0))
		s.Ack(sub.token(1))
		synctest.Wait()
		publish(h, log, note("p", "u9", "ship"), note("z", "u1", "pack")) // nobody takes them: pending
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if log.row("a").settled != "acked" {
			t.Fatal("pruned before the settled retention")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if log.row("a").n.ID != "" || log.row("b").n.ID != "" {
			t.Fatalf("settled rows kept past the settled retention: a %+v, b %+v", log.row("a"), log.row("b"))
		}
		if log.row("p").n.ID != "p" || log.row("z").n.ID != "z" {
			t.Fatal("a pending row was pruned")
		}
		publish(h, log, note("c", "u1", "ship")) // delivery goes on after a prune
		want(t, sub, "a", "b", "c")
	})
}

// The cursor moves past pushed rows once they are older than the commit
// slack, so a busy log is not re-read from where the subscription began; a
// push left unacknowledged behind it is still pushed again when its lease
// ends.
func TestHubCursorPassesPushedRowsAndLeasesStillEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := newHub(t, log)
		sub := &fakeSub{}
		s := h.Register(sub, "u1", 10)
		s.Subscribe("ship", nil)
		publish(h, log, note("n1", "u1", "ship"), note("n2", "u1", "ship"), note("n3", "u1", "ship"))
		want(t, sub, "n1", "n2", "n3")
		s.Ack(sub.token(1))
		s.Ack(sub.token(2))
		if log.cursor() != 0 {
			t.Fatalf("cursor %d moved past rows younger than the commit slack", log.cursor())
		}
		time.Sleep(10 * time.Second) // past the commit slack, inside the lease
		publish(h, log, note("n4", "u1", "ship"))
		want(t, sub, "n1", "n2", "n3", "n4")
		h.Wake()
		synctest.Wait()
		if log.cursor() < 3 {
			t.Fatalf("cursor %d, want past n1–n3", log.cursor())
		}
		time.Sleep(75 * time.Second) // n1 (behind the cursor) and n4 were never acknowledged: their leases end
		synctest.Wait()
		again := sub.ids()[4:]
		sort.Strings(again)
		if strings.Join(again, ",") != "n1,n4" {
			t.Fatalf("redelivered %v, want n1 and n4", again)
		}
	})
}

// A lease that fails (the database blinked) leaves its rows to a later
// poll, also rows old enough that the cursor passed them at once.
func TestHubFailedLeaseReadsItsRowsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{failLease: true}
		old := note("old", "u1", "ship")
		old.CreatedAt = time.Now().Add(-2 * time.Minute)
		log.add(old)
		h := newHub(t, log)
		sub := &fakeSub{}
		h.Register(sub, "u1", 10).Subscribe("ship", nil)
		synctest.Wait()
		time.Sleep(time.Second) // the next tick
		want(t, sub, "old")
	})
}

// A socket that cannot take a push gets it again once it can: the row is
// given back and read again at the next tick.
func TestHubRefusedPushIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := newHub(t, log)
		sub := &fakeSub{full: true}
		h.Register(sub, "u1", 10).Subscribe("ship", nil)
		publish(h, log, note("n1", "u1", "ship"))
		want(t, sub)
		if r := log.row("n1"); r.n.Deliveries != 0 || r.lease.After(time.Now()) {
			t.Fatalf("a refused push kept its lease: %+v", r)
		}
		sub.mu.Lock()
		sub.full = false
		sub.mu.Unlock()
		time.Sleep(time.Second)
		want(t, sub, "n1")
	})
}

// Which pushes a new subscriber gets (29.4): not the old notifications of
// earlier threads nobody subscribed to; those raised while a session of
// its principal held the key (a reconnect) and those pushed and never
// acknowledged; after an explicit unsubscribe, neither.
func TestHubHeldNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := newHub(t, log)
		time.Sleep(time.Minute)
		publish(h, log, note("unwatched", "u1", "ship")) // nobody subscribed
		time.Sleep(time.Minute)

		first := &fakeSub{}
		s1 := h.Register(first, "u1", 10)
		s1.Subscribe("ship", nil)
		publish(h, log, note("live", "u1", "ship"))
		want(t, first, "live")
		s1.Close() // gone without unsubscribing: its claim lasts
		publish(h, log, note("away", "u1", "ship"))
		time.Sleep(time.Minute)

		back := &fakeSub{}
		s2 := h.Register(back, "u1", 10)
		s2.Subscribe("ship", nil)
		synctest.Wait()
		got := back.ids()
		sort.Strings(got)
		if strings.Join(got, ",") != "away,live" { // live: pushed, never acknowledged
			t.Fatalf("the reconnected subscriber got %v, want away and live", got)
		}
		s2.Unsubscribe("ship") // explicit: its pushes are dropped, the claim ends
		if log.row("away").settled != "dropped" || log.row("live").settled != "dropped" {
			t.Fatalf("unsubscribe left %q, %q", log.row("away").settled, log.row("live").settled)
		}
		publish(h, log, note("after", "u1", "ship"))
		time.Sleep(time.Minute)
		next := &fakeSub{}
		h.Register(next, "u1", 10).Subscribe("ship", nil)
		want(t, next)
		if log.row("unwatched").settled != "" {
			t.Fatal("the unwatched row was settled")
		}
	})
}

// Copies: a session that started or joined a thread gets each of its
// notifications once, outside maxInFlight, but not the session that wrote
// it; a copy's ack settles nothing.
func TestHubCopiesToFollowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := newHub(t, log)
		writer, watcher, sub := &fakeSub{}, &fakeSub{}, &fakeSub{}
		w := h.Register(writer, "u1", 1)
		w.Follow("t1")
		wa := h.Register(watcher, "u1", 1)
		wa.Follow("t1")
		s := h.Register(sub, "u1", 10)
		s.Subscribe("ship", nil)
		ctx := delivery.WithOrigin(context.Background(), w)
		ns := []ports.NotificationRecord{note("n1", "u1", "ship"), note("n2", "u1", "pack"), note("n3", "u1", "ship")}
		for _, n := range ns {
			log.add(n)
		}
		h.Published(ctx, ns)
		want(t, watcher, "n1", "n2", "n3") // maxInFlight 1 does not hold copies back
		want(t, writer)
		want(t, sub, "n1", "n3")
		if tok := watcher.token(0); !strings.HasSuffix(tok, ".c") || wa.Ack(tok) {
			t.Fatalf("copy token %q settled the notification", tok)
		}
		if log.row("n1").settled != "" {
			t.Fatal("a copy's ack settled the row")
		}
	})
}

// bus is an in-memory ports.Broadcast for hubs in one bubble.
type bus struct {
	mu        sync.Mutex
	listeners []func(string)
}

func (b *bus) Publish(_ context.Context, _ string, payload string) error {
	b.mu.Lock()
	ls := slices.Clone(b.listeners)
	b.mu.Unlock()
	for _, fn := range ls {
		fn(payload)
	}
	return nil
}

func (b *bus) Listen(_ string, fn func(string)) {
	b.mu.Lock()
	b.listeners = append(b.listeners, fn)
	b.mu.Unlock()
}

// Two replicas over one log: a subscriber and a follower on one hear of
// commits on the other; waits are woken by their own thread's changes only,
// here and there.
func TestHubsAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, b := &memLog{}, &bus{}
		a := delivery.NewHub(log, ports.SystemClock{}, nil)
		c := delivery.NewHub(log, ports.SystemClock{}, nil)
		run(t, a, b)
		run(t, c, b)
		sub, follower := &fakeSub{}, &fakeSub{}
		c.Register(sub, "u1", 10).Subscribe("ship", nil)
		c.Register(follower, "u2", 10).Follow("t1")
		w1, w2 := c.WatchThread("t1"), c.WatchThread("t2")
		defer w1.Stop()
		defer w2.Stop()
		ch1, ch2 := w1.Changed(), w2.Changed()
		synctest.Wait()
		publish(a, log, note("n1", "u1", "ship"))
		want(t, sub, "n1")
		want(t, follower, "n1")
		select {
		case <-ch1:
		default:
			t.Fatal("a wait on t1 was not woken by a commit of t1 on the other replica")
		}
		select {
		case <-ch2:
			t.Fatal("a wait on t2 was woken by a commit of t1")
		default:
		}
		a.ThreadsChanged("t2") // a grant given back there
		synctest.Wait()
		select {
		case <-ch2:
		default:
			t.Fatal("a wait on t2 was not woken by a grant change on the other replica")
		}
	})
}

// Run returns only once every goroutine it started has returned; the
// bubble would fail the test otherwise. Acks after it are settled by their
// callers.
func TestHubRunStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memLog{}
		h := delivery.NewHub(log, ports.SystemClock{}, nil)
		before := runtime.NumGoroutine()
		stop := run(t, h, &bus{})
		sub := &fakeSub{}
		s := h.Register(sub, "u1", 10)
		s.Subscribe("ship", nil)
		publish(h, log, note("n1", "u1", "ship"))
		want(t, sub, "n1")
		stop()
		if n := runtime.NumGoroutine(); n != before {
			t.Fatalf("%d goroutines after Run returned, %d before it", n, before)
		}
		if !s.Ack(sub.token(0)) {
			t.Fatal("an ack after Run returned was not settled")
		}
	})
}
