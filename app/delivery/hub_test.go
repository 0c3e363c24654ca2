package delivery_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/ports"
)

// fakeSub records what the hub pushes to it.
type fakeSub struct {
	mu     sync.Mutex
	got    []string
	tokens []string
}

func (f *fakeSub) Deliver(tok string, n ports.NotificationRecord) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, n.ID)
	f.tokens = append(f.tokens, tok)
	return true
}

func (f *fakeSub) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// memLog is an in-memory ports.NotificationLog.
type memLog struct {
	mu   sync.Mutex
	rows []*memRow
	// afterSeq is the cursor of the latest read of fresh rows.
	afterSeq int64
}

type memRow struct {
	n       ports.NotificationRecord
	settled string
	lease   time.Time
}

func (l *memLog) add(n ports.NotificationRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n.Seq = int64(len(l.rows) + 1)
	l.rows = append(l.rows, &memRow{n: n})
}

func (l *memLog) PendingNotifications(_ context.Context, q ports.PendingQuery) ([]ports.NotificationRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !q.LeaseEnded {
		l.afterSeq = q.AfterSeq
	}
	var out []ports.NotificationRecord
	for _, r := range l.rows {
		who := false
		for _, o := range q.Owners {
			who = who || o == r.n.OwnerID
		}
		for _, t := range q.Threads {
			who = who || t == r.n.ThreadID
		}
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

func (l *memLog) ClaimNotifications(_ context.Context, ids []string, now, until time.Time) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var got []string
	for _, r := range l.rows {
		for _, id := range ids {
			if r.n.ID == id && r.settled == "" && !r.lease.After(now) {
				r.lease, r.n.Deliveries = until, r.n.Deliveries+1
				got = append(got, id)
			}
		}
	}
	return got, nil
}

func (l *memLog) ReleaseNotifications(_ context.Context, ids []string, now time.Time, pushed bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.rows {
		for _, id := range ids {
			if r.n.ID == id && r.settled == "" {
				r.lease = now.Add(-time.Microsecond)
				if !pushed && r.n.Deliveries > 0 {
					r.n.Deliveries--
				}
			}
		}
	}
	return nil
}

func (l *memLog) AckNotifications(_ context.Context, ids []string, _ time.Time) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var got []string
	for _, r := range l.rows {
		for _, id := range ids {
			if r.n.ID == id && r.settled == "" {
				r.settled, r.lease = "acked", time.Time{}
				got = append(got, id)
			}
		}
	}
	return got, nil
}

func (l *memLog) ExpireNotifications(_ context.Context, cutoff, now time.Time, max int) (int, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, drop := 0, 0
	for _, r := range l.rows {
		switch {
		case r.settled != "":
		case r.n.CreatedAt.Before(cutoff):
			r.settled = "expired"
			exp++
		case r.n.Deliveries >= max && r.lease.Before(now):
			r.settled = "dropped"
			drop++
		}
	}
	return exp, drop, nil
}

type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *stepClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func note(id, owner, step string, at time.Time) ports.NotificationRecord {
	return ports.NotificationRecord{ID: id, ThreadID: "t1", StepName: step, OwnerID: owner, Source: "execution",
		NotificationType: "execution.success", CreatedAt: at}
}

// shipHub is a running hub over an empty log with one session of u1
// subscribed to every event of step ship.
func shipHub(t *testing.T) (*stepClock, *memLog, *delivery.Hub, *fakeSub, *delivery.HubSession) {
	t.Helper()
	clock := &stepClock{now: time.Now()}
	log := &memLog{}
	h := runHub(t, log, clock)
	sub := &fakeSub{}
	s := h.Register(sub, "u1", 10)
	s.Subscribe("ship", nil)
	return clock, log, h, sub, s
}

