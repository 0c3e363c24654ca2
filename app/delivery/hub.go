package delivery

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// PollEvery is how often the log is read without a wake-up (leases that
	// ended, a missed wake-up). Default 1 s.
	PollEvery time.Duration
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
	if c.PollEvery <= 0 {
		c.PollEvery = time.Second
	}
	return c
}

// Hub delivers the notification log to live subscribers, at least once,
// across reconnects, restarts and replicas. The stored rows are the log:
// a replica with subscribed sessions reads the pending rows of their
// principals (and of threads they joined) after its cursor, leases each one
// it can push for RedeliverAfter, and the subscriber's ack settles it in the
// database, so whichever replica the subscriber reconnects to carries on. A
// push not acknowledged in time is leased and pushed again with the same
// notification id. Replicas are woken by one broadcast per commit burst, and
// poll every PollEvery anyway.
//
// At most maxInFlight unacknowledged pushes are outstanding per session.
type Hub struct {
	logStore  ports.NotificationLog // nil: nothing is delivered
	bus       ports.Broadcast
	clock     ports.Clock
	log       *slog.Logger
	cfgMu     sync.RWMutex
	cfg       HubConfig
	wake      chan struct{}
	notify    chan struct{}
	expired   atomic.Int64
	dropped   atomic.Int64
	delivered atomic.Int64
	// metrics (set by SetMetrics before Run): pending counts this
	// process's unacknowledged pushes; expired counts rows given up on
	// (retention or max deliveries).
	metrics ports.DeliveryMetrics

	chMu    sync.Mutex
	changed chan struct{} // closed (and replaced) at every wake-up

	mu       sync.Mutex
	sessions map[*HubSession]struct{}
	cursor   int64 // every pending row at or below it was examined (see poll)
	// cursorGen counts writes of cursor (setCursor): a poll moves the
	// cursor only if nobody wrote it since its read began — a rescan back
	// to 0 that another poll then moved to the same value included.
	cursorGen uint64
	pushed    []seenRow           // rows this hub leased, oldest first, not yet behind the cursor
	seen      map[int64]time.Time // seq → when this hub first read it, for rows above the cursor
	rr        int
	claiming  map[string]bool // rows picked by a poll whose lease is not settled yet
	// Leases and pushes happen in the order the rows were picked, poll
	// after poll, even when the reads overlap (see maxPolls): tickets are
	// handed out at the pick and served one at a time.
	ticket, serving uint64
	turn            *sync.Cond // on mu

	ackMu     sync.Mutex
	ackOpen   bool // the flusher runs (see acks.go)
	ackQueue  []ackReq
	ackSignal chan struct{}
}

// seenRow is a row the hub leased: once settled (see settledAt) the cursor
// may move past it.
type seenRow struct {
	seq     int64
	created time.Time // the row's timestamp
	at      time.Time // when this hub first read it
}

// HubSession is a subscriber's registration.
type HubSession struct {
	hub         *Hub
	sub         Subscriber
	principalID string
	maxInFlight int
	keys        map[string]map[string]bool // routing key (step, contract@step, global) → event types (empty: all)
	threads     map[string]bool            // threads started or joined on this session
	inFlight    map[string]time.Time       // notification id → lease end
	reserved    int                        // rows picked for it, lease not settled yet
	closed      bool
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
	h := &Hub{logStore: store, clock: clock, log: log, cfg: HubConfig{}.withDefaults(),
		wake: make(chan struct{}, 1), notify: make(chan struct{}, 1), sessions: map[*HubSession]struct{}{},
		changed: make(chan struct{}), metrics: ports.NopMetrics{}, ackSignal: make(chan struct{}, 1),
		claiming: map[string]bool{}}
	h.turn = sync.NewCond(&h.mu)
	return h
}

// Configure replaces the delivery settings.
func (h *Hub) Configure(c HubConfig) {
	h.cfgMu.Lock()
	h.cfg = c.withDefaults()
	h.cfgMu.Unlock()
}

// SetMetrics makes the hub report its pushes to m. Call it before Run.
func (h *Hub) SetMetrics(m ports.DeliveryMetrics) { h.metrics = m }

