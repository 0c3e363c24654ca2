package threadstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/app/transparency"
	"github.com/threadengine/engine/domain"
)

// BenchmarkIngestWithAndWithoutLog: committed steps (group commit, 8
// parallel writers on their own threads) with the transparency log and
// without it, side by side; "log-before" is the design before 2026-11-27
// (SQLite: leaves queued and moved by the sequencer; PostgreSQL: the
// sequencer flushing at once on every wake), "log-gap20" the PostgreSQL
// sequencer's flush gap before it was 250 ms. flushtx/op is the sequencer
// transactions per step, stmts the statements prepared by the end. Run interleaved with -count to compare:
//
//	go test ./adapters/threadstore -run '^$' -bench IngestWithAndWithoutLog -count 4 -benchtime 3s
func BenchmarkIngestWithAndWithoutLog(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		for _, mode := range []string{"log", "log-gap20", "log-before", "nolog"} {
			b.Run(string(d)+"/"+mode, func(b *testing.B) {
				db, app := openMetered(b, d)
				store := threadstore.New(db)
				if mode == "nolog" {
					store.SkipLogForBenchmark()
				} else {
					if mode == "log-gap20" { // the flush gap before 2026-11-27 12:30
						store.FlushGapForBenchmark(20 * time.Millisecond)
					}
					if mode == "log-before" {
						store.QueueLeavesForTest()
						store.FlushGapForBenchmark(0)
					}
					// The sequencer runs as in the engine.
					seqCtx, stop := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() {
						defer close(done)
						store.RunLogSequencer(seqCtx, time.Second, func(err error) { b.Error(err) })
					}()
					b.Cleanup(func() { stop(); <-done })
					flushes := store.LogFlushes()
					b.Cleanup(func() { b.ReportMetric(float64(store.LogFlushes()-flushes)/float64(b.N), "flushtx/op") })
				}
				threads := threadsapp.New(store, nil, nil, []byte("secret"), nil)
				ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
				var seq atomic.Int64
				b.SetParallelism(8)
				b.ResetTimer()
				cpu := startCPU(b, db, app)
				b.RunParallel(func(pb *testing.PB) {
					th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "bench"})
					if err != nil {
						b.Error(err)
						return
					}
					for i := 0; pb.Next(); i++ {
						if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
							StepName: fmt.Sprint("s", i%8), Status: "success", IdempotencyKey: fmt.Sprint(seq.Add(1)),
							Context: map[string]string{"i": "1"}, Metadata: map[string]any{"amount": 12.5}}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				// What the sequencer still has to append is part of the
				// cost of the steps just acked.
				if mode != "nolog" {
					if _, err := store.FlushLog(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b)
				// The database's size per step (SQLite: the file after a
				// checkpoint; log minus nolog is the log's share).
				if d == sqldb.SQLite {
					var size int64
					if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
						b.Fatal(err)
					}
					if err := db.Get(&size, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(size)/float64(b.N), "dbB/op")
				}
				// Statements prepared by the end: one per distinct text (a
				// flush whose text depends on its size adds one per size).
				b.ReportMetric(float64(store.CachedStatementsContaining("")), "stmts")
			})
		}
	}
}

// BenchmarkCheckpointSigning: signing a checkpoint of a log that grew by
// one step since the last (tree hash from the stored hashes, Ed25519 note,
// stored), with 1000 leaves before the first.
func BenchmarkCheckpointSigning(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			db := sqldbtest.Open(b, d)
			store := threadstore.New(db)
			threads := threadsapp.New(store, nil, nil, []byte("secret"), nil)
			ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
			th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			rec := func(i int) {
				if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
					StepName: "s", Status: "success", IdempotencyKey: fmt.Sprint(i), Context: map[string]string{}}); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 1000; i++ {
				rec(-i - 1)
			}
			keys, err := threadstore.LoadLogKeys(ctx, db, "bench.example/log", nil, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			tl := transparency.New(transparency.Deps{Log: store, Signer: keys.Signer, Verifiers: keys.Verifiers})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				rec(i)
				b.StartTimer()
				if _, err := tl.Commands.SignCheckpoint.Handle(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("ed25519-note-only", func(b *testing.B) {
		skey, _, _ := note.GenerateKey(rand.Reader, "bench.example/log")
		signer, _ := note.NewSigner(skey)
		body := domain.Checkpoint{Origin: "bench.example/log", Size: 123456}.Text()
		for i := 0; i < b.N; i++ {
			if _, err := note.Sign(&note.Note{Text: body}, signer); err != nil {
				b.Fatal(err)
			}
		}
	})
}