func runHub(t *testing.T, log ports.NotificationLog, clock *stepClock) *delivery.Hub {
	t.Helper()
	return runHubEvery(t, log, clock, 10*time.Millisecond)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// What was recorded while nobody was subscribed is delivered when the owner
// subscribes (after a reconnect, a restart, on another replica: the log is
// the database); another principal's and other steps' notifications are not.
func TestHubDeliversTheLogToLateSubscribers(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	log := &memLog{}
	log.add(note("n1", "u1", "ship", clock.Now()))
	log.add(note("n2", "u2", "ship", clock.Now()))
	log.add(note("n3", "u1", "pack", clock.Now()))
	h := runHub(t, log, clock)
	sub := &fakeSub{}
	s := h.Register(sub, "u1", 10)
	s.Subscribe("ship", nil)
	eventually(t, "n1", func() bool { return len(sub.ids()) == 1 })
	if got := sub.ids(); got[0] != "n1" {
		t.Fatalf("got %v", got)
	}
	s.Subscribe("pack", nil)
	eventually(t, "n3", func() bool { return len(sub.ids()) == 2 })
	time.Sleep(50 * time.Millisecond)
	if got := sub.ids(); len(got) != 2 || got[1] != "n3" {
		t.Fatalf("got %v, want n1 then n3 only", got)
	}
}

// An unacknowledged push is pushed again (same id, new token) when its lease
// ends on the injected clock, at most MaxDeliveries times; an ack by any
// token settles it; a closed session's pushes go to another session at once.
func TestHubRedeliversUntilAcked(t *testing.T) {
	t.Parallel()
	clock, log, h, sub, s := shipHub(t)
	log.add(note("n1", "u1", "ship", clock.Now()))
	h.Published([]ports.NotificationRecord{{}})
	eventually(t, "first push", func() bool { return len(sub.ids()) == 1 })
	time.Sleep(50 * time.Millisecond)
	if len(sub.ids()) != 1 {
		t.Fatal("pushed again before the lease ended")
	}
	clock.Advance(2 * time.Minute)
	eventually(t, "redelivery", func() bool { return len(sub.ids()) == 2 })
	sub.mu.Lock()
	first, second := sub.tokens[0], sub.tokens[1]
	sub.mu.Unlock()
	if first == second {
		t.Fatal("a redelivery reused the ack token")
	}
	if !s.Ack(first) { // an older token still names the notification
		t.Fatal("ack refused")
	}
	clock.Advance(2 * time.Minute)
	time.Sleep(50 * time.Millisecond)
	if len(sub.ids()) != 2 {
		t.Fatalf("acknowledged notification pushed again: %v", sub.ids())
	}

	log.add(note("n2", "u1", "ship", clock.Now()))
	h.Wake()
	eventually(t, "n2", func() bool { return len(sub.ids()) == 3 })
	other := &fakeSub{}
	o := h.Register(other, "u1", 10)
	o.Subscribe("ship", nil)
	s.Close()
	eventually(t, "n2 on the other session", func() bool { return len(other.ids()) == 1 && other.ids()[0] == "n2" })
}

// maxInFlight holds further pushes until an ack; undelivered rows expire
// after the retention and are counted.
func TestHubFlowControlAndExpiry(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	log := &memLog{}
	for _, id := range []string{"a", "b", "c"} {
		log.add(note(id, "u1", "ship", clock.Now()))
	}
	log.add(note("old", "u9", "ship", clock.Now()))
	h := runHub(t, log, clock)
	sub := &fakeSub{}
	s := h.Register(sub, "u1", 1)
	s.Subscribe("ship", nil)
	eventually(t, "a", func() bool { return len(sub.ids()) == 1 })
	time.Sleep(50 * time.Millisecond)
	if len(sub.ids()) != 1 {
		t.Fatalf("maxInFlight 1 exceeded: %v", sub.ids())
	}
	s.Ack(sub.tokens[0])
	eventually(t, "b", func() bool { return len(sub.ids()) == 2 })
	s.Ack(sub.tokens[1])
	eventually(t, "c", func() bool { return len(sub.ids()) == 3 })
	got := sub.ids()
	if !sort.StringsAreSorted(got) {
		t.Fatalf("out of order: %v", got)
	}
	clock.Advance(2 * time.Hour)
	h.ExpireNow(context.Background())
	if c := h.Counts(); c.Expired != 2 { // c (unacked) and old (never subscribed)
		t.Fatalf("counts %+v", c)
	}
}

func (l *memLog) cursor() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.afterSeq
}