// SetRedeliverAfter changes the acknowledgement timeout (tests shorten it).
func (h *Hub) SetRedeliverAfter(d time.Duration) {
	h.cfgMu.Lock()
	h.cfg.RedeliverAfter = d
	h.cfgMu.Unlock()
}

func (h *Hub) config() HubConfig {
	h.cfgMu.RLock()
	defer h.cfgMu.RUnlock()
	return h.cfg
}

// Counts are the hub's delivery counters since start.
type HubCounts struct{ Delivered, Expired, Dropped int64 }

// Counts returns the delivery counters of this process.
func (h *Hub) Counts() HubCounts {
	return HubCounts{Delivered: h.delivered.Load(), Expired: h.expired.Load(), Dropped: h.dropped.Load()}
}

// Run delivers until ctx ends. bus (may be nil) wakes the other replicas
// after a commit and wakes this one after theirs.
func (h *Hub) Run(ctx context.Context, bus ports.Broadcast) {
	h.bus = bus
	if bus != nil {
		bus.Listen(ports.ChannelNotifications, func(p string) {
			if p == ports.Resync {
				h.rescan()
			}
			h.Wake()
		})
		go h.notifier(ctx)
	}
	go h.janitor(ctx)
	acked := make(chan struct{})
	go func() { defer close(acked); h.acker(ctx) }()
	defer func() { <-acked }()
	var polls sync.WaitGroup
	defer polls.Wait()
	t := time.NewTicker(h.config().PollEvery)
	defer t.Stop()
	var (
		mu             sync.Mutex
		running        int
		due, leasesDue bool // a wake-up or tick came while maxPolls ran
	)
	// start runs a poll unless maxPolls already run; a poll that ends
	// runs what came meanwhile itself. withLeases first looks for pushes
	// whose lease ended (they lie behind the cursor: looked for once per
	// interval, not at every wake-up).
	start := func(withLeases bool) {
		mu.Lock()
		defer mu.Unlock()
		if running == maxPolls {
			due, leasesDue = due || !withLeases, leasesDue || withLeases
			return
		}
		running++
		polls.Add(1)
		go func() {
			defer polls.Done()
			for {
				for withLeases && h.poll(ctx, true) && ctx.Err() == nil {
				}
				for h.poll(ctx, false) && ctx.Err() == nil {
				}
				mu.Lock()
				if ctx.Err() != nil || !(due || leasesDue) {
					running--
					mu.Unlock()
					return
				}
				withLeases, due, leasesDue = leasesDue, false, false
				mu.Unlock()
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
			start(false)
		case <-t.C:
			start(true)
		}
	}
}

// maxPolls is how many polls may run at once. A row committed while a
// poll's read is under way is not in that read: with one poll at a time it
// waited for that read, the lease and the push to finish first, which on a
// saturated machine was most of a cross-replica push's delay (see
// docs/contributors/performance.md). A second poll reads it at once; rows
// the first has picked are skipped (claiming) and the room they take is
// reserved, so nothing is pushed twice or beyond maxInFlight.
const maxPolls = 2

// Changed returns a channel closed at the next wake-up: something was
// committed here or on another replica (or a poll interval passed). Waits
// re-read what they wait for then.
func (h *Hub) Changed() <-chan struct{} {
	h.chMu.Lock()
	defer h.chMu.Unlock()
	return h.changed
}

// Wake makes the hub read the log now.
func (h *Hub) Wake() {
	h.chMu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.chMu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Published implements ports.NotificationPublisher: committed rows wake
// this replica at once and, with one broadcast per burst of commits, the
// others.
func (h *Hub) Published(ns []ports.NotificationRecord) {
	if len(ns) == 0 {
		return
	}
	h.Wake()
	select {
	case h.notify <- struct{}{}:
	default: // a broadcast is already due; it covers these rows too
	}
}

// notifier sends one broadcast at a time: commits that land while one is
// being sent share the next, so a burst of group commits costs one NOTIFY
// per round trip, not one per step. (The wake-up channel does not wait for
// its echo, so the next one is held back by the send alone.)
func (h *Hub) notifier(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.notify:
			if err := h.bus.Publish(ctx, ports.ChannelNotifications, ""); err != nil && ctx.Err() == nil {
				h.log.Warn("notifications: wake-up not broadcast; other replicas poll within a second", "err", err)
			}
		}
	}
}

