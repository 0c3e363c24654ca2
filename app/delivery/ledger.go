package delivery

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/threadengine/engine/ports"
)

// The ledger is the hub's state and every delivery decision, as a pure
// type: no goroutines, no locks, no I/O, the time passed in. The Hub holds
// it under its one mutex and does the I/O around its calls (read the log,
// lease, push, settle); ledger_test.go judges it table by table.
//
// One poll is: query (what to read) → the Hub reads the log → pick (a
// session with room for each row; the cursor moves) → the Hub leases the
// picks → leased (what to push) → the Hub pushes, outside the lock →
// refused (a socket that could not take its push).

// sid names a session inside the ledger.
type sid uint64

// ledger: see above.
type ledger struct {
	sessions    map[sid]*sessionState
	byPrincipal map[string]map[sid]bool // principal → its sessions
	byJoined    map[string]map[sid]bool // thread joined (not owned) → sessions that joined it
	next        sid
	cur         logCursor
	rr          int // round robin among the sessions a row may go to

	claims claimTable
	// knownSince: rows raised before it are held for any subscriber of
	// their key, because this hub may not have heard of the claims made
	// then (it started, or broadcasts were lost).
	knownSince time.Time

	follows map[string]*threadFollow // thread → the sessions that follow it (copies)

	pending int // net change of unacknowledged pushes since takePending (metrics)
}

// sessionState is one subscriber as the ledger sees it.
type sessionState struct {
	principal   string
	maxInFlight int
	keys        map[string]subscription // routing key (step, contract@step, global)
	joined      map[string]bool         // threads joined here that the principal does not own
	follows     []string                // threads started or joined here, oldest first (at most maxFollows)
	followSet   map[string]bool         // the same, as a set
	inFlight    map[string]flight       // notification id → its push
}

// subscription is one routing key of a session.
type subscription struct {
	events map[string]bool // event types wanted (none: all)
	since  time.Time       // when the session subscribed to the key
}

// flight is a push awaiting its acknowledgement.
type flight struct {
	until time.Time // lease end: after it the row may be pushed again anywhere
	keys  []string  // the row's routing keys, and its type, for unsubscribe
	typ   string
}

// logCursor is how far the log was examined: every pending row at or below
// at was read and either pushed or left to nobody here (see pick).
type logCursor struct {
	at  int64
	gen uint64 // counts writes of at: a read moves it only if nobody wrote it since the read began

	pushed []seenRow           // rows this hub leased, oldest first, not yet behind the cursor
	seen   map[int64]time.Time // seq → when this hub first read it, for rows above the cursor
}

// seenRow is a row the hub leased: once settled (settledAt) the cursor may
// move past it.
type seenRow struct {
	seq     int64
	created time.Time // the row's timestamp
	at      time.Time // when this hub first read it
}

// Bounds on the ledger's memory.
const (
	// maxPushed bounds the rows remembered for moving the cursor; forgetting
	// one only keeps the cursor back (a poll reads a little more).
	maxPushed = 100_000
	// maxFollows bounds the threads one session follows: a long-lived
	// writer starts thread after thread; the oldest is dropped.
	maxFollows = 1024
	// maxLocalCopies bounds the ids remembered per followed thread as
	// copied (so the commit's copy and a read's are not both pushed; see
	// copyMemory).
	maxLocalCopies = 4096
)

func newLedger(now time.Time) *ledger {
	return &ledger{sessions: map[sid]*sessionState{}, byPrincipal: map[string]map[sid]bool{}, byJoined: map[string]map[sid]bool{},
		// Rows carry microseconds (what the stores keep).
		claims: claimTable{}, knownSince: now.Truncate(time.Microsecond), follows: map[string]*threadFollow{}}
}

// takePending returns and resets the net change of unacknowledged pushes.
func (l *ledger) takePending() int {
	d := l.pending
	l.pending = 0
	return d
}

// rescan makes the next read start from the beginning of the log: what a
// new subscription (or a released push) wants may lie behind the cursor.
func (l *ledger) rescan() { l.setCursor(0) }