// The cursor moves past pushed rows once they are older than the commit
// slack, so a busy log is not re-read from where the subscription began; a
// push left unacknowledged behind it is still pushed again when its lease
// ends. Acks settle in the background (AckLater) or before returning (Ack).
func TestHubCursorPassesPushedRowsAndLeasesStillEnd(t *testing.T) {
	t.Parallel()
	clock, log, h, sub, s := shipHub(t)
	for _, id := range []string{"n1", "n2", "n3"} {
		log.add(note(id, "u1", "ship", clock.Now()))
	}
	h.Wake()
	eventually(t, "three pushes", func() bool { return len(sub.ids()) == 3 })
	sub.mu.Lock()
	tokens := append([]string(nil), sub.tokens...)
	sub.mu.Unlock()
	s.AckLater(tokens[1])
	if !s.Ack(tokens[2]) || s.Ack(tokens[2]) {
		t.Fatal("first ack must settle, the second must not")
	}
	eventually(t, "n2 settled in the background", func() bool { return log.row("n2").settled == "acked" })
	if log.cursor() != 0 {
		t.Fatalf("cursor %d moved past rows younger than the commit slack", log.cursor())
	}

	clock.Advance(10 * time.Second) // past the commit slack, inside the lease
	log.add(note("n4", "u1", "ship", clock.Now()))
	h.Wake()
	eventually(t, "n4", func() bool { return len(sub.ids()) == 4 })
	h.Wake()
	eventually(t, "cursor past n1–n3", func() bool { return log.cursor() >= 3 })
	if got := sub.ids(); len(got) != 4 {
		t.Fatalf("pushed again inside the lease: %v", got)
	}

	clock.Advance(2 * time.Minute) // n1 (behind the cursor) and n4 were never acknowledged
	eventually(t, "n1 and n4 again", func() bool { return len(sub.ids()) == 6 })
	again := sub.ids()[4:]
	sort.Strings(again)
	if again[0] != "n1" || again[1] != "n4" {
		t.Fatalf("redelivered %v, want n1 and n4", again)
	}
}

// A row written by a replica whose clock runs behind looks seconds old the
// moment it is read; the cursor still waits the commit slack from when this
// hub first read it (a lower seq may still commit), and passes at once only
// rows older than a minute by their timestamp (a backlog read again).
func TestHubCursorWaitsFromFirstReadNotTheWritersClock(t *testing.T) {
	t.Parallel()
	clock, log, h, sub, _ := shipHub(t)
	log.add(note("behind", "u1", "ship", clock.Now().Add(-30*time.Second)))
	h.Wake()
	eventually(t, "the push", func() bool { return len(sub.ids()) == 1 })
	for range 3 { // polls after the push read from the cursor again
		h.Wake()
		time.Sleep(20 * time.Millisecond)
	}
	if c := log.cursor(); c != 0 {
		t.Fatalf("cursor %d passed a row read just now because the writer's clock is 30 s behind", c)
	}
	clock.Advance(6 * time.Second)
	h.Wake()
	eventually(t, "cursor past the row once the slack passed here", func() bool { return log.cursor() >= 1 })

	log.add(note("backlog", "u1", "other", clock.Now().Add(-2*time.Minute))) // nobody here wants it
	h.Wake()
	eventually(t, "cursor past an old row at once", func() bool { return log.cursor() >= 2 })
}

// row is a copy of the row id (zero if there is none).
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

// A row committed while a poll's read is slow is pushed by a second poll at
// its wake-up, not after the slow read; when the slow read comes back with
// the same row (its snapshot predates the push) the row is not pushed twice.
func TestHubPushesWhileAnEarlierReadIsSlow(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	log := &heldLog{memLog: &memLog{}}
	h := runHub(t, log, clock)
	sub := &fakeSub{}
	h.Register(sub, "u1", 10).Subscribe("ship", nil)
	time.Sleep(30 * time.Millisecond) // the subscription's own poll
	log.add(note("n1", "u1", "ship", clock.Now()))
	holding, release := log.holdNext()
	t.Cleanup(release) // runs before the hub stops, which waits for the held poll
	h.Wake()
	<-holding // a poll read n1 and is held
	log.add(note("n2", "u1", "ship", clock.Now()))
	h.Wake()
	eventually(t, "n1 and n2 while the first read is held", func() bool { return len(sub.ids()) == 2 })
	release()
	time.Sleep(50 * time.Millisecond)
	got := sub.ids()
	sort.Strings(got)
	if len(got) != 2 || got[0] != "n1" || got[1] != "n2" {
		t.Fatalf("pushed %v, want n1 and n2 once each", got)
	}
}

