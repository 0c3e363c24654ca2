package threadstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	ingestapp "github.com/threadengine/engine/app/ingest"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// traceSetup is a store on d with the thread use cases on a clock at now,
// and a member service account's context.
func traceSetup(t *testing.T, d sqldb.Dialect, now time.Time) (*sqldb.DB, *threadstore.Store, *portstest.Clock, *threadsapp.Module, context.Context) {
	db := sqldbtest.Open(t, d)
	store := threadstore.New(db)
	clock := portstest.NewClock(now)
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalServiceAccount, ID: "sa1", Role: domain.RoleMember})
	return db, store, clock, threadsapp.New(store, nil, clock, []byte("secret"), nil), ctx
}

type noPublish struct{}

func (noPublish) Published(context.Context, []ports.NotificationRecord) {}

// An OTLP trace whose child span fails: the thread starts (StartedAt, the
// UI's startedAt and the duration) and ends at the spans' times (not the
// ingest's; created_at stays the ingest's), ends failed once its root span has ended
// and the quiet period passed without a span, and names the deepest
// failing span with its status message; a retry event is a retry.
func TestTraceThreadEndsFromItsSpans(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		spanT0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
		db, store, clock, threads, ctx := traceSetup(t, d, spanT0.Add(2*time.Second)) // spans arrive after they ended
		ingest := ingestapp.FromThreads(threads.Application(), store, clock, nil)
		const traceID, rootID, childID, leafID = "0102030405060708090a0b0c0d0e0f10", "00000000000000a1", "00000000000000b2", "00000000000000c3"
		res := map[string]string{"service.name": "checkout-service"}

		// The children arrive first (exporters flush spans as they end).
		children := []domain.Span{
			{TraceID: traceID, SpanID: childID, ParentID: rootID, Name: "charge", Start: spanT0.Add(100 * time.Millisecond),
				End: spanT0.Add(1200 * time.Millisecond), Resource: res, Failed: true, StatusMessage: "payment provider unavailable",
				Events: []domain.SpanEvent{{Name: "retry", Time: spanT0.Add(600 * time.Millisecond), Attributes: map[string]string{"attempt": "2"}}}},
			{TraceID: traceID, SpanID: leafID, ParentID: childID, Name: "provider.call", Start: spanT0.Add(700 * time.Millisecond),
				End: spanT0.Add(1100 * time.Millisecond), Resource: res, Failed: true, StatusMessage: "HTTP 429 Too Many Requests"},
		}
		r, err := ingest.Handle(ctx, []ingestapp.Trace{{ID: traceID, Spans: children}})
		if err != nil || r.Rejected != 0 {
			t.Fatalf("children: %+v %v", r, err)
		}
		clock.Advance(time.Second)
		root := domain.Span{TraceID: traceID, SpanID: rootID, Name: "POST /checkout", Start: spanT0, End: spanT0.Add(1450 * time.Millisecond),
			Resource: res, Failed: true, StatusMessage: "checkout failed"}
		if r, err = ingest.Handle(ctx, []ingestapp.Trace{{ID: traceID, Spans: []domain.Span{root}}}); err != nil || r.Rejected != 0 {
			t.Fatalf("root: %+v %v", r, err)
		}
		th, err := store.FindThreadByKey(ctx, threadsapp.KeyTrace, traceID)
		if err != nil {
			t.Fatal(err)
		}
		if !th.StartedAt().Equal(spanT0) {
			t.Errorf("thread starts at %v, want the root span's start %v", th.StartedAt(), spanT0)
		}
		// created_at is when the engine first saw the thread: list order,
		// cursors and overdue alerts do not move with the spans' times.
		if !th.CreatedAt.Equal(spanT0.Add(2 * time.Second)) {
			t.Errorf("created_at %v moved, want the first ingest's %v", th.CreatedAt, spanT0.Add(2*time.Second))
		}
		if th.Status != domain.ThreadActive || th.TraceRootEndedAt() == nil {
			t.Fatalf("before the quiet period: %s, root ended %v", th.Status, th.TraceRootEndedAt())
		}

		end := ingestapp.NewEndQuietTracesHandler(store, noPublish{}, clock, nil, 30*time.Second)
		clock.Advance(29 * time.Second)
		if n, err := end.Handle(ctx); err != nil || n != 0 {
			t.Fatalf("within the quiet period: ended %d, %v", n, err)
		}
		clock.Advance(2 * time.Second)
		if n, err := end.Handle(ctx); err != nil || n != 1 {
			t.Fatalf("after the quiet period: ended %d, %v", n, err)
		}
		if n, err := end.Handle(ctx); err != nil || n != 0 {
			t.Fatalf("again: ended %d, %v", n, err)
		}
		th, err = store.GetThread(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		if th.Status != domain.ThreadFailed || !strings.Contains(th.Error, "provider.call") || !strings.Contains(th.Error, "HTTP 429") {
			t.Errorf("ended %s: %q, want failed naming provider.call and its HTTP 429", th.Status, th.Error)
		}
		if is := th.Health().FirstIssue; is == nil || is.StepName != "provider.call" || is.Message != "HTTP 429 Too Many Requests" {
			t.Errorf("first issue %+v, want the deepest failing span", is)
		}
		if th.CompletedAt == nil || !th.CompletedAt.Equal(spanT0.Add(1450*time.Millisecond)) {
			t.Errorf("completed at %v, want the root span's end", th.CompletedAt)
		}
		var durationMs int64
		if err := db.QueryRow(db.Rebind(`SELECT duration_ms FROM threads WHERE id = ?`), th.ID).Scan(&durationMs); err != nil {
			t.Fatal(err)
		}
		if durationMs != 1450 {
			t.Errorf("duration %d ms, want the trace's 1450", durationMs)
		}
		acts, err := store.ListActivities(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		retries := 0
		for _, a := range acts {
			for _, ss := range a.SubSteps {
				if ss.Name == "retry" && ss.Status == string(domain.SubStepRetry) {
					retries++
				}
			}
		}
		if retries != 1 {
			t.Errorf("%d retry sub-steps, want the one retry event", retries)
		}
	})
}

