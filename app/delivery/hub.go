package delivery

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/ports"
)

// Subscriber is one live connection that can receive notifications. Deliver
// must not block: it returns false when the connection cannot take the push
// now (closed or its send buffer is full), and the hub retries later.
type Subscriber interface {
	Deliver(ackToken string, n ports.NotificationRecord) bool
}

// HubConfig tunes delivery; zero values take the defaults.
type HubConfig struct {
	// RedeliverAfter: a push not acknowledged within it is sent again (to
	// any matching session, on any replica). Default 30 s.
	RedeliverAfter time.Duration
	// MaxDeliveries bounds the pushes of one notification (default 3);
	// after the last one it is dropped (settled and counted).
	MaxDeliveries int
	// Retention: a notification nobody acknowledged within it is expired
	// (settled and counted). Default 24 h.
	Retention time.Duration
	// SettledRetention: a settled notification (acknowledged, expired or
	// dropped) is deleted this long after it was settled. Default 24 h.
	SettledRetention time.Duration
	// PollEvery is how often the log is read without a wake-up (leases that
	// ended, a missed wake-up). Default 1 s.
	PollEvery time.Duration
	// WaitRecheck is how often a pending wait re-reads what it waits for
	// without a wake-up (its thread changing wakes it at once). Default
	// 30 s.
	WaitRecheck time.Duration
}

func (c HubConfig) withDefaults() HubConfig {
	if c.RedeliverAfter <= 0 {
		c.RedeliverAfter = 30 * time.Second
	}
	if c.MaxDeliveries <= 0 {
		c.MaxDeliveries = 3
	}
	if c.Retention <= 0 {
		c.Retention = 24 * time.Hour
	}
	if c.SettledRetention <= 0 {
		c.SettledRetention = 24 * time.Hour
	}
	if c.PollEvery <= 0 {
		c.PollEvery = time.Second
	}
	if c.WaitRecheck <= 0 {
		c.WaitRecheck = defaultWaitRecheck
	}
	return c
}

// Hub delivers the notification log to live subscribers, at least once,
// across reconnects, restarts and replicas, and wakes the waits of a thread
// when it changes. docs/contributors/delivery.md draws it.
//
// The stored rows are the log: a replica with subscribed sessions reads the
// pending rows of their principals (and of threads they joined) after its
// cursor, leases each one it can push for RedeliverAfter, and the
// subscriber's ack settles it in the database, so whichever replica the
// subscriber reconnects to carries on. A push not acknowledged in time is
// leased and pushed again with the same notification id. At most
// maxInFlight unacknowledged pushes are outstanding per session. Sessions
// also get copies of the notifications of the threads they started or
// joined (follow.go), outside that window.
//
// What the hub knows — sessions, cursor, leases, claims, follows — is one
// pure ledger (ledger.go) behind one mutex, never held across I/O or a
// push. Four goroutines own the work: Run itself is the poller (reads,
// leases, pushes), and it starts the settler (acknowledgements, expiry),
// the pruner (deletes settled rows, acks.go) and the notifier (tells the
// other replicas what changed here), and waits for them before it returns.
type Hub struct {
	logStore ports.NotificationLog // nil: nothing is delivered
	clock    ports.Clock
	log      *slog.Logger
	metrics  ports.DeliveryMetrics // set by SetMetrics before Run
	name     string                // this hub in broadcasts: its own are not acted on twice

	wake      chan struct{} // the poller reads the log now
	notify    chan struct{} // the notifier has something to tell
	ackSignal chan struct{} // the settler has acknowledgements to write

	watch threadWatch // the waits' wake-ups, with their own small lock

	expired, dropped, delivered atomic.Int64

	mu      sync.Mutex // guards the fields below; never held across I/O or a push
	cfg     HubConfig
	l       *ledger
	subs    map[sid]Subscriber
	out     outbox   // what the notifier tells the other replicas next
	acks    []ackReq // acknowledgements waiting for the settler (acks.go)
	ackOpen bool     // the settler runs
}

