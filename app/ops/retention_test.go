package ops_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// racedEraser holds ended threads; other, when set, runs before each
// delete: another replica's sweep deleting threads first.
type racedEraser struct {
	mu      sync.Mutex
	threads map[string]bool
	other   func(ids []string)
}

func (e *racedEraser) ExpiredThreads(_ context.Context, _, _ time.Time, limit int) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	for id := range e.threads {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, nil
}

func (e *racedEraser) DeleteThreads(_ context.Context, ids []string) ([]domain.Thread, error) {
	if e.other != nil {
		e.other(ids)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var gone []domain.Thread
	for _, id := range ids {
		if e.threads[id] {
			delete(e.threads, id)
			gone = append(gone, domain.Thread{ID: id})
		}
	}
	return gone, nil
}

// A batch another replica deleted first does not end the pass: the
// threads after it are deleted in the same sweep.
func TestRetentionGoesOnPastABatchDeletedElsewhere(t *testing.T) {
	t.Parallel()
	store := &racedEraser{threads: map[string]bool{"a": true, "b": true, "c": true, "d": true, "e": true}}
	raced := false
	store.other = func(ids []string) {
		if raced {
			return
		}
		raced = true
		store.mu.Lock()
		for _, id := range ids {
			delete(store.threads, id)
		}
		store.mu.Unlock()
	}
	ids := portstest.NewIdentity()
	r := ops.NewRetention(ops.RetentionDeps{Store: store, Settings: ids, Audit: ids, Clock: portstest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)),
		NewID: func() string { return "id" }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ConfigDays: 30, BatchSize: 2})
	res, err := r.Sweeper.Sweep(context.Background())
	if err != nil || res.Threads != 3 || len(store.threads) != 0 {
		t.Fatalf("sweep %+v %v; left %v", res, err, store.threads)
	}
	// One audit line per thread deleted here, its id as the target.
	var targets []string
	for _, e := range ids.AuditLog() {
		if e.Action != "thread.retention_delete" || e.ActorID != "retention" || e.Details["threads_days"] != 30 {
			t.Errorf("audit entry %+v", e)
		}
		targets = append(targets, e.Target)
	}
	sort.Strings(targets)
	if strings.Join(targets, ",") != "c,d,e" {
		t.Errorf("audit targets %v, want the threads deleted by this sweep", targets)
	}
	// A batch's lines in one write (RetentionAuditLog.RecordAudits): c and
	// d together, e alone.
	if n := ids.AuditBatches(); n != 1 {
		t.Errorf("%d batched audit writes, want 1 (the batch of two)", n)
	}
}

// cancelledAudit refuses a write whose context has ended, as a database
// driver does.
type cancelledAudit struct{ *portstest.Identity }

func (a cancelledAudit) RecordAudits(ctx context.Context, es []ports.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.Identity.RecordAudits(ctx, es)
}

func (a cancelledAudit) RecordAudit(ctx context.Context, e ports.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.Identity.RecordAudit(ctx, e)
}

// A sweep stopped (the engine shutting down) while a batch is deleted
// still writes that batch's audit lines: the threads are gone, and their
// lines were lost with the cancelled context.
func TestRetentionAuditOfADeletedBatchSurvivesStopping(t *testing.T) {
	t.Parallel()
	ctx, stop := context.WithCancel(context.Background())
	store := &racedEraser{threads: map[string]bool{"a": true, "b": true}, other: func([]string) { stop() }}
	ids := portstest.NewIdentity()
	r := ops.NewRetention(ops.RetentionDeps{Store: store, Settings: ids, Audit: cancelledAudit{ids}, Clock: portstest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)),
		NewID: func() string { return "id" }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ConfigDays: 30, BatchSize: 2})
	if _, err := r.Sweeper.Sweep(ctx); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	if len(store.threads) != 0 {
		t.Fatalf("left %v", store.threads)
	}
	if n := len(ids.AuditLog()); n != 2 {
		t.Fatalf("%d audit lines for 2 deleted threads", n)
	}
}
