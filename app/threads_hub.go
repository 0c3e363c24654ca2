package app

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/threadengine/engine/ports"
)

// Subscriber is one live connection that can receive notifications. Deliver
// must not block: it returns false when the connection cannot take the push
// now (closed or its send buffer is full), and the hub retries later.
type Subscriber interface {
	Deliver(ackToken string, n ports.NotificationRecord) bool
}

// Hub routes persisted notifications to live subscribers, at least once: each
// push carries an ack token; a push not acknowledged within RedeliverAfter is
// sent again (to any matching session), at most MaxDeliveries times. At most
// maxInFlight unacknowledged pushes are outstanding per session; the rest
// wait in that session's queue.
type Hub struct {
	mu             sync.Mutex
	sessions       map[*HubSession]struct{}
	deliveries     map[string]*delivery // by ack token
	redeliverAfter time.Duration
	maxDeliveries  int
	rr             int
	log            *slog.Logger
	// A notification for a principal whose subscribed session went away less
	// than holdFor ago waits here (at most maxHeld) for that principal to
	// subscribe again, so an SDK that reconnects does not miss what happened
	// in between. Kept in memory only.
	held    []*delivery
	holdFor time.Duration
	leftAt  map[string]time.Time // principal → when its last subscribed session closed
	now     func() time.Time
}

// maxHeld bounds the notifications held for reconnecting principals.
const maxHeld = 10_000

// HubSession is a subscriber's registration.
type HubSession struct {
	hub         *Hub
	sub         Subscriber
	principalID string
	maxInFlight int
	keys        map[string]map[string]bool // routing key (step, contract@step, global) → event types (empty: all)
	threads     map[string]bool            // threads started or joined on this session
	inFlight    map[string]*delivery
	queue       []*delivery
	closed      bool
}

type delivery struct {
	token      string
	n          ports.NotificationRecord
	deliveries int
	session    *HubSession
	timer      *time.Timer
	heldAt     time.Time
}

// NewHub returns a hub with the protocol's defaults (30 s, 3 deliveries).
func NewHub(log *slog.Logger) *Hub {
	if log == nil {
		log = slog.Default()
	}
	return &Hub{sessions: map[*HubSession]struct{}{}, deliveries: map[string]*delivery{},
		redeliverAfter: 30 * time.Second, maxDeliveries: 3, log: log,
		holdFor: time.Minute, leftAt: map[string]time.Time{}, now: time.Now}
}

// SetHoldFor changes how long notifications are held for a principal whose
// subscribed session closed (tests shorten it; 0 disables holding).
func (h *Hub) SetHoldFor(d time.Duration) {
	h.mu.Lock()
	h.holdFor = d
	h.mu.Unlock()
}

// SetRedeliverAfter changes the acknowledgement timeout (tests shorten it).
func (h *Hub) SetRedeliverAfter(d time.Duration) {
	h.mu.Lock()
	h.redeliverAfter = d
	h.mu.Unlock()
}

// Register adds a live session for principalID.
func (h *Hub) Register(sub Subscriber, principalID string, maxInFlight int) *HubSession {
	if maxInFlight < 1 || maxInFlight > 100 {
		maxInFlight = 10
	}
	s := &HubSession{hub: h, sub: sub, principalID: principalID, maxInFlight: maxInFlight,
		keys: map[string]map[string]bool{}, threads: map[string]bool{}, inFlight: map[string]*delivery{}}
	h.mu.Lock()
	h.sessions[s] = struct{}{}
	h.mu.Unlock()
	return s
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
	defer s.hub.mu.Unlock()
	s.keys[key] = set
	s.hub.release()
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
	defer s.hub.mu.Unlock()
	s.threads[id] = true
	s.hub.release()
}

// Ack acknowledges a push by its token; unknown tokens are ignored (the push
// may have been acknowledged already or expired).
func (s *HubSession) Ack(token string) bool {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.deliveries[token]
	if !ok {
		return false
	}
	delete(h.deliveries, token)
	if d.timer != nil {
		d.timer.Stop()
	}
	if d.session != nil {
		delete(d.session.inFlight, token)
		h.pump(d.session)
	}
	return true
}

// Close unregisters the session; its unacknowledged and queued pushes go to
// other matching sessions.
func (s *HubSession) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	delete(h.sessions, s)
	if len(s.keys) > 0 {
		h.leftAt[s.principalID] = h.now()
	}
	pending := append([]*delivery{}, s.queue...)
	for _, d := range s.inFlight {
		if d.timer != nil {
			d.timer.Stop()
		}
		pending = append(pending, d)
	}
	s.queue, s.inFlight = nil, nil
	for _, d := range pending {
		delete(h.deliveries, d.token)
		d.session = nil
		h.route(d)
	}
}