// HubSession is a subscriber's registration.
type HubSession struct {
	hub    *Hub
	id     sid
	closed atomic.Bool
}

// NewHub returns a hub over the notification log (nil: a hub that delivers
// nothing, for tests of other parts). Run starts delivery.
func NewHub(store ports.NotificationLog, clock ports.Clock, log *slog.Logger) *Hub {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = ports.SystemClock{}
	}
	return &Hub{logStore: store, clock: clock, log: log, metrics: ports.NopMetrics{}, name: uuid.NewString()[:8],
		wake: make(chan struct{}, 1), notify: make(chan struct{}, 1), ackSignal: make(chan struct{}, 1),
		cfg: HubConfig{}.withDefaults(), l: newLedger(clock.Now()), subs: map[sid]Subscriber{}}
}

// Configure replaces the delivery settings.
func (h *Hub) Configure(c HubConfig) {
	h.mu.Lock()
	h.cfg = c.withDefaults()
	h.watch.recheck.Store(int64(h.cfg.WaitRecheck))
	h.mu.Unlock()
}

// SetMetrics makes the hub report its pushes to m. Call it before Run.
func (h *Hub) SetMetrics(m ports.DeliveryMetrics) {
	h.metrics = m
	h.watch.metrics = m
}

// WaitCounts returns the waits pending in this process and the reads they
// made (tests, the abuse suite).
func (h *Hub) WaitCounts() WaitCounts {
	return WaitCounts{Pending: h.watch.pending.Load(), Reads: h.watch.reads.Load()}
}

// SetRedeliverAfter changes the acknowledgement timeout (tests shorten it).
func (h *Hub) SetRedeliverAfter(d time.Duration) {
	h.mu.Lock()
	h.cfg.RedeliverAfter = d
	h.mu.Unlock()
}

func (h *Hub) config() HubConfig {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// HubCounts are the hub's delivery counters since start.
type HubCounts struct{ Delivered, Expired, Dropped int64 }

// Counts returns the delivery counters of this process.
func (h *Hub) Counts() HubCounts {
	return HubCounts{Delivered: h.delivered.Load(), Expired: h.expired.Load(), Dropped: h.dropped.Load()}
}

// countPending reports the ledger's change of unacknowledged pushes.
// Caller holds h.mu.
func (h *Hub) countPending() {
	if d := h.l.takePending(); d != 0 {
		h.metrics.NotificationsPending(d)
	}
}

// Run delivers until ctx ends, and returns once every goroutine it started
// has. bus (may be nil) tells the other replicas what changed here and
// tells this one what changed there.
func (h *Hub) Run(ctx context.Context, bus ports.Broadcast) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); h.settler(ctx) }()
	if h.logStore != nil {
		wg.Add(1)
		go func() { defer wg.Done(); h.pruner(ctx) }()
	}
	if bus != nil {
		bus.Listen(ports.ChannelNotifications, h.heard)
		wg.Add(1)
		go func() { defer wg.Done(); h.notifier(ctx, bus) }()
	}
	h.poller(ctx)
}

// poller reads the log at every wake-up (a commit here or elsewhere, a
// subscription, an ack that made room) and every PollEvery (leases that
// ended, a lost wake-up). One read at a time: see
// docs/contributors/performance.md for why a second, overlapping one was
// dropped.
func (h *Hub) poller(ctx context.Context) {
	tick, stop := newTicker(h.clock, h.config().PollEvery)
	defer stop()
	leases := true
	for {
		for leases && h.poll(ctx, true) && ctx.Err() == nil {
		}
		for h.poll(ctx, false) && ctx.Err() == nil {
		}
		for h.followRead(ctx) && ctx.Err() == nil {
		}
		leases = false
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-tick:
			leases = true
		}
	}
}