func (h *Hub) janitor(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		h.expire(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expire settles what can no longer be delivered, and counts it.
func (h *Hub) expire(ctx context.Context) {
	if h.logStore == nil {
		return
	}
	cfg, now := h.config(), h.clock.Now()
	exp, drop, err := h.logStore.ExpireNotifications(ctx, now.Add(-cfg.Retention), now, cfg.MaxDeliveries)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("notifications: expiry", "err", err)
		}
		return
	}
	h.expired.Add(int64(exp))
	h.dropped.Add(int64(drop))
	for range exp + drop {
		h.metrics.NotificationExpired()
	}
	if exp > 0 || drop > 0 {
		h.log.Warn("notifications settled undelivered", "expired", exp, "dropped_after_max_deliveries", drop,
			"retention", cfg.Retention.String())
	}
}

// ExpireNow runs the expiry at once (tests).
func (h *Hub) ExpireNow(ctx context.Context) { h.expire(ctx) }

// Register adds a live session for principalID.
func (h *Hub) Register(sub Subscriber, principalID string, maxInFlight int) *HubSession {
	if maxInFlight < 1 || maxInFlight > 100 {
		maxInFlight = 10
	}
	s := &HubSession{hub: h, sub: sub, principalID: principalID, maxInFlight: maxInFlight,
		keys: map[string]map[string]bool{}, threads: map[string]bool{}, inFlight: map[string]time.Time{}}
	h.mu.Lock()
	h.sessions[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// rescan makes the next poll start from the beginning of the log: what a
// new subscription wants may be older than the cursor.
func (h *Hub) rescan() {
	h.mu.Lock()
	h.setCursor(0)
	h.mu.Unlock()
}

// setCursor writes the cursor. Caller holds h.mu.
func (h *Hub) setCursor(v int64) {
	h.cursor = v
	h.cursorGen++
}

// Subscribe sets a routing key (step name, "contract@step" or "global") and
// the event types wanted for it, in either SDK vocabulary (step.success or
// execution.success, rule.* or validation.*); none or "*" means all.
func (s *HubSession) Subscribe(key string, eventTypes []string) {
	set := map[string]bool{}
	for _, e := range eventTypes {
		set[NormalizeEventType(e)] = true
	}
	s.hub.mu.Lock()
	s.keys[key] = set
	s.hub.setCursor(0)
	s.hub.mu.Unlock()
	s.hub.Wake()
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

func wants(set map[string]bool, typ string) bool {
	if len(set) == 0 || set["*"] || set[typ] {
		return true
	}
	prefix, _, _ := strings.Cut(typ, ".")
	return set[prefix+".*"]
}

// Unsubscribe removes a routing key.
func (s *HubSession) Unsubscribe(key string) {
	s.hub.mu.Lock()
	delete(s.keys, key)
	s.hub.mu.Unlock()
}

// AddThread makes the session eligible for a thread's notifications even
// when its principal does not own the thread (it joined it).
func (s *HubSession) AddThread(id string) {
	s.hub.mu.Lock()
	s.threads[id] = true
	s.hub.setCursor(0)
	s.hub.mu.Unlock()
	s.hub.Wake()
}

// ackToken names one push: the notification id and its delivery number, so
// each redelivery carries a fresh token while any of them acknowledges the
// notification, on any replica, also after a reconnect.
func ackToken(n ports.NotificationRecord) string {
	return n.ID + "." + strconv.Itoa(n.Deliveries)
}

// Ack acknowledges a push by its token (or a notification by its id) and
// waits for it to be settled; it reports whether the notification was still
// unacknowledged.
func (s *HubSession) Ack(token string) bool { return s.ack(token, true) }

// AckLater acknowledges like Ack without waiting for the settlement (the
// SDKs send acks without a requestId and read no reply).
func (s *HubSession) AckLater(token string) { s.ack(token, false) }

func (s *HubSession) ack(token string, wait bool) bool {
	id := token
	if i := strings.LastIndexByte(token, '.'); i > 0 {
		id = token[:i]
	}
	h := s.hub
	h.mu.Lock()
	if _, ok := s.inFlight[id]; ok {
		delete(s.inFlight, id)
		h.metrics.NotificationsPending(-1)
	}
	h.mu.Unlock()
	h.Wake() // the session has room again
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
	h := s.hub
	h.mu.Lock()
	if s.closed {
		h.mu.Unlock()
		return
	}
	s.closed = true
	delete(h.sessions, s)
	ids := make([]string, 0, len(s.inFlight))
	for id := range s.inFlight {
		ids = append(ids, id)
	}
	s.inFlight = nil
	h.metrics.NotificationsPending(-len(ids))
	h.mu.Unlock()
	if len(ids) > 0 && h.logStore != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.logStore.ReleaseNotifications(ctx, ids, h.clock.Now(), true); err != nil {
			h.log.Warn("notifications: release on close; redelivered when the lease ends", "err", err)
		}
		h.rescan()
		h.Wake()
		h.Published(make([]ports.NotificationRecord, 1)) // wake the other replicas too
	}
}

func routingKeys(n ports.NotificationRecord) []string {
	if n.Source == "thread" || strings.HasPrefix(n.NotificationType, "thread.") {
		return []string{"global"}
	}
	keys := []string{n.StepName}
	if n.ContractName != "" {
		keys = append(keys, n.ContractName+"@"+n.StepName)
	}
	return keys
}

// matches reports whether s wants n. Caller holds h.mu.
func (s *HubSession) matches(n ports.NotificationRecord) bool {
	if s.principalID != n.OwnerID && !s.threads[n.ThreadID] {
		return false
	}
	for _, k := range routingKeys(n) {
		if set, ok := s.keys[k]; ok && wants(set, n.NotificationType) {
			return true
		}
	}
	return false
}

// room is how many more pushes s may have outstanding. Caller holds h.mu.
func (s *HubSession) room(now time.Time) int {
	for id, until := range s.inFlight {
		if !until.After(now) { // the lease ended: it may be pushed again anywhere
			delete(s.inFlight, id)
			s.hub.metrics.NotificationsPending(-1)
		}
	}
	return s.maxInFlight - len(s.inFlight) - s.reserved
}

// pollLimit bounds the rows read per poll.
const pollLimit = 500

// maxPushed bounds the rows remembered for moving the cursor; forgetting one
// only keeps the cursor back (the poll reads a little more), never skips.
const maxPushed = 100_000

// poll reads pending rows for the subscribed sessions, leases those a
// session has room for and pushes them. It reports whether another poll
// should follow at once (a full page). With leaseEnded it reads only pushes
// whose lease ended (they lie behind the cursor) and leaves the cursor alone.
//
// The cursor only skips rows already examined, and never rows younger than
// commitSlack, because a transaction that took a lower seq may commit after
// one that took a higher seq. It moves past rows read and left to nobody
// here, and past rows this hub leased (remembered in pushed): without the
// latter it stayed where the subscription began, since a pushed row is
// never read again, and every poll stepped over everything acknowledged
// since. It stops before the first row a matching session had no room for.
func (h *Hub) poll(ctx context.Context, leaseEnded bool) bool {
	if h.logStore == nil {
		return false
	}
	cfg := h.config()
	now := h.clock.Now()
	h.mu.Lock()
	owners, threads, steps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for s := range h.sessions {
		if len(s.keys) == 0 {
			continue
		}
		for k := range s.keys {
			if _, step, ok := strings.Cut(k, "@"); ok {
				k = step
			}
			steps[k] = true // thread events are stored under "global"
		}
		owners[s.principalID] = true
		for t := range s.threads {
			threads[t] = true
		}
	}
	after, gen := h.cursor, h.cursorGen
	h.mu.Unlock()
	if len(owners) == 0 {
		return false
	}
	// Only subscribed step names are read: rows nobody here subscribed to
	// stay pending (for another replica, a later subscription or expiry)
	// without being read at every poll.
	rows, err := h.logStore.PendingNotifications(ctx, ports.PendingQuery{Owners: keys(owners), Threads: keys(threads),
		StepNames: keys(steps), AfterSeq: after, LeaseEnded: leaseEnded,
		Now: now, MaxDeliveries: cfg.MaxDeliveries, Limit: pollLimit})
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("notifications: read the log", "err", err)
		}
		return false
	}
	picks, ticket, advanced, blocked := h.pick(rows, after, gen, now, leaseEnded)
	if len(picks) == 0 {
		return len(rows) == pollLimit && !blocked && advanced
	}
	ids := make([]string, len(picks))
	for i, p := range picks {
		ids[i] = p.n.ID
	}
	h.mu.Lock()
	for h.serving != ticket {
		h.turn.Wait()
	}
	h.mu.Unlock()
	claimed, err := h.logStore.ClaimNotifications(ctx, ids, now, now.Add(cfg.RedeliverAfter))
	got := make(map[string]bool, len(claimed))
	for _, id := range claimed {
		got[id] = true
	}
	var refused []string
	h.mu.Lock()
	h.serving++
	h.turn.Broadcast()
	for _, p := range picks {
		p.s.reserved--
		delete(h.claiming, p.n.ID)
	}
	if err != nil {
		// The picks may lie behind the cursor now (a backlog row is
		// settled at once): read them again.
		if after < h.cursor {
			h.setCursor(after)
		}
		h.mu.Unlock()
		if ctx.Err() == nil {
			h.log.Warn("notifications: lease", "err", err)
		}
		return false
	}
	for _, p := range picks {
		if !got[p.n.ID] {
			continue // another replica leased it first
		}
		p.n.Deliveries++
		if p.s.closed || !p.s.sub.Deliver(ackToken(p.n), p.n) {
			refused = append(refused, p.n.ID)
			continue
		}
		if !leaseEnded && len(h.pushed) < maxPushed {
			h.pushed = append(h.pushed, seenRow{seq: p.n.Seq, created: p.n.CreatedAt, at: h.firstSeen(p.n, now)})
		}
		if _, again := p.s.inFlight[p.n.ID]; !again {
			h.metrics.NotificationsPending(1)
		}
		p.s.inFlight[p.n.ID] = now.Add(cfg.RedeliverAfter)
		h.delivered.Add(1)
		if p.n.Deliveries > 1 {
			h.metrics.NotificationRedelivered()
		}
	}
	if len(refused) > 0 && after < h.cursor {
		h.setCursor(after)
	}
	h.mu.Unlock()
	if len(claimed) < len(picks) && blocked {
		// Room reserved for rows another replica (or an overlapping poll)
		// leased first held back a row behind them: read again now, not
		// at the next tick.
		h.Wake()
	}
	if len(refused) > 0 {
		// The socket was saturated or gone: give the rows back; the next
		// poll (at most PollEvery away) tries again.
		if err := h.logStore.ReleaseNotifications(ctx, refused, now, false); err != nil && ctx.Err() == nil {
			h.log.Warn("notifications: release", "err", err)
		}
		return false
	}
	return len(rows) == pollLimit
}