// A trace without failures completes; spans that join an SDK's thread
// (threadify.thread_id) never end it.
func TestTraceThreadCompletesAndJoinedThreadsStayOpen(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
		_, store, clock, threads, ctx := traceSetup(t, d, t0.Add(time.Second))
		sdk, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "sdk"})
		if err != nil {
			t.Fatal(err)
		}
		ok := domain.Span{TraceID: "11111111111111111111111111111111", SpanID: "1111111111111111", Name: "GET /", Start: t0, End: t0.Add(80 * time.Millisecond)}
		joined := domain.Span{TraceID: "22222222222222222222222222222222", SpanID: "2222222222222222", Name: "job", Start: t0, End: t0.Add(time.Millisecond),
			Attributes: map[string]string{"threadify.thread_id": sdk.ID}}
		if _, err := ingestapp.FromThreads(threads.Application(), store, clock, nil).Handle(ctx, []ingestapp.Trace{{ID: ok.TraceID, Spans: []domain.Span{ok}}, {ID: joined.TraceID, Spans: []domain.Span{joined}}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if n, err := ingestapp.NewEndQuietTracesHandler(store, noPublish{}, clock, nil, 0).Handle(ctx); err != nil || n != 1 {
			t.Fatalf("ended %d, %v", n, err)
		}
		th, err := store.FindThreadByKey(ctx, threadsapp.KeyTrace, ok.TraceID)
		if err != nil || th.Status != domain.ThreadCompleted || th.CompletedAt == nil || !th.CompletedAt.Equal(ok.End) {
			t.Fatalf("trace thread: %s at %v, %v", th.Status, th.CompletedAt, err)
		}
		if got, err := store.GetThread(ctx, sdk.ID); err != nil || got.Status != domain.ThreadActive || !got.CreatedAt.Equal(sdk.CreatedAt) {
			t.Fatalf("joined SDK thread: %s created %v (was %v), %v", got.Status, got.CreatedAt, sdk.CreatedAt, err)
		}
	})
}