// newTicker ticks every d on clock's timers: a clock that makes tickers
// (ports.SystemClock; under testing/synctest its time is the bubble's) is
// asked for one.
func newTicker(clock ports.Clock, d time.Duration) (<-chan time.Time, func()) {
	if c, ok := clock.(interface {
		NewTicker(time.Duration) *time.Ticker
	}); ok {
		t := c.NewTicker(d)
		return t.C, t.Stop
	}
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Wake makes the hub read the log now.
func (h *Hub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default: // a read is due already; it sees this too
	}
}

// pollLimit bounds the rows read per poll.
const pollLimit = 500

// poll reads pending rows for the subscribed sessions, leases those a
// session has room for and pushes them. It reports whether another read
// should follow at once (a full page). With leaseEnded it reads only pushes
// whose lease ended (they lie behind the cursor).
func (h *Hub) poll(ctx context.Context, leaseEnded bool) bool {
	if h.logStore == nil {
		return false
	}
	now := h.clock.Now()
	h.mu.Lock()
	cfg := h.cfg
	q, mark, ok := h.l.query(now, leaseEnded, cfg.MaxDeliveries, pollLimit)
	h.mu.Unlock()
	if !ok {
		return false
	}
	rows, err := h.logStore.PendingNotifications(ctx, q)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("notifications: read the log", "err", err)
		}
		return false
	}
	h.mu.Lock()
	r := h.l.pick(rows, mark, pollLimit, now)
	h.countPending()
	h.mu.Unlock()
	if len(r.picks) == 0 {
		return r.readAgain()
	}
	ids := make([]string, len(r.picks))
	for i, p := range r.picks {
		ids[i] = p.n.ID
	}
	until := now.Add(cfg.RedeliverAfter)
	claimed, err := h.logStore.ClaimNotifications(ctx, ids, now, until)
	h.mu.Lock()
	if err != nil {
		h.l.leaseFailed(mark)
		h.mu.Unlock()
		if ctx.Err() == nil {
			h.log.Warn("notifications: lease", "err", err)
		}
		return false
	}
	pushes, release, again := h.l.leased(r, claimed, now, until)
	to := make([]Subscriber, len(pushes))
	for i, p := range pushes {
		to[i] = h.subs[p.to]
	}
	h.countPending()
	h.mu.Unlock()

	var refused []push
	for i, p := range pushes {
		if to[i] == nil || !to[i].Deliver(p.token, p.n) {
			refused = append(refused, p)
			continue
		}
		h.delivered.Add(1)
		if p.n.Deliveries > 1 {
			h.metrics.NotificationRedelivered()
		}
	}
	if len(refused) > 0 {
		h.mu.Lock()
		h.l.refused(refused, mark)
		h.countPending()
		h.mu.Unlock()
		for _, p := range refused {
			release = append(release, p.n.ID)
		}
	}
	if len(release) > 0 {
		// The socket was saturated or gone: give the rows back; the next
		// read (at most PollEvery away) tries again.
		if err := h.logStore.ReleaseNotifications(ctx, release, now, false); err != nil && ctx.Err() == nil {
			h.log.Warn("notifications: release", "err", err)
		}
		return false
	}
	return again
}

// followRead reads what other replicas committed on threads followed here
// and pushes the copies; it reports whether another read should follow.
func (h *Hub) followRead(ctx context.Context) bool {
	if h.logStore == nil {
		return false
	}
	h.mu.Lock()
	q, ok := h.l.followQuery(pollLimit)
	h.mu.Unlock()
	if !ok {
		return false
	}
	rows, err := h.logStore.FollowedNotifications(ctx, q)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("notifications: read followed threads", "err", err)
		}
		return false // still due: read at the next wake-up or tick
	}
	h.mu.Lock()
	copies, more := h.l.followed(q, rows, h.clock.Now())
	to := h.copyTargets(copies)
	h.mu.Unlock()
	deliverCopies(copies, to)
	return more
}

// copyTargets are the subscribers of copies. Caller holds h.mu.
func (h *Hub) copyTargets(copies []copyPush) []Subscriber {
	to := make([]Subscriber, len(copies))
	for i, c := range copies {
		to[i] = h.subs[c.to]
	}
	return to
}

