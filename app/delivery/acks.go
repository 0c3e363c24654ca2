package delivery

import (
	"context"
	"time"
)

// Acknowledgements are settled in batches: one UPDATE per burst instead of
// one per ack in the socket's read loop. At the load harness's full rate
// that per-ack statement took 30 % of a subscriber replica's CPU and held
// each socket's next ack behind a round trip to the database, so the hub
// fell seconds behind (docs/contributors/performance.md). The session's room
// is freed in memory at once; the row is settled by the next flush, and if
// that never happens (a crash) the push is simply redelivered when its
// lease ends — delivery is at least once either way.

// ackReq is one acknowledgement waiting for the next flush.
type ackReq struct {
	id   string
	done chan bool // receives whether the row was still unsettled; nil: nobody waits
}

// maxQueuedAcks bounds the acknowledgements waiting for a flush; beyond it
// the caller settles its own (back-pressure on a client that acks faster
// than the database takes them, e.g. with made-up tokens).
const maxQueuedAcks = 10_000

// ackChunk bounds the ids of one statement.
const ackChunk = 500

// expireEvery is how often the settler expires what can no longer be
// delivered and forgets claims older than the retention, and how often the
// pruner looks for settled rows to delete.
const expireEvery = 30 * time.Second

// Settled rows are deleted in batches of pruneBatch, one statement each
// (short write transactions beside ingestion), back to back while full
// batches come back; then the pruner waits for its next round.
const pruneBatch = 1000

// queueAck hands req to the settler, or settles it at once when the settler
// is not running (before Run, after shutdown) or is too far behind.
func (h *Hub) queueAck(req ackReq) {
	h.mu.Lock()
	if h.ackOpen && len(h.acks) < maxQueuedAcks {
		h.acks = append(h.acks, req)
		h.mu.Unlock()
		h.signal(h.ackSignal)
		return
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.settle(ctx, []ackReq{req})
}

// settler writes queued acknowledgements and, every expireEvery, expires
// what can no longer be delivered, until ctx ends; then it writes what is
// left, and later acknowledgements are settled by their callers (queueAck
// sees ackOpen false).
func (h *Hub) settler(ctx context.Context) {
	h.mu.Lock()
	h.ackOpen = true
	h.mu.Unlock()
	tick, stop := newTicker(h.clock, expireEvery)
	defer stop()
	h.expire(ctx)
	for {
		select {
		case <-h.ackSignal:
			h.flushAcks(ctx)
		case <-tick:
			h.expire(ctx)
		case <-ctx.Done():
			h.mu.Lock()
			h.ackOpen = false
			h.mu.Unlock()
			last, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			h.flushAcks(last)
			cancel()
			return
		}
	}
}

func (h *Hub) flushAcks(ctx context.Context) {
	for {
		h.mu.Lock()
		batch := h.acks
		if len(batch) > ackChunk {
			batch, h.acks = batch[:ackChunk:ackChunk], batch[ackChunk:]
		} else {
			h.acks = nil
		}
		h.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		h.settle(ctx, batch)
	}
}

// settle marks the batch's rows acknowledged and answers its waiters. On an
// error the rows stay leased and are pushed again when the lease ends.
func (h *Hub) settle(ctx context.Context, batch []ackReq) {
	ids := make([]string, 0, len(batch))
	seen := make(map[string]bool, len(batch))
	for _, r := range batch {
		if !seen[r.id] {
			seen[r.id] = true
			ids = append(ids, r.id)
		}
	}
	settled, err := h.logStore.AckNotifications(ctx, ids, h.clock.Now())
	if err != nil {
		h.log.Warn("notifications: ack; the pushes are redelivered when their lease ends", "acks", len(ids), "err", err)
	}
	fresh := make(map[string]bool, len(settled))
	for _, id := range settled {
		fresh[id] = true
		h.metrics.NotificationDelivered()
	}
	for _, r := range batch {
		if r.done != nil {
			r.done <- fresh[r.id]
		}
		fresh[r.id] = false // a second ack of the same id in the batch settled nothing
	}
}

// expire settles what can no longer be delivered, counts it, and forgets
// the claims nobody touched within the retention and old copied ids.
func (h *Hub) expire(ctx context.Context) {
	cfg, now := h.config(), h.clock.Now()
	h.mu.Lock()
	h.l.forgetClaims(now.Add(-cfg.Retention))
	h.l.forgetCopies(now)
	h.mu.Unlock()
	if h.logStore == nil {
		return
	}
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

// pruner deletes settled rows every expireEvery until ctx ends. It is its
// own goroutine so that working off a backlog (after an upgrade: every row
// ever settled) never holds up the settler's acknowledgements.
func (h *Hub) pruner(ctx context.Context) {
	tick, stop := newTicker(h.clock, expireEvery)
	defer stop()
	for {
		h.prune(ctx)
		select {
		case <-tick:
		case <-ctx.Done():
			return
		}
	}
}

// prune deletes the rows settled before notifications.settled_retention:
// once settled a row is only the thread's notification history. Two rows
// per step kept forever were a third of the database (issue 28).
func (h *Hub) prune(ctx context.Context) {
	cutoff := h.clock.Now().Add(-h.config().SettledRetention)
	total := 0
	for ctx.Err() == nil {
		n, err := h.logStore.PruneNotifications(ctx, cutoff, pruneBatch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("notifications: prune", "err", err)
			}
			break
		}
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		h.log.Debug("notifications pruned", "rows", total)
	}
}

// ExpireNow runs the expiry at once (tests).
func (h *Hub) ExpireNow(ctx context.Context) { h.expire(ctx) }
