package ops

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// fakeAlerts is an in-memory ports.AlertSweepStore: mu stands for the
// thread row lock, the flags map for the thread_alerts rows (the latest
// episode flagged).
type fakeAlerts struct {
	mu      sync.Mutex
	threads map[string]domain.Thread
	notes   []ports.NotificationRecord
	fmu     sync.Mutex
	flags   map[string]time.Time // thread + "\x00" + condition → episode
	// racer, when set, runs before each RecordThreadAlert: another
	// replica's sweep getting there first.
	racer func(threadID, condition string)
	vals  []ports.ValidationRecord
	after []time.Time // updatedAfter of each SilentThreads call
}

var _ ports.AlertSweepStore = (*fakeAlerts)(nil)

func newFakeAlerts() *fakeAlerts {
	return &fakeAlerts{threads: map[string]domain.Thread{}, flags: map[string]time.Time{}}
}

func (f *fakeAlerts) OverdueThreads(_ context.Context, contract string, version int, startedAfter, startedBefore time.Time, limit int) ([]string, error) {
	return f.find(limit, domain.AlertOverdue, func(t domain.Thread) time.Time { return time.Time{} }, func(t domain.Thread) bool {
		return t.ContractName == contract && t.ContractVersion == version && t.CreatedAt.Before(startedBefore) && !t.CreatedAt.Before(startedAfter)
	}), nil
}

func (f *fakeAlerts) SilentThreads(_ context.Context, updatedAfter, updatedBefore time.Time, limit int) ([]string, error) {
	f.fmu.Lock()
	f.after = append(f.after, updatedAfter)
	f.fmu.Unlock()
	return f.find(limit, domain.AlertSilent, func(t domain.Thread) time.Time { return t.UpdatedAt }, func(t domain.Thread) bool {
		return t.UpdatedAt.Before(updatedBefore) && !t.UpdatedAt.Before(updatedAfter)
	}), nil
}

// find skips threads flagged for episode (of the thread) or a later one.
func (f *fakeAlerts) find(limit int, condition string, episode func(domain.Thread) time.Time, match func(domain.Thread) bool) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fmu.Lock()
	defer f.fmu.Unlock()
	var ids []string
	for id, t := range f.threads {
		flagged, ok := f.flags[id+"\x00"+condition]
		if t.Status == domain.ThreadActive && match(t) && (!ok || flagged.Before(episode(t))) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}

