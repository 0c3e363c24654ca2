package threadstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
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
				th, c, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, threadsapp.KeyApp, "order-42", threadsapp.StartThreadInput{Label: "order"})
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
		th, c, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, threadsapp.KeyApp, "order-42", threadsapp.StartThreadInput{Label: "ignored"})
		if err != nil || c || th.ID != ids[0] || th.Label != "order" || len(th.Parties) != 1 || th.Parties[0].Level != domain.AccessOwner {
			t.Fatalf("resume: %+v created=%v %v", th, c, err)
		}
		// A trace-only start resumes the trace's thread.
		a, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Refs: map[string]string{"otel_trace_id": "abc"}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Refs: map[string]string{"otel_trace_id": "abc"}})
		if err != nil || a.ID != b.ID {
			t.Fatalf("trace start did not resume: %s %s %v", a.ID, b.ID, err)
		}
		if _, _, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, threadsapp.KeyApp, "order-42", threadsapp.StartThreadInput{Contract: "other"}); domain.CodeOf(err) != domain.CodeContractConflict {
			t.Fatalf("different contract on resume: %v", err)
		}
		if _, err := threads.Application().Commands.EndThread.Handle(ctx, threadsapp.EndThreadInput{ThreadID: ids[0], Status: "cancelled"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := threads.Application().Commands.StartThreadWithKey.Handle(ctx, threadsapp.KeyApp, "order-42", threadsapp.StartThreadInput{}); domain.CodeOf(err) != domain.CodeThreadClosed {
			t.Fatalf("resume of a closed thread: %v", err)
		}
	})
}

// The first batches of one trace, some carrying an application key and some
// not, arriving at once (as on several replicas): every one lands on the same
// thread, and the key names it too. A later keyed batch of the bound trace
// resumes it.
func TestKeyedAndUnkeyedFirstBatchesOfATraceShareOneThread(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		cmd := threads.Application().Commands.StartThreadWithKey
		for round := range 10 {
			trace, key := fmt.Sprintf("trace-%d", round), fmt.Sprintf("order-%d", round)
			ids := make([]string, 6)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					k := ""
					if i%2 == 0 {
						k = key
					}
					th, _, err := cmd.HandleTrace(ctx, trace, k, threadsapp.StartThreadInput{Label: "otlp"})
					if err != nil {
						t.Error(err)
						return
					}
					ids[i] = th.ID
				}(i)
			}
			wg.Wait()
			for i := range ids {
				if ids[i] != ids[0] {
					t.Fatalf("round %d: the trace split over threads %v", round, ids)
				}
			}
			keyed, _, err := cmd.Handle(ctx, threadsapp.KeyApp, key, threadsapp.StartThreadInput{})
			if err != nil || keyed.ID != ids[0] {
				t.Fatalf("round %d: key names %s (%v), the trace %s", round, keyed.ID, err, ids[0])
			}
			again, _, err := cmd.HandleTrace(ctx, trace, key, threadsapp.StartThreadInput{})
			if err != nil || again.ID != ids[0] {
				t.Fatalf("round %d: a later keyed batch: %s %v", round, again.ID, err)
			}
		}
		var n int
		if err := db.GetContext(ctx, &n, `SELECT COUNT(*) FROM threads`); err != nil || n != 10 {
			t.Fatalf("%d threads stored (%v), want one per trace", n, err)
		}
	})
}

// CreateThreadWithKey with several keys writes nothing when one is taken,
// and returns the thread of the first taken key.
func TestCreateThreadWithKeysIsAllOrNothing(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		_, db, ctx := setup(t, d)
		store := threadstore.New(db)
		now := time.Now().UTC()
		mk := func(id string) domain.Thread {
			return domain.Thread{ID: id, Status: domain.ThreadActive, OwnerKind: string(domain.PrincipalUser), OwnerID: "u1", CreatedAt: now, UpdatedAt: now}
		}
		first := mk(uuid.NewString())
		if _, created, err := store.CreateThreadWithKey(ctx, threadsapp.KeyTrace, "t1", first, nil); err != nil || !created {
			t.Fatalf("first: %v %v", created, err)
		}
		second := mk(uuid.NewString())
		got, created, err := store.CreateThreadWithKey(ctx, threadsapp.KeyApp, "k1", second, nil, ports.KeyName{Namespace: threadsapp.KeyTrace, Key: "t1"})
		if err != nil || created || got.ID != first.ID {
			t.Fatalf("second: %s created=%v %v, want the trace's thread %s", got.ID, created, err, first.ID)
		}
		if _, err := store.FindThreadByKey(ctx, threadsapp.KeyApp, "k1"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("the refused create bound its first key: %v", err)
		}
		if _, err := store.GetThread(ctx, second.ID); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("the refused create stored its thread: %v", err)
		}
	})
}