func (l *ledger) setCursor(v int64) {
	l.cur.at = v
	l.cur.gen++
}

func addIndex(m map[string]map[sid]bool, key string, id sid) {
	if m[key] == nil {
		m[key] = map[sid]bool{}
	}
	m[key][id] = true
}

func dropIndex(m map[string]map[sid]bool, key string, id sid) {
	delete(m[key], id)
	if len(m[key]) == 0 {
		delete(m, key)
	}
}

// register adds a session of principal with at most maxInFlight
// unacknowledged pushes.
func (l *ledger) register(principal string, maxInFlight int) sid {
	l.next++
	id := l.next
	l.sessions[id] = &sessionState{principal: principal, maxInFlight: maxInFlight, keys: map[string]subscription{},
		joined: map[string]bool{}, followSet: map[string]bool{}, inFlight: map[string]flight{}}
	addIndex(l.byPrincipal, principal, id)
	return id
}

// subscribe sets a routing key and its event types (either vocabulary) for
// session id. It reports whether the principal's claim on the key is new
// or begins earlier (the Hub tells the other replicas).
func (l *ledger) subscribe(id sid, key string, events []string, now time.Time) bool {
	s := l.sessions[id]
	if s == nil {
		return false
	}
	set := map[string]bool{}
	for _, e := range events {
		set[NormalizeEventType(e)] = true
	}
	sub := subscription{events: set, since: now}
	if old, ok := s.keys[key]; ok { // a new set of types: the subscription goes on
		sub.since = old.since
	}
	s.keys[key] = sub
	l.rescan()
	return l.claims.claim(s.principal, key, now)
}

// unsubscribe removes a routing key from session id. Its pushes that no
// other key of the session wants are returned to drop (settled: they do not
// go on to the next subscriber), and the principal's claim on the key ends
// unless another session of it here still holds the key; released reports
// that (the Hub tells the other replicas).
func (l *ledger) unsubscribe(id sid, key string, now time.Time) (drop []string, released bool) {
	s := l.sessions[id]
	if s == nil {
		return nil, false
	}
	if _, ok := s.keys[key]; !ok {
		return nil, false
	}
	delete(s.keys, key)
	for nid, f := range s.inFlight {
		if !s.wantsAny(f.keys, f.typ) {
			drop = append(drop, nid)
			delete(s.inFlight, nid)
			l.pending--
		}
	}
	slices.Sort(drop)
	for other := range l.byPrincipal[s.principal] {
		if _, ok := l.sessions[other].keys[key]; ok {
			return drop, false
		}
	}
	return drop, l.claims.release(s.principal, key, now)
}

// join makes session id eligible for the notifications of a thread its
// principal does not own (it joined it).
func (l *ledger) join(id sid, thread string) {
	s := l.sessions[id]
	if s == nil || s.joined[thread] {
		return
	}
	s.joined[thread] = true
	addIndex(l.byJoined, thread, id)
	l.rescan()
}

// ack settles a push of session id in memory (the Hub settles it in the
// log) and reports whether it was in flight there.
func (l *ledger) ack(id sid, notification string) bool {
	s := l.sessions[id]
	if s == nil {
		return false
	}
	if _, ok := s.inFlight[notification]; !ok {
		return false
	}
	delete(s.inFlight, notification)
	l.pending--
	return true
}

// close removes session id and returns its unacknowledged pushes, which
// the Hub releases so another session gets them at once. Its principal's
// claims on its keys last (it may be reconnecting).
func (l *ledger) close(id sid, now time.Time) []string {
	s := l.sessions[id]
	if s == nil {
		return nil
	}
	for k := range s.keys {
		l.claims.touch(s.principal, k, now)
	}
	delete(l.sessions, id)
	dropIndex(l.byPrincipal, s.principal, id)
	for t := range s.joined {
		dropIndex(l.byJoined, t, id)
	}
	for _, t := range s.follows {
		l.unfollowOne(t, id)
	}
	ids := make([]string, 0, len(s.inFlight))
	for nid := range s.inFlight {
		ids = append(ids, nid)
	}
	slices.Sort(ids)
	l.pending -= len(ids)
	if len(ids) > 0 {
		l.rescan()
	}
	return ids
}