func (f *fakeAlerts) RecordThreadAlert(_ context.Context, threadID, condition string, fn func(t *domain.Thread) (ports.ThreadAlert, bool)) (bool, error) {
	if f.racer != nil {
		f.racer(threadID, condition)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[threadID]
	if !ok {
		return false, domain.NotFound("thread")
	}
	t.Parties = append([]domain.Party(nil), t.Parties...)
	a, ok := fn(&t)
	if !ok {
		return false, nil
	}
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if flagged, ok := f.flags[threadID+"\x00"+condition]; ok && !flagged.Before(a.Episode) {
		return false, nil
	}
	f.flags[threadID+"\x00"+condition] = a.Episode
	f.threads[threadID] = t
	f.vals = append(f.vals, a.Validation)
	f.notes = append(f.notes, a.Notifications...)
	return true, nil
}

// The sweep flags threads past max_duration and silent ones once each,
// with a validation result and a notification that maps to the webhook
// events, leaves other threads alone, and folds the issue into health.
func TestAlertSweepOnFakes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := portstest.NewClock(t0)
	store := newFakeAlerts()
	put := func(id, contract string, created, updated time.Time, st domain.ThreadStatus) {
		store.threads[id] = domain.Thread{ID: id, ContractName: contract, ContractVersion: 1, Status: st, OwnerID: "o",
			CreatedAt: created, UpdatedAt: updated}
	}
	put("old", "flow", t0.Add(-3*time.Hour), t0.Add(-3*time.Hour), domain.ThreadActive)        // overdue and silent
	put("busy", "flow", t0.Add(-3*time.Hour), t0.Add(-time.Minute), domain.ThreadActive)       // overdue only
	put("young", "flow", t0.Add(-time.Hour), t0.Add(-time.Hour), domain.ThreadActive)          // silent only
	put("done", "flow", t0.Add(-9*time.Hour), t0.Add(-9*time.Hour), domain.ThreadCompleted)    // ended: nothing
	put("free", "", t0.Add(-9*time.Hour), t0.Add(-5*time.Minute), domain.ThreadActive)         // no contract, recent
	put("other", "nolimit", t0.Add(-9*time.Hour), t0.Add(-5*time.Minute), domain.ThreadActive) // no max_duration
	contracts := portstest.Contracts{
		"flow":    {Name: "flow", Version: 1, MaxDuration: 2 * time.Hour},
		"nolimit": {Name: "nolimit", Version: 1},
	}
	var recorded []ports.NotificationRecord
	nudged := 0
	sweep := NewAlertSweep(AlertSweepDeps{Store: store, Contracts: contracts, Clock: clock, SilentAfter: 30 * time.Minute,
		Batch: 1, Recorded: func(ns []ports.NotificationRecord) { recorded = append(recorded, ns...) }, Nudge: func() { nudged++ }})
	res, err := sweep.Sweep(context.Background())
	if err != nil || res != (AlertSweepResult{Overdue: 2, Silent: 2}) {
		t.Fatalf("sweep %+v %v", res, err)
	}
	if res, err := sweep.Sweep(context.Background()); err != nil || res != (AlertSweepResult{}) {
		t.Fatalf("second sweep %+v %v", res, err)
	}
	if len(recorded) != 4 || nudged == 0 || len(store.vals) != 4 {
		t.Fatalf("recorded %d notifications, %d validations, nudged %d", len(recorded), len(store.vals), nudged)
	}
	events := map[string]domain.WebhookEvent{}
	for _, n := range recorded {
		ev, _, ok := domain.AlertOf(n.NotificationType, n.ViolationType, n.Severity)
		if !ok || n.StepName != "global" {
			t.Fatalf("notification %+v", n)
		}
		events[n.ThreadID+" "+string(ev)] = ev
	}
	for _, want := range []string{"old thread.overdue", "old thread.silent", "busy thread.overdue", "young thread.silent"} {
		if _, ok := events[want]; !ok {
			t.Errorf("no %s alert: %v", want, events)
		}
	}
	if h := store.threads["busy"].Health(); h.Major != 1 || h.FirstIssue == nil || h.FirstIssue.Type != domain.IssueMaxDurationExceeded ||
		h.Status(string(domain.ThreadActive)) != domain.HealthViolated {
		t.Fatalf("busy health %+v", h)
	}
	if h := store.threads["young"].Health(); h.Warnings != 1 || h.Major != 0 || !store.threads["young"].UpdatedAt.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("young %+v", store.threads["young"])
	}

	// Later passes read only what the cutoff passed since the last one
	// (less the overlap): 30 minutes on, the threads updated 1 to 10
	// minutes before t0 (busy, free, other, later) have gone silent.
	store.threads["later"] = domain.Thread{ID: "later", Status: domain.ThreadActive, OwnerID: "o",
		CreatedAt: t0.Add(-10 * time.Minute), UpdatedAt: t0.Add(-10 * time.Minute)}
	store.after = nil
	clock.Advance(30 * time.Minute)
	if res, err := sweep.Sweep(context.Background()); err != nil || res != (AlertSweepResult{Silent: 4}) {
		t.Fatalf("third sweep %+v %v", res, err)
	}
	if len(store.after) == 0 || !store.after[0].Equal(t0.Add(-30*time.Minute-sweepOverlap)) {
		t.Fatalf("silent window starts at %v; want the previous cutoff less the overlap", store.after)
	}
}

// Silence is flagged once per silence: a thread that wakes up and falls
// silent again is flagged again, and only then.
func TestAlertSweepFlagsEachSilence(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := portstest.NewClock(t0)
	store := newFakeAlerts()
	store.threads["t"] = domain.Thread{ID: "t", Status: domain.ThreadActive, OwnerID: "o", CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-time.Hour)}
	sweep := NewAlertSweep(AlertSweepDeps{Store: store, Clock: clock, SilentAfter: 30 * time.Minute})
	want := func(what string, silent int) {
		t.Helper()
		if res, err := sweep.Sweep(context.Background()); err != nil || res.Silent != silent {
			t.Fatalf("%s: %+v %v, want %d silent", what, res, err, silent)
		}
	}
	want("first silence", 1)
	want("same silence", 0)
	clock.Advance(time.Minute)
	th := store.threads["t"]
	th.UpdatedAt = clock.Now() // a step
	store.threads["t"] = th
	want("awake", 0)
	clock.Advance(31 * time.Minute)
	want("second silence", 1)
	want("second silence again", 0)
}

// A batch whose threads another replica flagged first does not end the
// pass: the threads after it are still flagged, before the check's window
// moves past them for good.
func TestAlertSweepContinuesPastSkippedBatch(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := portstest.NewClock(t0)
	store := newFakeAlerts()
	for _, id := range []string{"a", "b", "c"} {
		store.threads[id] = domain.Thread{ID: id, Status: domain.ThreadActive, OwnerID: "o", CreatedAt: t0.Add(-5 * time.Hour), UpdatedAt: t0.Add(-5 * time.Hour)}
	}
	store.racer = func(id, condition string) {
		if id == "a" {
			store.fmu.Lock()
			store.flags[id+"\x00"+condition] = store.threads[id].UpdatedAt
			store.fmu.Unlock()
		}
	}
	sweep := NewAlertSweep(AlertSweepDeps{Store: store, Clock: clock, SilentAfter: 30 * time.Minute, Batch: 1})
	if res, err := sweep.Sweep(context.Background()); err != nil || res.Silent != 2 {
		t.Fatalf("sweep %+v %v, want b and c flagged", res, err)
	}
}