// deliverCopies pushes copies, at most once each: a socket that cannot take
// one now does not get it.
func deliverCopies(copies []copyPush, to []Subscriber) {
	for i, c := range copies {
		if to[i] != nil {
			to[i].Deliver(copyToken(c.n), c.n)
		}
	}
}

// Published implements ports.NotificationPublisher: rows committed here
// are copied at once to the sessions following their threads (but the one
// that wrote them), wake this replica's poller and the waits on their
// threads, and, by broadcast, the other replicas.
func (h *Hub) Published(ctx context.Context, ns []ports.NotificationRecord) {
	if len(ns) == 0 {
		return
	}
	threads := make([]string, 0, len(ns))
	for _, n := range ns {
		if len(threads) == 0 || threads[len(threads)-1] != n.ThreadID {
			threads = append(threads, n.ThreadID)
		}
	}
	h.watch.changed(threads)
	origin := h.originOf(ctx)
	h.mu.Lock()
	copies := h.l.published(ns, origin, h.clock.Now())
	to := h.copyTargets(copies)
	h.out.add(threads, true)
	h.mu.Unlock()
	deliverCopies(copies, to)
	h.Wake()
	h.signal(h.notify)
}

// ThreadsChanged wakes the waits on threads, here and on the other
// replicas: a change that raised no notification (a grant made, given back
// or cancelled).
func (h *Hub) ThreadsChanged(threads ...string) {
	if len(threads) == 0 {
		return
	}
	h.watch.changed(threads)
	h.mu.Lock()
	h.out.add(threads, false)
	h.mu.Unlock()
	h.signal(h.notify)
}

// WatchThread follows a thread's changes for one wait; Stop the watcher.
func (h *Hub) WatchThread(threadID string) *ThreadWatcher { return h.watch.watch(threadID) }

// RoundSlot takes a place among the wait rounds reading at once.
func (h *Hub) RoundSlot(ctx context.Context) (func(), error) { return h.watch.slot(ctx) }

func (h *Hub) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // already signalled: the one due covers this too
	}
}

// origin is the context key of the session an action came from.
type origin struct{}

// WithOrigin marks ctx as the context of an action of session s: the
// notifications it raises are not copied back to s (it hears its own
// writes in their replies).
func WithOrigin(ctx context.Context, s *HubSession) context.Context {
	return context.WithValue(ctx, origin{}, s)
}

func (h *Hub) originOf(ctx context.Context) sid {
	if ctx == nil {
		return 0
	}
	if s, ok := ctx.Value(origin{}).(*HubSession); ok && s != nil && s.hub == h {
		return s.id
	}
	return 0
}

// Register adds a live session for principalID.
func (h *Hub) Register(sub Subscriber, principalID string, maxInFlight int) *HubSession {
	if maxInFlight < 1 || maxInFlight > 100 {
		maxInFlight = 10
	}
	h.mu.Lock()
	id := h.l.register(principalID, maxInFlight)
	h.subs[id] = sub
	h.mu.Unlock()
	return &HubSession{hub: h, id: id}
}

// Subscribe sets a routing key (step name, "contract@step" or "global") and
// the event types wanted for it, in either SDK vocabulary (step.success or
// execution.success, rule.* or validation.*); none or "*" means all.
func (s *HubSession) Subscribe(key string, eventTypes []string) {
	h := s.hub
	h.mu.Lock()
	claimed := h.l.subscribe(s.id, key, eventTypes, h.clock.Now())
	if claimed {
		h.out.claims = append(h.out.claims, claimNote{h.l.sessions[s.id].principal, key})
	}
	h.mu.Unlock()
	if claimed {
		h.signal(h.notify)
	}
	h.Wake()
}

