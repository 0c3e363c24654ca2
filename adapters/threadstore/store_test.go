package threadstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

func setup(t testing.TB, d sqldb.Dialect) (*threadsapp.Module, *sqldb.DB, context.Context) {
	db := sqldbtest.Open(t, d)
	th := threadsapp.New(threadstore.New(db), nil, nil, []byte("secret"), nil)
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
	return th, db, ctx
}

// Concurrent writers of one thread serialise on the thread row: the chain
// stays one contiguous, verifiable sequence.
func TestConcurrentAppendsKeepOneChain(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "c"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					_, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", w),
						Status: "success", IdempotencyKey: fmt.Sprint(w, "-", i), Context: map[string]string{}})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		var n, maxSeq, count int
		if err := db.QueryRow(db.Rebind(`SELECT COUNT(*), MAX(seq), COUNT(DISTINCT seq) FROM thread_activities WHERE thread_id = ?`), th.ID).Scan(&n, &maxSeq, &count); err != nil {
			t.Fatal(err)
		}
		if n != 160 || maxSeq != 160 || count != 160 {
			t.Fatalf("rows %d, max seq %d, distinct %d; want 160", n, maxSeq, count)
		}
		st, err := threads.Application().Queries.VerifyIntegrity.Handle(ctx, th.ID)
		if err != nil || !st.Verified || st.TotalEvents != 160 {
			t.Fatalf("chain %+v %v", st, err)
		}
	})
}

// BenchmarkRecordStep measures the committed append path without transport.
func BenchmarkRecordStep(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			threads, _, ctx := setup(b, d)
			var seq atomic.Int64
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "bench"})
				if err != nil {
					b.Error(err)
					return
				}
				for i := 0; pb.Next(); i++ {
					_, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", i%8),
						Status: "success", IdempotencyKey: fmt.Sprint(seq.Add(1)), Context: map[string]string{"i": "1"}})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// Group commit: a write refused inside a batch (closed thread) fails alone,