// wants reports whether the subscription takes events of type typ.
func (sub subscription) wants(typ string) bool {
	set := sub.events
	if len(set) == 0 || set["*"] || set[typ] {
		return true
	}
	prefix, _, _ := strings.Cut(typ, ".")
	return set[prefix+".*"]
}

// wantsAny reports whether one of the session's keys takes a row routed by
// keys, of type typ.
func (s *sessionState) wantsAny(keys []string, typ string) bool {
	for _, k := range keys {
		if sub, ok := s.keys[k]; ok && sub.wants(typ) {
			return true
		}
	}
	return false
}

// routingKeys are the subscription keys a notification is routed by.
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

// eligible reports whether row n may be pushed to session s: the session
// subscribed to one of its keys (with its type), its principal owns the
// thread or it joined it, and the row is not an old one held for nobody
// (see docs/integrators/websocket-protocol.md, "Which pushes a new
// subscriber gets"): raised after the session subscribed, or already
// pushed and never acknowledged, or of a thread started or joined on the
// session, or raised while the principal held a claim on the key, or
// before this hub knew the claims.
func (l *ledger) eligible(s *sessionState, n ports.NotificationRecord) bool {
	if s.principal != n.OwnerID && !s.joined[n.ThreadID] {
		return false
	}
	var keys []string
	live := false
	for _, k := range routingKeys(n) {
		if sub, ok := s.keys[k]; ok && sub.wants(n.NotificationType) {
			keys = append(keys, k)
			live = live || !n.CreatedAt.Before(sub.since.Add(-commitSlack))
		}
	}
	switch {
	case len(keys) == 0:
		return false
	case live, // raised after the session subscribed
		n.Deliveries > 0,                 // pushed to a subscriber before, never acknowledged
		s.followSet[n.ThreadID],          // a thread started or joined on the session
		n.CreatedAt.Before(l.knownSince): // raised before this hub knew the claims
		return true
	}
	for _, k := range keys {
		if l.claims.covers(s.principal, k, n.CreatedAt) {
			return true
		}
	}
	return false
}

