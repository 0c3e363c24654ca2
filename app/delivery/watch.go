package delivery

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadengine/engine/ports"
)

// threadWatch wakes the waits of a thread when it changes: a step, its end,
// a grant made, given back or cancelled — committed here (the use cases
// tell the Hub) or on another replica (its broadcast names the thread). A
// wait re-reads the database only then (and at a slow safety interval),
// never because something else changed.
//
// It holds one entry per thread somebody waits on: a channel closed (and
// replaced) at the thread's next change, and how many watchers share it.
type threadWatch struct {
	mu      sync.Mutex
	threads map[string]*watched
	slots   chan struct{} // rounds reading at once (RoundSlot)

	metrics        ports.DeliveryMetrics // set with the hub's, before use
	pending, reads atomic.Int64
	recheck        atomic.Int64 // HubConfig.WaitRecheck, in nanoseconds (0: the default)
}

type watched struct {
	changed  chan struct{}
	watchers int
}

// ThreadWatcher follows one thread's changes for one wait.
type ThreadWatcher struct {
	w      *threadWatch
	thread string
	once   sync.Once
}

// watch starts following thread.
func (w *threadWatch) watch(thread string) *ThreadWatcher {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.threads == nil {
		w.threads = map[string]*watched{}
	}
	e := w.threads[thread]
	if e == nil {
		e = &watched{changed: make(chan struct{})}
		w.threads[thread] = e
	}
	e.watchers++
	w.pending.Add(1)
	if w.metrics != nil {
		w.metrics.WaitsPending(1)
	}
	return &ThreadWatcher{w: w, thread: thread}
}

// Changed returns a channel closed at the thread's next change after this
// call (take it before reading what the wait waits for).
func (t *ThreadWatcher) Changed() <-chan struct{} {
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	if e := t.w.threads[t.thread]; e != nil {
		return e.changed
	}
	return nil // stopped
}

// RecheckEvery is how often a pending wait re-reads without a wake-up
// (HubConfig.WaitRecheck).
func (t *ThreadWatcher) RecheckEvery() time.Duration {
	if d := time.Duration(t.w.recheck.Load()); d > 0 {
		return d
	}
	return defaultWaitRecheck
}

// Stop ends the following; the thread's entry goes with its last watcher.
func (t *ThreadWatcher) Stop() {
	t.once.Do(func() {
		t.w.pending.Add(-1)
		if t.w.metrics != nil {
			t.w.metrics.WaitsPending(-1)
		}
		t.w.mu.Lock()
		defer t.w.mu.Unlock()
		if e := t.w.threads[t.thread]; e != nil {
			if e.watchers--; e.watchers == 0 {
				delete(t.w.threads, t.thread)
			}
		}
	})
}

// maxRounds bounds the wait rounds that read the database at once: each
// new wait reads once, and a burst of them (a client opening thousands)
// otherwise ran all those reads together, ahead of every writer.
func maxRounds() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// slot takes a place among the rounds reading at once; its release counts
// the round's read.
func (w *threadWatch) slot(ctx context.Context) (func(), error) {
	w.mu.Lock()
	if w.slots == nil {
		w.slots = make(chan struct{}, maxRounds())
	}
	slots := w.slots
	w.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() {
			<-slots
			w.reads.Add(1)
			if w.metrics != nil {
				w.metrics.WaitRead()
			}
		}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// changed wakes the watchers of threads.
func (w *threadWatch) changed(threads []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range threads {
		if e := w.threads[id]; e != nil {
			close(e.changed)
			e.changed = make(chan struct{})
		}
	}
}

// changedAll wakes every watcher (broadcasts may have been lost).
func (w *threadWatch) changedAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.threads {
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

// WaitCounts are the waits pending in this process and the reads their
// rounds made since start (one when a wait starts, one at each change of
// its thread or safety interval).
type WaitCounts struct{ Pending, Reads int64 }

// defaultWaitRecheck: a pending wait also re-reads what it waits for this
// often without a wake-up: a change nobody announced (a party's access
// expiring, a thread deleted), or an announcement lost with a replica.
// Cheap: one read per wait per interval, whatever else is written.
// HubConfig.WaitRecheck (notifications.wait_recheck) replaces it.
const defaultWaitRecheck = 30 * time.Second