// Unsubscribe removes a routing key. The session's pushes no other of its
// keys wants are dropped (settled, counted as expired): they do not go on
// to the next subscriber of the key. Its principal's claim on the key ends
// unless another of its sessions here holds it.
func (s *HubSession) Unsubscribe(key string) {
	h := s.hub
	now := h.clock.Now()
	h.mu.Lock()
	var principal string
	if st := h.l.sessions[s.id]; st != nil {
		principal = st.principal
	}
	drop, released := h.l.unsubscribe(s.id, key, now)
	if released {
		h.out.releases = append(h.out.releases, claimNote{principal, key})
	}
	h.countPending()
	h.mu.Unlock()
	if released {
		h.signal(h.notify)
	}
	if len(drop) == 0 || h.logStore == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.logStore.DropNotifications(ctx, drop, now); err != nil {
		h.log.Warn("notifications: drop on unsubscribe; redelivered when the lease ends", "err", err)
		return
	}
	h.dropped.Add(int64(len(drop)))
	for range drop {
		h.metrics.NotificationExpired()
	}
}

// NormalizeEventType maps the Node vocabulary onto the engine's.
func NormalizeEventType(e string) string {
	if rest, ok := strings.CutPrefix(e, "step."); ok {
		return "execution." + rest
	}
	if rest, ok := strings.CutPrefix(e, "rule."); ok {
		return "validation." + rest
	}
	return e
}

// AddThread makes the session eligible for a thread's notifications even
// when its principal does not own the thread (it joined it).
func (s *HubSession) AddThread(id string) {
	s.hub.mu.Lock()
	s.hub.l.join(s.id, id)
	s.hub.mu.Unlock()
	s.hub.Wake()
}

// Follow makes the session follow a thread it started or joined: it gets
// copies of the thread's notifications (follow.go).
func (s *HubSession) Follow(id string) {
	s.hub.mu.Lock()
	s.hub.l.follow(s.id, id, s.hub.clock.Now())
	s.hub.mu.Unlock()
}

// ackToken names one push: the notification id and its delivery number, so
// each redelivery carries a fresh token while any of them acknowledges the
// notification, on any replica, also after a reconnect. A copy's token ends
// in ".c" (copyToken).
func ackToken(n ports.NotificationRecord) string {
	return n.ID + "." + strconv.Itoa(n.Deliveries)
}

// Ack acknowledges a push by its token (or a notification by its id) and
// waits for it to be settled; it reports whether the notification was still
// unacknowledged. A copy's token settles nothing (false).
func (s *HubSession) Ack(token string) bool { return s.ack(token, true) }

// AckLater acknowledges like Ack without waiting for the settlement (the
// SDKs send acks without a requestId and read no reply).
func (s *HubSession) AckLater(token string) { s.ack(token, false) }

func (s *HubSession) ack(token string, wait bool) bool {
	id := token
	if i := strings.LastIndexByte(token, '.'); i > 0 {
		if token[i+1:] == "c" {
			return false // a copy: the notification is the subscribers'
		}
		id = token[:i]
	}
	h := s.hub
	h.mu.Lock()
	freed := h.l.ack(s.id, id)
	h.countPending()
	h.mu.Unlock()
	if freed {
		h.Wake() // the session has room again
	}
	if h.logStore == nil {
		return false
	}
	req := ackReq{id: id}
	if wait {
		req.done = make(chan bool, 1)
	}
	h.queueAck(req)
	return wait && <-req.done
}

// Close unregisters the session; its unacknowledged pushes are released so
// another session (here or on another replica) gets them at once.
func (s *HubSession) Close() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	h := s.hub
	now := h.clock.Now()
	h.mu.Lock()
	ids := h.l.close(s.id, now)
	delete(h.subs, s.id)
	h.countPending()
	if len(ids) > 0 {
		h.out.rows = true // the other replicas' subscribers may take them
	}
	h.mu.Unlock()
	if len(ids) == 0 || h.logStore == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.logStore.ReleaseNotifications(ctx, ids, now, true); err != nil {
		h.log.Warn("notifications: release on close; redelivered when the lease ends", "err", err)
	}
	h.Wake()
	h.signal(h.notify)
}
