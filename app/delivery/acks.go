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

// queueAck hands req to the flusher, or settles it at once when the flusher
// is not running (before Run, after shutdown) or is too far behind.
func (h *Hub) queueAck(req ackReq) {
	h.ackMu.Lock()
	if h.ackOpen && len(h.ackQueue) < maxQueuedAcks {
		h.ackQueue = append(h.ackQueue, req)
		h.ackMu.Unlock()
		select {
		case h.ackSignal <- struct{}{}:
		default: // a flush is already due; it takes this one too
		}
		return
	}
	h.ackMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.settle(ctx, []ackReq{req})
}

// acker flushes queued acknowledgements until ctx ends, then flushes what is
// left and settles later ones itself (queueAck sees ackOpen false).
func (h *Hub) acker(ctx context.Context) {
	h.ackMu.Lock()
	h.ackOpen = true
	h.ackMu.Unlock()
	for {
		select {
		case <-h.ackSignal:
			h.flushAcks(ctx)
		case <-ctx.Done():
			h.ackMu.Lock()
			h.ackOpen = false
			h.ackMu.Unlock()
			last, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			h.flushAcks(last)
			cancel()
			return
		}
	}
}

func (h *Hub) flushAcks(ctx context.Context) {
	for {
		h.ackMu.Lock()
		batch := h.ackQueue
		if len(batch) > ackChunk {
			batch, h.ackQueue = batch[:ackChunk:ackChunk], batch[ackChunk:]
		} else {
			h.ackQueue = nil
		}
		h.ackMu.Unlock()
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