// pushPick is a row and the session chosen to receive it.
type pushPick struct {
	n ports.NotificationRecord
	s *HubSession
}

// pick chooses a session with room for each row, in order, reserves that
// room, and moves the cursor (unless leaseEnded) as poll describes. It
// returns the ticket the picks' lease waits for, and reports whether the
// cursor moved since the poll's read began (here, or by a rescan or
// another poll: reading again goes on from there) and whether a matching
// session was full.
func (h *Hub) pick(rows []ports.NotificationRecord, after int64, gen uint64, now time.Time, leaseEnded bool) ([]pushPick, uint64, bool, bool) {
	var picks []pushPick
	h.mu.Lock()
	defer h.mu.Unlock()
	ticket := h.ticket
	defer func() {
		if len(picks) > 0 {
			h.ticket++
		}
	}()
	cursor, blocked := after, false
	// limit: the highest seq the cursor may reach. A full page examined the
	// log only up to its last row; a blocked row must be read again.
	limit := int64(math.MaxInt64)
	if len(rows) == pollLimit {
		limit = rows[len(rows)-1].Seq
	}
	rooms := map[*HubSession]int{}
	for _, n := range rows {
		var cands []*HubSession
		for s := range h.sessions {
			if s.matches(n) {
				cands = append(cands, s)
			}
		}
		if h.claiming[n.ID] || held(cands, n.ID, now) {
			// Picked by the poll whose read overlaps this one, or already
			// pushed under a lease this read predates: not this poll's.
			if !blocked && !leaseEnded && h.settled(n, now) {
				cursor = n.Seq
			}
			continue
		}
		var chosen *HubSession
		h.rr++
		for i := range cands {
			s := cands[(h.rr+i)%len(cands)]
			r, ok := rooms[s]
			if !ok {
				r = s.room(now)
			}
			if r > 0 {
				chosen, rooms[s] = s, r-1
				break
			}
			rooms[s] = r
		}
		switch {
		case chosen != nil:
			picks = append(picks, pushPick{n, chosen})
			chosen.reserved++
			h.claiming[n.ID] = true
		case len(cands) > 0 && !blocked:
			blocked = true // a matching session is full: come back after an ack
			limit = min(limit, n.Seq-1)
		}
		if !blocked && !leaseEnded && h.settled(n, now) {
			cursor = n.Seq
		}
	}
	if leaseEnded {
		return picks, ticket, false, blocked
	}
	if h.cursorGen != gen { // a rescan was asked for, or another poll moved it, meanwhile: read from there
		return picks, ticket, true, blocked
	}
	// Rows pushed earlier are not read again: move past those old enough.
	for len(h.pushed) > 0 && settledAt(h.pushed[0].created, h.pushed[0].at, now) && h.pushed[0].seq <= limit {
		cursor = max(cursor, h.pushed[0].seq)
		h.pushed = h.pushed[1:]
	}
	if c := min(cursor, limit); c != h.cursor {
		h.setCursor(c)
	}
	if h.cursor > after { // forget the first reads the cursor has passed
		for seq := range h.seen {
			if seq <= h.cursor {
				delete(h.seen, seq)
			}
		}
	}
	return picks, ticket, h.cursor > after, blocked
}

