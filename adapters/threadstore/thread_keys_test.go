package threadstore_test

import (
	"sync"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
)

// One thread per key, also when many callers race to create it.
func TestThreadKeyCreatesOneThread(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, _, ctx := setup(t, d)
		ids := make([]string, 8)
		created := make([]bool, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				th, c, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, app.KeyApp, "order-42", app.StartThreadInput{Label: "order"})
				if err != nil {
					t.Error(err)
					return
				}
				ids[i], created[i] = th.ID, c
			}(i)
		}
		wg.Wait()
		n := 0
		for i := range ids {
			if ids[i] != ids[0] {
				t.Fatalf("two threads for one key: %v", ids)
			}
			if created[i] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d callers created the thread", n)
		}
		// The resumed thread is the stored one, with its owner party.
		th, c, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, app.KeyApp, "order-42", app.StartThreadInput{Label: "ignored"})
		if err != nil || c || th.ID != ids[0] || th.Label != "order" || len(th.Parties) != 1 || th.Parties[0].Level != domain.AccessOwner {
			t.Fatalf("resume: %+v created=%v %v", th, c, err)
		}
		// A trace-only start resumes the trace's thread.
		a, err := threads.Application().Commands.StartThread.Handle(ctx, app.StartThreadInput{Refs: map[string]string{"otel_trace_id": "abc"}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := threads.Application().Commands.StartThread.Handle(ctx, app.StartThreadInput{Refs: map[string]string{"otel_trace_id": "abc"}})
		if err != nil || a.ID != b.ID {
			t.Fatalf("trace start did not resume: %s %s %v", a.ID, b.ID, err)
		}
		if _, _, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, app.KeyApp, "order-42", app.StartThreadInput{Contract: "other"}); domain.CodeOf(err) != domain.CodeContractConflict {
			t.Fatalf("different contract on resume: %v", err)
		}
		if _, err := threads.Application().Commands.EndThread.Handle(ctx, app.EndThreadInput{ThreadID: ids[0], Status: "cancelled"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, app.KeyApp, "order-42", app.StartThreadInput{}); domain.CodeOf(err) != domain.CodeThreadClosed {
			t.Fatalf("resume of a closed thread: %v", err)
		}
	})
}