// and the same step sent twice at once is appended once.
func TestBatchedAppendsFailAlone(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		open, _ := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "open"})
		closed, _ := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "closed"})
		if _, err := threads.Application().Commands.EndThread.Handle(ctx, threadsapp.EndThreadInput{ThreadID: closed.ID, Status: "cancelled", Reason: "x"}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var ok, refused, dup atomic.Int64
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					tid, key := open.ID, fmt.Sprint(w, "-", i)
					if w%2 == 1 {
						tid = closed.ID
					}
					if w%4 == 2 {
						key = fmt.Sprint("same-", i) // workers 2, 6, 10, 14 collide
					}
					r, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "s", Status: "success",
						IdempotencyKey: key, Context: map[string]string{}})
					switch {
					case err == nil && r.Duplicate:
						dup.Add(1)
					case err == nil:
						ok.Add(1)
					case domain.CodeOf(err) == domain.CodeThreadClosed:
						refused.Add(1)
					default:
						t.Error(err)
					}
				}
			}(w)
		}
		wg.Wait()
		// 4 workers with unique keys (0,4,8,12) + 10 distinct colliding keys.
		if ok.Load() != 50 || dup.Load() != 30 || refused.Load() != 80 {
			t.Fatalf("ok %d dup %d refused %d; want 50, 30, 80", ok.Load(), dup.Load(), refused.Load())
		}
		var n int
		if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`), open.ID); err != nil || n != 50 {
			t.Fatalf("activities %d (%v)", n, err)
		}
		if st, err := threads.Application().Queries.VerifyIntegrity.Handle(ctx, open.ID); err != nil || !st.Verified {
			t.Fatalf("chain %+v %v", st, err)
		}
	})
}

// Group commit with multi-row writes: many writers on a few threads, so
// batches hold several threads and several appends of one thread. Every
// batch must commit as a batch (no fallback to one append per transaction),
// every chain must verify, and each table must hold exactly one row per
// appended attempt.
func TestGroupCommitRoundsKeepChainsAndRows(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		store := threadstore.New(db)
		threads := threadsapp.New(store, nil, nil, []byte("secret"), nil)
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
		const nThreads, writers, perWriter = 5, 20, 12
		ids := make([]string, nThreads)
		for i := range ids {
			th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: fmt.Sprint("g", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = th.ID
		}
		var wg sync.WaitGroup
		var appended, dup, retried atomic.Int64
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perWriter; i++ {
					// Each key is written failed, then success (a retry), then
					// success again (a duplicate).
					key := fmt.Sprint(w, "-", i/3)
					status := [...]string{"failed", "success", "success"}[i%3]
					r, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: ids[w%nThreads], StepName: fmt.Sprint("s", w%3),
						Status: status, IdempotencyKey: key, Context: map[string]string{"w": fmt.Sprint(w)},
						SubSteps: []threadsapp.SubStepInput{{Name: "a", Status: "success"}, {Name: "b", Status: "success"}}})
					switch {
					case err != nil:
						t.Error(err)
						return
					case r.Duplicate:
						dup.Add(1)
					default:
						appended.Add(1)
						if r.RetryCount > 0 {
							retried.Add(1)
						}
					}
				}
			}(w)
		}
		wg.Wait()
		want := int64(writers * perWriter * 2 / 3)
		if appended.Load() != want || retried.Load() != want/2 || dup.Load() != want/2 {
			t.Fatalf("appended %d retried %d dup %d; want %d, %d, %d", appended.Load(), retried.Load(), dup.Load(), want, want/2, want/2)
		}
		for _, id := range ids {
			st, err := threads.Application().Queries.VerifyIntegrity.Handle(ctx, id)
			if err != nil || !st.Verified || st.TotalEvents != int(want)/nThreads {
				t.Fatalf("chain of %s: %+v %v", id, st, err)
			}
		}
		count := func(q string) int64 {
			var n int64
			if err := db.Get(&n, q); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(`SELECT COUNT(*) FROM thread_activities`); n != want {
			t.Errorf("activities %d, want %d", n, want)
		}
		if n := count(`SELECT COUNT(*) FROM step_substeps`); n != 2*want {
			t.Errorf("substeps %d, want %d", n, 2*want)
		}
		if n := count(`SELECT COUNT(*) FROM thread_notifications`); n != want {
			t.Errorf("notifications %d, want %d", n, want)
		}
		if n := count(`SELECT COUNT(DISTINCT seq) FROM thread_notifications`); n != want {
			t.Errorf("distinct notification seq %d, want %d", n, want)
		}
		if n := count(`SELECT COUNT(*) FROM thread_step_states WHERE status = 'success' AND retry_count = 1`); n != want/2 {
			t.Errorf("states %d, want %d", n, want/2)
		}
		var steps int64
		for _, id := range ids {
			th, err := store.GetThread(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			steps += int64(th.StepCount())
		}
		if steps != want {
			t.Errorf("thread step counts sum to %d, want %d", steps, want)
		}
		commits, fallbacks := store.GroupCounters()
		if commits == 0 || fallbacks != 0 {
			t.Fatalf("group commits %d, fallbacks %d; want some and none", commits, fallbacks)
		}
		t.Logf("group commits %d", commits)
	})
}

// storeWithThread opens a store of dialect d and starts one thread in it as
// member u1.
func storeWithThread(t *testing.T, d sqldb.Dialect, label string) (*sqldb.DB, *threadstore.Store, context.Context, domain.Thread) {
	t.Helper()
	db := sqldbtest.Open(t, d)
	store := threadstore.New(db)
	threads := threadsapp.New(store, nil, nil, []byte("secret"), nil)
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
	th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: label})
	if err != nil {
		t.Fatal(err)
	}
	return db, store, ctx, th
}

// More sub-steps than one statement's parameter budget (a full batch of
// steps at the 256 sub-step limit) are split into several multi-row
// statements, all in the same transaction.
func TestManySubStepsSplitAcrossStatements(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db, store, ctx, th := storeWithThread(t, d, "subs")
		_, err := store.AppendStep(ctx, th.ID, ports.AppendWriter{PrincipalID: "u1"}, "big", "k", false, func(v ports.StepTx) (ports.StepPlan, error) {
			now := time.Now().UTC()
			a := ports.Activity{ID: "act-1", ThreadID: th.ID, Seq: v.Thread.StepCount() + 1, StepName: "big",
				IdempotencyKey: "k", Status: "success", Attempt: 1, RecordedAt: now, Hash: "h", PrevHash: v.Thread.LastHash()}
			p := ports.StepPlan{Activity: a, Thread: v.Thread,
				State: ports.StepState{StepName: "big", IdempotencyKey: "k", Status: "success", LatestStepID: a.ID,
					FirstSeenAt: now, LastUpdatedAt: now}}
			for i := 0; i < 2100; i++ { // 2100 × 8 parameters > one chunk
				p.SubSteps = append(p.SubSteps, ports.SubStep{ID: fmt.Sprint("sub-", i), Name: fmt.Sprint("sub-", i),
					Status: "success", RecordedAt: now})
			}
			p.Thread.Append(a.Hash, domain.StepOutcome{StepName: "big", Status: "success", RecordedAt: now})
			p.Thread.UpdatedAt = now
			return p, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var n, distinct int
		if err := db.QueryRow(db.Rebind(`SELECT COUNT(*), COUNT(DISTINCT name) FROM step_substeps WHERE step_id = ?`), "act-1").Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != 2100 || distinct != 2100 {
			t.Fatalf("sub-steps %d (distinct %d), want 2100", n, distinct)
		}
		got, err := store.GetThread(ctx, th.ID)
		if err != nil || got.StepCount() != 1 || got.LastHash() != "h" {
			t.Fatalf("thread %+v %v", got, err)
		}
	})
}

// The invocation id of a step identity's latest attempt round-trips through
// every read of step state: the locking read (StepTx.Current, with and
// without all states) and ListStepStates; a later attempt without one clears it.
func TestStepInvocationIDRoundTrips(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		_, store, ctx, th := storeWithThread(t, d, "inv")
		write := func(inv string) {
			t.Helper()
			_, err := store.AppendStep(ctx, th.ID, ports.AppendWriter{PrincipalID: "u1"}, "pay", "k", false, func(v ports.StepTx) (ports.StepPlan, error) {
				now := time.Now().UTC()
				a := ports.Activity{ID: fmt.Sprint("act-", v.Thread.StepCount()+1), ThreadID: th.ID, Seq: v.Thread.StepCount() + 1,
					StepName: "pay", IdempotencyKey: "k", Status: "failed", Attempt: 1, RecordedAt: now, Hash: "h", PrevHash: v.Thread.LastHash()}
				p := ports.StepPlan{Activity: a, Thread: v.Thread,
					State: ports.StepState{StepName: "pay", IdempotencyKey: "k", Status: "failed", LatestStepID: a.ID,
						InvocationID: inv, FirstSeenAt: now, LastUpdatedAt: now}}
				p.Thread.RestoreHead(a.Hash, a.Seq)
				p.Thread.UpdatedAt = now
				return p, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		check := func(want string) {
			t.Helper()
			for _, withStates := range []bool{false, true} {
				var got *ports.StepState
				if _, err := store.AppendStep(ctx, th.ID, ports.AppendWriter{PrincipalID: "u1"}, "pay", "k", withStates, func(v ports.StepTx) (ports.StepPlan, error) {
					got = v.Current
					return ports.StepPlan{Duplicate: true}, nil
				}); err != nil {
					t.Fatal(err)
				}
				if got == nil || got.InvocationID != want {
					t.Fatalf("StepTx.Current (withStates %v) = %+v, want invocation id %q", withStates, got, want)
				}
			}
			states, err := store.ListStepStates(ctx, th.ID)
			if err != nil || len(states) != 1 || states[0].InvocationID != want {
				t.Fatalf("ListStepStates = %+v (%v), want invocation id %q", states, err, want)
			}
		}
		write("inv-1")
		check("inv-1")
		write("inv-2") // the upsert replaces it
		check("inv-2")
		write("")
		check("")
	})
}

// Refs sent with a step are written by the step's own transaction: stored
// with a step that commits, absent when the step is refused, and never
// written for a duplicate.
func TestRefsWithAStepShareItsTransaction(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db, store, ctx, th := storeWithThread(t, d, "refs")
		refOf := func(key string) string {
			t.Helper()
			var v string
			err := db.QueryRow(db.Rebind(`SELECT ref_value FROM thread_refs WHERE thread_id = ? AND ref_key = ?`), th.ID, key).Scan(&v)
			if err != nil {
				return ""
			}
			return v
		}
		plan := func(refs map[string]string, refuse error) error {
			_, err := store.AppendStep(ctx, th.ID, ports.AppendWriter{PrincipalID: "u1"}, "pay", fmt.Sprint(refs), false, func(v ports.StepTx) (ports.StepPlan, error) {
				if refuse != nil {
					return ports.StepPlan{Refs: refs}, refuse
				}
				now := time.Now().UTC()
				a := ports.Activity{ID: fmt.Sprint("act-", v.Thread.StepCount()+1), ThreadID: th.ID, Seq: v.Thread.StepCount() + 1,
					StepName: "pay", IdempotencyKey: fmt.Sprint(refs), Status: "success", Attempt: 1, RecordedAt: now, Hash: "h", PrevHash: v.Thread.LastHash()}
				p := ports.StepPlan{Activity: a, Thread: v.Thread, Refs: refs,
					State: ports.StepState{StepName: "pay", IdempotencyKey: a.IdempotencyKey, Status: "success", LatestStepID: a.ID,
						FirstSeenAt: now, LastUpdatedAt: now}}
				p.Thread.RestoreHead(a.Hash, a.Seq)
				p.Thread.UpdatedAt = now
				return p, nil
			})
			return err
		}
		if err := plan(map[string]string{"orderId": "O-1", "carrier": "dhl"}, nil); err != nil {
			t.Fatal(err)
		}
		if refOf("orderId") != "O-1" || refOf("carrier") != "dhl" {
			t.Fatalf("refs with a committed step: orderId=%q carrier=%q", refOf("orderId"), refOf("carrier"))
		}
		if err := plan(map[string]string{"carrier": "ups"}, nil); err != nil {
			t.Fatal(err)
		}
		if refOf("carrier") != "ups" {
			t.Fatalf("a later step's ref did not replace the value: %q", refOf("carrier"))
		}
		refused := domain.Forbidden("no")
		if err := plan(map[string]string{"refused": "x"}, refused); domain.KindOf(err) != domain.KindForbidden {
			t.Fatalf("refused plan: %v", err)
		}
		if refOf("refused") != "" {
			t.Fatal("a refused step's refs were written")
		}
	})
}

// Close stops the group-commit goroutines: what was queued is committed,
// later appends are refused as unavailable; a second Close is a no-op.
func TestCloseStopsGroupCommits(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		store := threadstore.New(db)
		threads := threadsapp.New(store, nil, nil, []byte("secret"), nil)
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
		app := threads.Application()
		th, err := app.Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "c"})
		if err != nil {
			t.Fatal(err)
		}
		record := func(key string) error {
			_, err := app.Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "s",
				Status: "success", IdempotencyKey: key, Context: map[string]string{}})
			return err
		}
		if err := record("a"); err != nil {
			t.Fatal(err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		if err := record("b"); domain.CodeOf(err) != domain.CodeUnavailable {
			t.Fatalf("append after Close: %v, want unavailable", err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		never := threadstore.New(db) // never appended: nothing to stop
		if err := never.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