// candidates are the sessions row n may go to, in a fixed order.
func (l *ledger) candidates(n ports.NotificationRecord) []sid {
	var out []sid
	for id := range l.byPrincipal[n.OwnerID] {
		if l.eligible(l.sessions[id], n) {
			out = append(out, id)
		}
	}
	for id := range l.byJoined[n.ThreadID] {
		if s := l.sessions[id]; s.principal != n.OwnerID && l.eligible(s, n) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// room is how many more pushes s may have outstanding; pushes whose lease
// ended are forgotten (they may be pushed again anywhere).
func (l *ledger) room(s *sessionState, now time.Time) int {
	for nid, f := range s.inFlight {
		if !f.until.After(now) {
			delete(s.inFlight, nid)
			l.pending--
		}
	}
	return s.maxInFlight - len(s.inFlight)
}

// readMark is what one read asked for.
type readMark struct {
	after      int64
	gen        uint64
	leaseEnded bool
}

// query is the next read of the log for the subscribed sessions, false
// when nobody here is subscribed. Only subscribed step names are read:
// rows nobody here subscribed to stay pending (for another replica, a
// later subscription or expiry) without being read at every poll. With
// leaseEnded it asks for pushes whose lease ended, which lie behind the
// cursor.
func (l *ledger) query(now time.Time, leaseEnded bool, maxDeliveries, limit int) (ports.PendingQuery, readMark, bool) {
	owners, threads, steps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range l.sessions {
		if len(s.keys) == 0 {
			continue
		}
		for k := range s.keys {
			if _, step, ok := strings.Cut(k, "@"); ok {
				k = step
			}
			steps[k] = true // thread events are stored under "global"
		}
		owners[s.principal] = true
		for t := range s.joined {
			threads[t] = true
		}
	}
	if len(owners) == 0 {
		return ports.PendingQuery{}, readMark{}, false
	}
	return ports.PendingQuery{Owners: sortedKeys(owners), Threads: sortedKeys(threads), StepNames: sortedKeys(steps),
			AfterSeq: l.cur.at, LeaseEnded: leaseEnded, Now: now, MaxDeliveries: maxDeliveries, Limit: limit},
		readMark{after: l.cur.at, gen: l.cur.gen, leaseEnded: leaseEnded}, true
}

// pick is a row and the session chosen to receive it.
type pick struct {
	n  ports.NotificationRecord
	to sid
}

// pickResult is what pick decided about one read.
type pickResult struct {
	mark     readMark
	picks    []pick
	full     bool // the read filled its page: more may follow
	blocked  bool // a matching session had no room for a row
	advanced bool // the cursor moved since the read began
}

// pick chooses, for each row read (oldest first), a session with room,
// round robin among the rows' eligible sessions, and moves the cursor
// (unless the read was of ended leases).
//
// The cursor only skips rows already examined, and never rows younger than
// commitSlack, because a transaction that took a lower seq may commit after
// one that took a higher seq. It moves past rows read and left to nobody
// here, and past rows this hub leased (remembered in pushed): without the
// latter it stayed where the subscription began, since a pushed row is
// never read again, and every poll stepped over everything acknowledged
// since. It stops before the first row a matching session had no room for.
func (l *ledger) pick(rows []ports.NotificationRecord, m readMark, limit int, now time.Time) pickResult {
	r := pickResult{mark: m, full: len(rows) == limit && limit > 0}
	cursor := m.after
	// top: the highest seq the cursor may reach. A full page examined the
	// log only up to its last row; a blocked row must be read again.
	top := int64(math.MaxInt64)
	if r.full {
		top = rows[len(rows)-1].Seq
	}
	rooms := map[sid]int{}
	for _, n := range rows {
		cands := l.candidates(n)
		if l.held(cands, n.ID, now) { // pushed under a lease this read predates
			if !r.blocked && !m.leaseEnded && l.settled(n, now) {
				cursor = n.Seq
			}
			continue
		}
		var chosen sid
		l.rr++
		for i := range cands {
			id := cands[(l.rr+i)%len(cands)]
			room, ok := rooms[id]
			if !ok {
				room = l.room(l.sessions[id], now)
			}
			if room > 0 {
				chosen, rooms[id] = id, room-1
				break
			}
			rooms[id] = room
		}
		switch {
		case chosen != 0:
			r.picks = append(r.picks, pick{n, chosen})
		case len(cands) > 0 && !r.blocked:
			r.blocked = true // a matching session is full: come back after an ack
			top = min(top, n.Seq-1)
		}
		if !r.blocked && !m.leaseEnded && l.settled(n, now) {
			cursor = n.Seq
		}
	}
	if m.leaseEnded {
		return r
	}
	if l.cur.gen != m.gen { // a rescan was asked for meanwhile: read from there
		r.advanced = true
		return r
	}
	// Rows pushed earlier are not read again: move past those old enough.
	for len(l.cur.pushed) > 0 && settledAt(l.cur.pushed[0].created, l.cur.pushed[0].at, now) && l.cur.pushed[0].seq <= top {
		cursor = max(cursor, l.cur.pushed[0].seq)
		l.cur.pushed = l.cur.pushed[1:]
	}
	if c := min(cursor, top); c != l.cur.at {
		l.setCursor(c)
	}
	if l.cur.at > m.after { // forget the first reads the cursor has passed
		for seq := range l.cur.seen {
			if seq <= l.cur.at {
				delete(l.cur.seen, seq)
			}
		}
	}
	r.advanced = l.cur.at > m.after
	return r
}

// held reports whether one of sessions has id pushed and its lease running.
func (l *ledger) held(sessions []sid, id string, now time.Time) bool {
	for _, s := range sessions {
		if f, ok := l.sessions[s].inFlight[id]; ok && f.until.After(now) {
			return true
		}
	}
	return false
}

// readAgain reports whether, with nothing picked, another read should
// follow at once: the page was full and the cursor moved on.
func (r pickResult) readAgain() bool { return r.full && !r.blocked && r.advanced }

// push is a leased row to push to a session, with the push's ack token.
type push struct {
	n     ports.NotificationRecord // Deliveries counts this push
	to    sid
	token string
}

// leased records the pushes of the picks whose lease the log granted
// (claimed: their ids). Picks whose session closed, or no longer wants the
// row, are returned to release. again: read again at once (a full page, or
// a row held back by room reserved for rows another replica leased first).
func (l *ledger) leased(r pickResult, claimed []string, now, until time.Time) (pushes []push, release []string, again bool) {
	got := make(map[string]bool, len(claimed))
	for _, id := range claimed {
		got[id] = true
	}
	for _, p := range r.picks {
		if !got[p.n.ID] {
			continue // another replica leased it first
		}
		s := l.sessions[p.to]
		if s == nil || !l.eligible(s, p.n) {
			release = append(release, p.n.ID)
			continue
		}
		p.n.Deliveries++
		if !r.mark.leaseEnded && len(l.cur.pushed) < maxPushed {
			l.cur.pushed = append(l.cur.pushed, seenRow{seq: p.n.Seq, created: p.n.CreatedAt, at: l.firstSeen(p.n, now)})
		}
		if _, again := s.inFlight[p.n.ID]; !again {
			l.pending++
		}
		s.inFlight[p.n.ID] = flight{until: until, keys: routingKeys(p.n), typ: p.n.NotificationType}
		pushes = append(pushes, push{n: p.n, to: p.to, token: ackToken(p.n)})
	}
	again = r.full || (len(claimed) < len(r.picks) && r.blocked)
	return pushes, release, again
}

// refused forgets pushes a socket could not take (the Hub releases them):
// the cursor goes back to where their read began.
func (l *ledger) refused(ps []push, m readMark) {
	if len(ps) == 0 {
		return
	}
	gone := map[int64]bool{}
	for _, p := range ps {
		if s := l.sessions[p.to]; s != nil {
			if _, ok := s.inFlight[p.n.ID]; ok {
				delete(s.inFlight, p.n.ID)
				l.pending--
			}
		}
		gone[p.n.Seq] = true
	}
	l.cur.pushed = slices.DeleteFunc(l.cur.pushed, func(r seenRow) bool { return gone[r.seq] })
	if !m.leaseEnded && m.after < l.cur.at {
		l.setCursor(m.after)
	}
}

// leaseFailed: the picks of a read could not be leased (the database
// blinked); they may lie behind the cursor now (an old row is passed at
// once), so the next read starts where this one did.
func (l *ledger) leaseFailed(m readMark) {
	if !m.leaseEnded && m.after < l.cur.at {
		l.setCursor(m.after)
	}
}

// firstSeen is when this hub first read row n (now, the first time).
func (l *ledger) firstSeen(n ports.NotificationRecord, now time.Time) time.Time {
	if at, ok := l.cur.seen[n.Seq]; ok {
		return at
	}
	if l.cur.seen == nil {
		l.cur.seen = map[int64]time.Time{}
	}
	if len(l.cur.seen) < maxPushed { // forgetting only keeps the cursor back
		l.cur.seen[n.Seq] = now
	}
	return now
}

// settled reports whether no row with a lower seq than n can still commit
// (settledAt).
func (l *ledger) settled(n ports.NotificationRecord, now time.Time) bool {
	return settledAt(n.CreatedAt, l.firstSeen(n, now), now)
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

// resync: broadcasts may have been lost (claims made meanwhile unknown):
// rows raised until now are held for any subscriber, and the log is read
// from its beginning.
func (l *ledger) resync(now time.Time) {
	l.knownSince = now.Truncate(time.Microsecond)
	l.rescan()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
