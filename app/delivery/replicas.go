package delivery

import (
	"context"
	"encoding/json"
	"time"

	"github.com/threadengine/engine/ports"
)

// Replicas tell each other what changed by broadcast (ports.Broadcast on
// ports.ChannelNotifications): a note names the threads that changed (their
// waits re-check, their followers get copies), whether notification rows
// were committed (subscribers' replicas read the log), and the claims
// made and released (claims.go). One note is sent per burst: commits that
// land while one is being sent share the next, so a burst of group commits
// costs one NOTIFY per round trip, not one per step. A lost note is covered
// by the poll every PollEvery, the waits' safety re-check, and the Resync a
// receiver gets after a gap.

// note is one broadcast, JSON-encoded (at most maxNoteBytes).
type note struct {
	From     string      `json:"f"`
	At       time.Time   `json:"at"`
	Rows     bool        `json:"n,omitempty"` // notification rows were committed (or released)
	All      bool        `json:"a,omitempty"` // every thread may have changed (too many to name)
	Threads  []string    `json:"t,omitempty"`
	Claims   []claimNote `json:"c,omitempty"`
	Releases []claimNote `json:"r,omitempty"`
}

// claimNote is one claim or release: principal and routing key.
type claimNote [2]string

// outbox is what the notifier sends next. Guarded by Hub.mu.
type outbox struct {
	rows     bool
	all      bool
	threads  map[string]bool
	claims   []claimNote
	releases []claimNote
}

// maxNoteBytes keeps a note under the broadcast's 4000-byte payload;
// maxNotes bounds the notes of one burst: beyond them it says "all".
const (
	maxNoteBytes = 3800
	maxNotes     = 16
)

func (o *outbox) add(threads []string, rows bool) {
	o.rows = o.rows || rows
	if o.all {
		return
	}
	if o.threads == nil {
		o.threads = map[string]bool{}
	}
	for _, t := range threads {
		o.threads[t] = true
	}
	if len(o.threads) > maxNotes*maxNoteBytes/8 { // far more than fit (ids are longer): say "all"
		o.all, o.threads = true, nil
	}
}

func (o *outbox) empty() bool {
	return !o.rows && !o.all && len(o.threads) == 0 && len(o.claims) == 0 && len(o.releases) == 0
}

// encode splits the outbox into notes of at most maxNoteBytes.
func (o *outbox) encode(from string, at time.Time) []string {
	threads := sortedKeys(o.threads)
	total := 0
	for _, t := range threads {
		total += len(t) + 3
	}
	all := o.all || total > maxNotes*maxNoteBytes // too many to name: every thread may have changed
	if all {
		threads = nil
	}
	base := note{From: from, At: at, Rows: o.rows, All: all}
	var out []string
	cur := base
	size := jsonLen(cur) + len(`,"t":[],"c":[],"r":[]`)
	flush := func() {
		b, _ := json.Marshal(cur)
		out = append(out, string(b))
		cur = note{From: from, At: at}
		size = jsonLen(cur) + len(`,"t":[],"c":[],"r":[]`)
	}
	fits := func(item any) {
		n := jsonLen(item) + 1
		if size+n > maxNoteBytes {
			flush()
		}
		size += n
	}
	for _, t := range threads {
		fits(t)
		cur.Threads = append(cur.Threads, t)
	}
	for _, c := range o.claims {
		fits(c)
		cur.Claims = append(cur.Claims, c)
	}
	for _, c := range o.releases {
		fits(c)
		cur.Releases = append(cur.Releases, c)
	}
	flush()
	return out
}

func jsonLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// notifier sends one burst at a time (see above).
func (h *Hub) notifier(ctx context.Context, bus ports.Broadcast) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.notify:
		}
		h.mu.Lock()
		box := h.out
		h.out = outbox{}
		h.mu.Unlock()
		if box.empty() {
			continue
		}
		for _, p := range box.encode(h.name, h.clock.Now()) {
			if err := bus.Publish(ctx, ports.ChannelNotifications, p); err != nil && ctx.Err() == nil {
				h.log.Warn("notifications: change not broadcast; other replicas poll within a second", "err", err)
			}
		}
	}
}

// heard acts on a broadcast (see above). An empty payload is a wake-up from
// a replica older than notes: anything may have changed.
func (h *Hub) heard(payload string) {
	now := h.clock.Now()
	switch payload {
	case ports.Resync:
		h.watch.changedAll()
		h.mu.Lock()
		h.l.resync(now)
		h.mu.Unlock()
		h.Wake()
		return
	case "":
		h.watch.changedAll()
		h.Wake()
		return
	}
	var n note
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		h.log.Warn("notifications: unreadable broadcast", "err", err)
		return
	}
	if n.From == h.name {
		return // acted on when it happened
	}
	if n.All {
		h.watch.changedAll()
	} else {
		h.watch.changed(n.Threads)
	}
	at := now
	if !n.At.IsZero() && n.At.Before(at) {
		at = n.At
	}
	h.mu.Lock()
	rescan := false
	for _, c := range n.Claims {
		rescan = h.l.remoteClaim(c[0], c[1], at) || rescan
	}
	for _, c := range n.Releases {
		h.l.remoteRelease(c[0], c[1], now)
	}
	due := h.l.changedElsewhere(n.Threads) || rescan
	h.mu.Unlock()
	if n.Rows || n.All || due {
		h.Wake()
	}
}
