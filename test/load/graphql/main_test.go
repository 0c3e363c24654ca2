package main

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/test/enginetest"
	"github.com/threadengine/engine/test/load/loadgen"
)

// BenchmarkHTTPThread runs the thread(id) scenario over loopback HTTP
// against an in-process engine on PostgreSQL (SQLite without
// THREADENGINE_TEST_POSTGRES_URL), seeded over WebSocket like the load
// program. Use -cpuprofile to see where the engine spends its time.
func BenchmarkHTTPThread(b *testing.B) {
	d := sqldb.SQLite
	if os.Getenv(sqldbtest.PostgresEnv) != "" {
		d = sqldb.Postgres
	}
	e := enginetest.Start(b, d)
	id, err := loadgen.Seed(e.URL, e.AdminKey, 20)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"query": loadgen.ThreadQuery, "variables": map[string]any{"id": id}})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	client := &http.Client{Transport: tr}
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if ok, msg := do(client, e.URL+"/graphql", e.AdminKey, body); !ok {
				b.Fatal(msg)
			}
		}
	})
}
