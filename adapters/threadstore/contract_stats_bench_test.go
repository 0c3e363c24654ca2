package threadstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// BenchmarkContractStatsTriggers: the ingest cost of migration 00097's
// triggers on threads (contractStats' delta rows). Committed steps, 8
// parallel writers, each thread bound to a contract after its start (one
// UPDATE of contract_name: two delta rows), 8 steps (the step's UPDATE of
// threads evaluates the triggers' WHEN clause and writes nothing), then
// ended (two delta rows); "dropped" is the same with the triggers dropped.
// Run interleaved to compare:
//
//	go test ./adapters/threadstore -run '^$' -bench ContractStatsTriggers -count 4 -benchtime 3s
func BenchmarkContractStatsTriggers(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		for _, mode := range []string{"triggers", "dropped"} {
			b.Run(string(d)+"/"+mode, func(b *testing.B) {
				db := sqldbtest.Open(b, d)
				if mode == "dropped" {
					on := ""
					if d == sqldb.Postgres {
						on = " ON threads"
					}
					for _, tr := range []string{"contract_stats_insert", "contract_stats_update", "contract_stats_delete"} {
						if _, err := db.Exec(`DROP TRIGGER ` + tr + on); err != nil {
							b.Fatal(err)
						}
					}
				}
				store := threadstore.New(db)
				store.SkipLogForBenchmark()
				threads := threadsapp.New(store, nil, nil, []byte("secret"), nil)
				ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
				var seq atomic.Int64
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var id string
					for i := 0; pb.Next(); i++ {
						if i%8 == 0 {
							if id != "" {
								if _, err := threads.Application().Commands.EndThread.Handle(ctx, threadsapp.EndThreadInput{ThreadID: id, Status: "cancelled", Reason: "bench"}); err != nil {
									b.Error(err)
									return
								}
							}
							th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "bench"})
							if err != nil {
								b.Error(err)
								return
							}
							id = th.ID
							if _, err := db.Exec(db.Rebind(`UPDATE threads SET contract_name = ?, contract_version = 1 WHERE id = ?`),
								fmt.Sprint("c", i%5), id); err != nil {
								b.Error(err)
								return
							}
						}
						if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: id,
							StepName: fmt.Sprint("s", i%8), Status: "success", IdempotencyKey: fmt.Sprint(seq.Add(1)),
							Context: map[string]string{"i": "1"}}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}
