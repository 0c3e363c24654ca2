package ingest

import (
	"context"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// fakeTraces is an in-memory store of trace threads: one mutex stands for
// the thread row lock. It answers the ports the two handlers use, and plays
// the thread use cases IngestTrace runs per span (start, seen, record).
type fakeTraces struct {
	mu      sync.Mutex
	clock   ports.Clock
	threads map[string]domain.Thread
	byTrace map[string]string // trace id → thread id
	acts    map[string][]ports.Activity
}

func newFakeTraces(clock ports.Clock) *fakeTraces {
	return &fakeTraces{clock: clock, threads: map[string]domain.Thread{}, byTrace: map[string]string{}, acts: map[string][]ports.Activity{}}
}

func (f *fakeTraces) HandleTrace(_ context.Context, traceID, _ string, in threads.StartThreadInput) (domain.Thread, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.byTrace[traceID]; ok {
		return f.threads[id], false, nil
	}
	th, err := domain.NewThread("t-"+traceID, domain.Actor{PrincipalKind: string(domain.PrincipalServiceAccount), PrincipalID: "sa", Role: in.Role}, nil, now(f.clock))
	if err != nil {
		return domain.Thread{}, false, err
	}
	th.Label = in.Label
	f.threads[th.ID], f.byTrace[traceID] = th, th.ID
	return th, true, nil
}

type seenFunc func(threadID, stepName, key string) bool

func (s seenFunc) Handle(_ context.Context, threadID, stepName, key string) (bool, error) {
	return s(threadID, stepName, key), nil
}

type recordFunc func(in threads.RecordStepInput) error

func (r recordFunc) Handle(_ context.Context, in threads.RecordStepInput) (threads.StepResult, error) {
	return threads.StepResult{StepName: in.StepName}, r(in)
}

func (f *fakeTraces) seen(threadID, _, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.acts[threadID] {
		if a.IdempotencyKey == key {
			return true
		}
	}
	return false
}

// record appends the span's attempt and moves the thread's update time, as
// RecordStep does.
func (f *fakeTraces) record(in threads.RecordStepInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	th := f.threads[in.ThreadID]
	if th.Status.Closed() {
		return domain.E(domain.KindConflict, domain.CodeThreadClosed, "thread is %s", th.Status)
	}
	th.UpdatedAt = now(f.clock)
	f.threads[th.ID] = th
	f.acts[th.ID] = append(f.acts[th.ID], ports.Activity{ThreadID: th.ID, StepName: in.StepName, Status: in.Status,
		IdempotencyKey: in.IdempotencyKey, Metadata: in.Metadata, FinishedAt: in.FinishedAt})
	return nil
}

func (f *fakeTraces) UpdateThread(_ context.Context, id string, fn ports.ThreadUpdate) (domain.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	th, ok := f.threads[id]
	if !ok {
		return domain.Thread{}, domain.NotFound("thread " + id)
	}
	if _, err := fn(&th); err != nil {
		return domain.Thread{}, err
	}
	f.threads[id] = th
	return th, nil
}

func (f *fakeTraces) ListActivities(_ context.Context, id string) ([]ports.Activity, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ports.Activity(nil), f.acts[id]...), nil
}

func (f *fakeTraces) QuietTraceThreads(_ context.Context, before time.Time, limit int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, th := range f.threads {
		if th.Status == domain.ThreadActive && th.TraceRootEndedAt() != nil && th.UpdatedAt.Before(before) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, nil
}

func (f *fakeTraces) thread(traceID string) domain.Thread {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.threads[f.byTrace[traceID]]
}

// ingester is IngestTrace on the fake.
func (f *fakeTraces) ingester() IngestTraceHandler {
	return NewIngestTraceHandler(f, seenFunc(f.seen), recordFunc(f.record), f, f.clock, nil)
}

type published struct{ n int }

func (p *published) Published(_ context.Context, ns []ports.NotificationRecord) { p.n += len(ns) }

// The quiet-period loop, driven by the bubble's clock: a trace whose root
// span ended stays active while spans keep arriving, and ends one quiet
// period after the last one.
func TestQuietTraceLoopEndsTraceAfterItsQuietPeriod(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newFakeTraces(ports.SystemClock{})
		ctx := context.Background()
		t0 := time.Now().UTC()
		span := func(id, parent string, failed bool) domain.Span {
			return domain.Span{TraceID: "aa", SpanID: id, ParentID: parent, Name: "s" + id, Start: t0, End: t0.Add(time.Second), Failed: failed, StatusMessage: "boom " + id}
		}
		ingest := store.ingester()
		if _, err := ingest.Handle(ctx, []Trace{{ID: "aa", Spans: []domain.Span{span("1", "", false)}}}); err != nil {
			t.Fatal(err)
		}
		pub := &published{}
		h := NewEndQuietTracesHandler(store, pub, ports.SystemClock{}, nil, 30*time.Second)
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); h.Run(runCtx, 5*time.Second, nil) }()

		status := func() domain.ThreadStatus {
			return store.thread("aa").Status
		}
		// A late child arrives 20 s after the root: the quiet period restarts.
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if _, err := ingest.Handle(ctx, []Trace{{ID: "aa", Spans: []domain.Span{span("2", "1", true)}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Second) // 45 s after the root, 25 s after the child
		synctest.Wait()
		if s := status(); s != domain.ThreadActive {
			t.Fatalf("25 s after the last span: %s", s)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if s := status(); s != domain.ThreadFailed {
			t.Fatalf("35 s after the last span: %s", s)
		}
		th := store.thread("aa")
		if th.Error != `span "s2" failed: boom 2` || pub.n != 1 {
			t.Errorf("error %q, %d notifications", th.Error, pub.n)
		}
		stop()
		<-done
	})
}

func TestDeepestFailureAndEventStatus(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	spans := []domain.SpanNode{
		{SpanID: "r", StepName: "root", Failed: true, End: t0.Add(3)},
		{SpanID: "a", ParentID: "r", StepName: "a", Failed: true, End: t0.Add(2)},
		{SpanID: "b", ParentID: "a", StepName: "b", Failed: false},
		{SpanID: "c", ParentID: "b", StepName: "c", Failed: true, Message: "429", End: t0.Add(1)},
		{SpanID: "x", ParentID: "missing", StepName: "orphan", Failed: true},
	}
	if got, ok := domain.DeepestFailure(spans); !ok || got.StepName != "c" {
		t.Errorf("deepest = %+v %v", got, ok)
	}
	if _, ok := domain.DeepestFailure(spans[2:3]); ok {
		t.Error("a trace without failures has a deepest failure")
	}
	for name, want := range map[string]domain.StepStatus{"retry": domain.SubStepRetry, "http.retry": domain.SubStepRetry,
		"exception": domain.StepStatusFailed, "cache.miss": domain.SubStepEvent} {
		if got := (domain.SpanEvent{Name: name}).EventStatus(); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := (domain.SpanEvent{Name: "x", Attributes: map[string]string{"threadify.status": "success"}}).EventStatus(); got != domain.StepStatusSuccess {
		t.Errorf("threadify.status: %s", got)
	}
}