// held reports whether one of sessions has id pushed and its lease running.
// Caller holds h.mu.
func held(sessions []*HubSession, id string, now time.Time) bool {
	for _, s := range sessions {
		if until, ok := s.inFlight[id]; ok && until.After(now) {
			return true
		}
	}
	return false
}

// firstSeen is when this hub first read row n (now, the first time).
// Caller holds h.mu.
func (h *Hub) firstSeen(n ports.NotificationRecord, now time.Time) time.Time {
	if at, ok := h.seen[n.Seq]; ok {
		return at
	}
	if h.seen == nil {
		h.seen = map[int64]time.Time{}
	}
	if len(h.seen) < maxPushed { // forgetting only keeps the cursor back
		h.seen[n.Seq] = now
	}
	return now
}

// settled reports whether no row with a lower seq than n can still commit
// (settledAt). Caller holds h.mu.
func (h *Hub) settled(n ports.NotificationRecord, now time.Time) bool {
	return settledAt(n.CreatedAt, h.firstSeen(n, now), now)
}

// settledAt: commitSlack has passed since this hub first read the row (seen),
// by its own clock, so another replica's clock does not matter; or the row's
// own timestamp (created) is older than oldRow, which covers a backlog read
// again after a rescan.
func settledAt(created, seen, now time.Time) bool {
	return now.Sub(created) > oldRow || now.Sub(seen) > commitSlack
}

// commitSlack is how long after a row is visible a row with a lower seq
// may still become visible (the commit of a concurrent batch).
const commitSlack = 5 * time.Second

// oldRow: a row whose timestamp is older than this is settled at once. It
// bounds the clock difference between replicas that is tolerated (a replica
// whose clock runs ahead of a writer's by more could pass a row too soon).
const oldRow = time.Minute

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