// heldLog holds the reads it is told to, each after taking its rows (as a
// database queued behind CPU does), until the test lets it go; and fails
// the next lease when told to.
type heldLog struct {
	*memLog
	mu        sync.Mutex
	holds     []readHold // the next reads to hold, in order
	failLease bool
}

// readHold is one held read: holding is closed once it has its rows, and
// it returns when gate is closed.
type readHold struct{ holding, gate chan struct{} }

// holdNext makes the next read wait, after taking its rows, until the
// returned func is called; the read has begun once holding is closed.
func (l *heldLog) holdNext() (holding chan struct{}, release func()) {
	h := readHold{holding: make(chan struct{}), gate: make(chan struct{})}
	l.mu.Lock()
	l.holds = append(l.holds, h)
	l.mu.Unlock()
	var once sync.Once
	return h.holding, func() { once.Do(func() { close(h.gate) }) }
}

func (l *heldLog) PendingNotifications(ctx context.Context, q ports.PendingQuery) ([]ports.NotificationRecord, error) {
	rows, err := l.memLog.PendingNotifications(ctx, q)
	l.mu.Lock()
	var h *readHold
	if len(l.holds) > 0 {
		h, l.holds = &l.holds[0], l.holds[1:]
	}
	l.mu.Unlock()
	if h != nil {
		close(h.holding)
		<-h.gate
	}
	return rows, err
}

func (l *heldLog) ClaimNotifications(ctx context.Context, ids []string, now, until time.Time) ([]string, error) {
	l.mu.Lock()
	fail := l.failLease
	l.failLease = false
	l.mu.Unlock()
	if fail {
		return nil, context.DeadlineExceeded
	}
	return l.memLog.ClaimNotifications(ctx, ids, now, until)
}

// runHubEvery runs a hub that polls every pollEvery without a wake-up.
func runHubEvery(t *testing.T, log ports.NotificationLog, clock *stepClock, pollEvery time.Duration) *delivery.Hub {
	t.Helper()
	h := delivery.NewHub(log, clock, nil)
	h.Configure(delivery.HubConfig{RedeliverAfter: time.Minute, PollEvery: pollEvery, Retention: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// A read that predates another poll's lease finds the row that poll has
// pushed since: it is not picked again, so it takes none of the session's
// room and the row behind it is pushed at once, not at the next tick.
func TestHubStaleReadLeavesPushedRowsAlone(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	log := &heldLog{memLog: &memLog{}}
	h := runHubEvery(t, log, clock, time.Minute)
	sub := &fakeSub{}
	h.Register(sub, "u1", 2).Subscribe("ship", nil)
	time.Sleep(30 * time.Millisecond) // the subscription's own poll
	log.add(note("n1", "u1", "ship", clock.Now()))
	holdingA, releaseA := log.holdNext()
	t.Cleanup(releaseA)
	h.Wake()
	<-holdingA // poll A read n1
	log.add(note("n2", "u1", "ship", clock.Now()))
	holdingB, releaseB := log.holdNext()
	t.Cleanup(releaseB)
	h.Wake()
	<-holdingB // poll B read n1 and n2, before A's lease
	releaseA()
	eventually(t, "n1 pushed by A", func() bool { return len(sub.ids()) == 1 })
	releaseB()
	deadline := time.Now().Add(time.Second)
	for len(sub.ids()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := sub.ids(); len(got) != 2 || got[1] != "n2" {
		t.Fatalf("pushed %v within 1 s, want n1 then n2 (the next tick is a minute away)", got)
	}
}

// A lease that fails (the database blinked) leaves its rows to a later
// poll, also rows old enough that the cursor passed them at once.
func TestHubFailedLeaseReadsItsRowsAgain(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	log := &heldLog{memLog: &memLog{}, failLease: true}
	log.add(note("old", "u1", "ship", clock.Now().Add(-2*time.Minute)))
	h := runHub(t, log, clock)
	sub := &fakeSub{}
	h.Register(sub, "u1", 10).Subscribe("ship", nil)
	eventually(t, "the old row pushed after the failed lease", func() bool { return len(sub.ids()) == 1 })
}
