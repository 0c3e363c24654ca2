package threads

import (
	"context"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// quietFake adds the quiet-trace query to the in-memory store.
type quietFake struct{ *fakeThreads }

func (f quietFake) QuietTraceThreads(_ context.Context, before time.Time, limit int) ([]string, error) {
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

type published struct{ n int }

func (p *published) Published(_ context.Context, ns []ports.NotificationRecord) { p.n += len(ns) }

// The quiet-period loop, driven by the bubble's clock: a trace whose root
// span ended stays active while spans keep arriving, and ends one quiet
// period after the last one.
func TestQuietTraceLoopEndsTraceAfterItsQuietPeriod(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newFakeThreads()
		m := New(store, nil, ports.SystemClock{}, []byte("secret"), nil)
		ctx := as("sa", domain.RoleMember)
		t0 := time.Now().UTC()
		span := func(id, parent string, failed bool) domain.Span {
			return domain.Span{TraceID: "aa", SpanID: id, ParentID: parent, Name: "s" + id, Start: t0, End: t0.Add(time.Second), Failed: failed, StatusMessage: "boom " + id}
		}
		ingest := m.Application().Commands.IngestTrace
		if _, err := ingest.Handle(ctx, []Trace{{ID: "aa", Spans: []domain.Span{span("1", "", false)}}}); err != nil {
			t.Fatal(err)
		}
		pub := &published{}
		h := NewEndQuietTracesHandler(quietFake{store}, pub, ports.SystemClock{}, nil, 30*time.Second)
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); h.Run(runCtx, 5*time.Second, nil) }()

		status := func() domain.ThreadStatus {
			th, err := store.FindThreadByKey(ctx, KeyTrace, "aa")
			if err != nil {
				t.Fatal(err)
			}
			return th.Status
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
		th, _ := store.FindThreadByKey(ctx, KeyTrace, "aa")
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