// Publish routes committed notifications to live sessions.
func (h *Hub) Publish(ns []ports.NotificationRecord) {
	if len(ns) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range ns {
		h.route(&delivery{n: n})
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

// candidates are the live sessions a delivery may go to. Caller holds h.mu.
func (h *Hub) candidates(d *delivery) []*HubSession {
	keys := routingKeys(d.n)
	var cands []*HubSession
	for s := range h.sessions {
		if s.principalID != d.n.OwnerID && !s.threads[d.n.ThreadID] {
			continue
		}
		for _, k := range keys {
			if set, ok := s.keys[k]; ok && wants(set, d.n.NotificationType) {
				cands = append(cands, s)
				break
			}
		}
	}
	return cands
}

// route picks one matching session (round robin, preferring one with room)
// and queues the delivery there; with none, it holds the delivery if its
// owner may be reconnecting. Caller holds h.mu.
func (h *Hub) route(d *delivery) {
	cands := h.candidates(d)
	if len(cands) == 0 {
		h.hold(d)
		return
	}
	h.rr++
	var pick *HubSession
	for i := range cands {
		s := cands[(h.rr+i)%len(cands)]
		if len(s.inFlight) < s.maxInFlight {
			pick = s
			break
		}
	}
	if pick == nil {
		pick = cands[h.rr%len(cands)]
		for _, s := range cands {
			if len(s.queue) < len(pick.queue) {
				pick = s
			}
		}
	}
	d.session = pick
	pick.queue = append(pick.queue, d)
	h.pump(pick)
}

// hold keeps a delivery nobody can take now when its owner's subscribed
// session closed recently; otherwise it stays only in the database.
// Caller holds h.mu.
func (h *Hub) hold(d *delivery) {
	left, ok := h.leftAt[d.n.OwnerID]
	now := h.now()
	if !ok || now.Sub(left) > h.holdFor {
		return
	}
	if len(h.held) >= maxHeld {
		h.log.Warn("notification not held: too many waiting for reconnects", "notification_id", d.n.ID)
		return
	}
	d.heldAt = now
	h.held = append(h.held, d)
}

// release routes held deliveries that a session can now take and forgets
// expired ones. Caller holds h.mu.
func (h *Hub) release() {
	if len(h.held) == 0 {
		return
	}
	now := h.now()
	keep := h.held[:0]
	var ready []*delivery
	for _, d := range h.held {
		switch {
		case now.Sub(d.heldAt) > h.holdFor:
		case len(h.candidates(d)) > 0:
			ready = append(ready, d)
		default:
			keep = append(keep, d)
		}
	}
	clear(h.held[len(keep):])
	h.held = keep
	for p, t := range h.leftAt {
		if now.Sub(t) > h.holdFor {
			delete(h.leftAt, p)
		}
	}
	for _, d := range ready {
		h.route(d)
	}
}

// pump sends queued deliveries while the session has room. Caller holds h.mu.
func (h *Hub) pump(s *HubSession) {
	for !s.closed && len(s.queue) > 0 && len(s.inFlight) < s.maxInFlight {
		d := s.queue[0]
		d.token = newAckToken()
		if !s.sub.Deliver(d.token, d.n) {
			// The connection is saturated; try again when the timer fires.
			d.token = ""
			h.armRetry(d)
			return
		}
		s.queue = s.queue[1:]
		d.deliveries++
		s.inFlight[d.token] = d
		h.deliveries[d.token] = d
		h.armTimeout(d)
	}
}

func (h *Hub) armRetry(d *delivery) {
	if d.timer != nil {
		return
	}
	d.timer = time.AfterFunc(100*time.Millisecond, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		d.timer = nil
		if s := d.session; s != nil && !s.closed {
			h.pump(s)
		}
	})
}

func (h *Hub) armTimeout(d *delivery) {
	token := d.token
	d.timer = time.AfterFunc(h.redeliverAfter, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.deliveries[token] != d {
			return // acknowledged meanwhile
		}
		delete(h.deliveries, token)
		d.timer = nil
		if s := d.session; s != nil {
			delete(s.inFlight, token)
			defer h.pump(s)
		}
		d.session = nil
		if d.deliveries >= h.maxDeliveries {
			h.log.Warn("notification dropped after max deliveries", "notification_id", d.n.ID,
				"thread_id", d.n.ThreadID, "deliveries", d.deliveries)
			return
		}
		h.route(d)
	})
}

func newAckToken() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
