package threadstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
)

func setup(t testing.TB, d sqldb.Dialect) (*app.Threads, *sqldb.DB, context.Context) {
	db := sqldbtest.Open(t, d)
	th := app.NewThreads(threadstore.New(db), nil, nil, []byte("secret"), nil)
	ctx := app.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
	return th, db, ctx
}

// Concurrent writers of one thread serialise on the thread row: the chain
// stays one contiguous, verifiable sequence.
func TestConcurrentAppendsKeepOneChain(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			threads, db, ctx := setup(t, d)
			th, err := threads.StartThread(ctx, app.StartThreadInput{Label: "c"})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < 20; i++ {
						_, err := threads.RecordStep(ctx, app.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", w),
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
			st, err := threads.VerifyIntegrity(ctx, th.ID)
			if err != nil || !st.Verified || st.TotalEvents != 160 {
				t.Fatalf("chain %+v %v", st, err)
			}
		})
	}
}

func TestHashSecretGeneratedOnce(t *testing.T) {
	dir := t.TempDir()
	a, err := threadstore.LoadHashSecret("", dir)
	if err != nil || len(a) != 32 {
		t.Fatalf("%x %v", a, err)
	}
	b, err := threadstore.LoadHashSecret("", dir)
	if err != nil || string(a) != string(b) {
		t.Fatal("secret changed between starts")
	}
	if c, _ := threadstore.LoadHashSecret("configured", dir); string(c) != "configured" {
		t.Fatal("configured secret ignored")
	}
}

// BenchmarkRecordStep measures the committed append path without transport.
func BenchmarkRecordStep(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			threads, _, ctx := setup(b, d)
			var seq atomic.Int64
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				th, err := threads.StartThread(ctx, app.StartThreadInput{Label: "bench"})
				if err != nil {
					b.Error(err)
					return
				}
				for i := 0; pb.Next(); i++ {
					_, err := threads.RecordStep(ctx, app.RecordStepInput{ThreadID: th.ID, StepName: fmt.Sprint("s", i%8),
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
