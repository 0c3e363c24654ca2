package threadquery_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
)

// statKey is one contractStats count's key.
type statKey struct {
	name           string
	version        int
	status, health string
}

// countOverThreads is what contractStats must answer: a COUNT(*) over threads.
func countOverThreads(t *testing.T, db *sqldb.DB) map[statKey]int {
	t.Helper()
	return statCounts(t, db, `SELECT contract_name, COALESCE(contract_version, 0) AS contract_version, status, health, COUNT(*) AS n
 FROM threads WHERE contract_name IS NOT NULL GROUP BY contract_name, COALESCE(contract_version, 0), status, health`)
}

// totalRows is contract_stats_total by key, every row (zero ones too).
func totalRows(t *testing.T, db *sqldb.DB) map[statKey]int {
	t.Helper()
	return statCounts(t, db, `SELECT contract_name, contract_version, status, health, threads AS n FROM contract_stats_total`)
}

// statCounts reads (contract_name, contract_version, status, health, n)
// rows by key.
func statCounts(t *testing.T, db *sqldb.DB, query string) map[statKey]int {
	t.Helper()
	var rows []struct {
		Name    string `db:"contract_name"`
		Version int    `db:"contract_version"`
		Status  string `db:"status"`
		Health  string `db:"health"`
		N       int    `db:"n"`
	}
	if err := db.Select(&rows, query); err != nil {
		t.Fatal(err)
	}
	m := map[statKey]int{}
	for _, r := range rows {
		m[statKey{r.Name, r.Version, r.Status, r.Health}] = r.N
	}
	return m
}

// statsByKey is contractStats per key, from the per-version counts it
// returns (threads by status; the health counts checked separately).
func statsByKey(t *testing.T, s *threadquery.Store) (byStatus, byHealth map[[3]any]int) {
	t.Helper()
	stats, err := s.ContractStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byStatus, byHealth = map[[3]any]int{}, map[[3]any]int{}
	for _, c := range stats {
		for st, n := range map[string]int{"active": c.Active, "completed": c.Completed, "failed": c.Failed, "cancelled": c.Cancelled} {
			if n != 0 {
				byStatus[[3]any{c.Name, c.Version, st}] = n
			}
		}
		for h, n := range map[string]int{"VIOLATED": c.Violated, "FAILED": c.HealthFailed, "WARNING": c.Warn, "OK": c.Threads - c.Violated - c.HealthFailed - c.Warn} {
			if n != 0 {
				byHealth[[3]any{c.Name, c.Version, h}] = n
			}
		}
	}
	return byStatus, byHealth
}

// contractStats (totals plus unfolded deltas, migration 00097) equals a
// COUNT(*) over threads: for threads written before the migration (by the
// previous release: the migration counts them), then after every few of
// random starts, status and health changes, version changes and deletes
// (DeleteThreads: retention and erasure), with roll-up folds at random
// points, and after concurrent writers of one contract fold by fold
// (PostgreSQL). It fails if contractStats skips the deltas, or a trigger
// misses a change. After each fold contract_stats_total holds exactly the
// keys that have threads: a fold deletes the rows it brings to 0.
func TestContractStatsEqualACountOverThreads(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.OpenAt(t, d, 94) // the previous release's schema
		now := time.Now().UTC().Truncate(time.Second)
		rng := rand.New(rand.NewPCG(28, 97))
		statuses := []string{"active", "completed", "failed", "cancelled"}
		healths := []string{"OK", "VIOLATED", "FAILED", "WARNING"}
		n := 0
		var ids []string
		start := func(db *sqldb.DB, contract string) error {
			n++
			id := fmt.Sprintf("t%04d", n)
			var name, version any
			if contract != "" {
				name, version = contract, 1+n%2
				if n%7 == 0 {
					version = nil // counted as version 0
				}
			}
			_, err := db.Exec(db.Rebind(`INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status,
 health, health_version, created_at, updated_at) VALUES (?, ?, ?, ?, 'user', 'u1', 'active', 'OK', 1, ?, ?)`),
				id, name, name, version, sqldb.Time(now), sqldb.Time(now))
			if err == nil {
				ids = append(ids, id)
			}
			return err
		}
		contracts := []string{"c0", "c1", "c2", ""}
		for i := 0; i < 30; i++ {
			if err := start(db, contracts[i%4]); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				if _, err := db.Exec(db.Rebind(`UPDATE threads SET status = ?, health = ? WHERE id = ?`), statuses[1+i%3], healths[i%4], ids[len(ids)-1]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := db.MigrateUp(ctx, 0); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		store := threadstore.New(db)
		check := func(stage string) {
			t.Helper()
			want := countOverThreads(t, db)
			wantStatus, wantHealth := map[[3]any]int{}, map[[3]any]int{}
			for k, n := range want {
				wantStatus[[3]any{k.name, k.version, k.status}] += n
				wantHealth[[3]any{k.name, k.version, k.health}] += n
			}
			gotStatus, gotHealth := statsByKey(t, s)
			if !reflect.DeepEqual(gotStatus, wantStatus) || !reflect.DeepEqual(gotHealth, wantHealth) {
				t.Fatalf("%s:\n got %v %v\nwant %v %v", stage, gotStatus, gotHealth, wantStatus, wantHealth)
			}
		}
		check("counted by the migration")
		folds := 0
		for op := 0; op < 400; op++ {
			id := ids[rng.IntN(len(ids))]
			switch r := rng.IntN(20); {
			case r < 5:
				if err := start(db, contracts[rng.IntN(len(contracts))]); err != nil {
					t.Fatal(err)
				}
			case r < 10:
				if _, err := db.Exec(db.Rebind(`UPDATE threads SET status = ?, completed_at = ?, updated_at = ? WHERE id = ?`),
					statuses[rng.IntN(4)], sqldb.Time(now), sqldb.Time(now), id); err != nil {
					t.Fatal(err)
				}
			case r < 14:
				if _, err := db.Exec(db.Rebind(`UPDATE threads SET health = ? WHERE id = ?`), healths[rng.IntN(4)], id); err != nil {
					t.Fatal(err)
				}
			case r < 15:
				// An update that changes no counted column (every step's).
				if _, err := db.Exec(db.Rebind(`UPDATE threads SET status = status, health = health, updated_at = ? WHERE id = ?`), sqldb.Time(now), id); err != nil {
					t.Fatal(err)
				}
			case r < 16:
				if _, err := db.Exec(db.Rebind(`UPDATE threads SET contract_version = ? WHERE id = ?`), 1+rng.IntN(3), id); err != nil {
					t.Fatal(err)
				}
			case r < 18:
				batch := []string{id}
				for k := rng.IntN(4); k > 0; k-- {
					batch = append(batch, ids[rng.IntN(len(ids))])
				}
				if _, err := store.DeleteThreads(ctx, batch); err != nil {
					t.Fatal(err)
				}
			default:
				if _, err := s.RollUp(ctx, now); err != nil {
					t.Fatal(err)
				}
				folds++
				var left int
				if err := db.Get(&left, `SELECT COUNT(*) FROM contract_stats_delta`); err != nil {
					t.Fatal(err)
				}
				if left != 0 {
					t.Fatalf("op %d: %d delta rows left after a fold", op, left)
				}
				// Folded, the totals are the count itself: a key whose
				// threads all changed or went has no row (not a 0 kept
				// forever).
				if got, want := totalRows(t, db), countOverThreads(t, db); !reflect.DeepEqual(got, want) {
					t.Fatalf("op %d: contract_stats_total after a fold\n got %v\nwant %v", op, got, want)
				}
			}
			if op%5 == 0 {
				check(fmt.Sprintf("op %d", op))
			}
		}
		check("after the random operations")
		if folds == 0 {
			t.Fatal("no fold ran")
		}
		if d != sqldb.Postgres {
			return
		}
		// Writers of one contract in parallel, each in its own
		// transactions, while folds run: none waits on a counter row and
		// no change is lost or counted twice.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					id := fmt.Sprintf("w%d-%03d", w, i)
					if _, err := db.ExecContext(ctx, `INSERT INTO threads (id, contract_id, contract_name, contract_version, owner_kind, owner_id, status,
 health, health_version, created_at, updated_at) VALUES ($1, 'hot', 'hot', 1, 'user', 'u1', 'active', 'OK', 1, now(), now())`, id); err != nil {
						errs <- err
						return
					}
					if _, err := db.ExecContext(ctx, `UPDATE threads SET status = $1, health = $2 WHERE id = $3`, statuses[1+i%3], healths[i%4], id); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := s.RollUp(ctx, now); err != nil {
					errs <- err
					return
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		check("after concurrent writers and folds")
		if _, err := s.RollUp(ctx, now); err != nil {
			t.Fatal(err)
		}
		check("folded")
		if got, want := totalRows(t, db), countOverThreads(t, db); !reflect.DeepEqual(got, want) {
			t.Fatalf("contract_stats_total after the concurrent folds\n got %v\nwant %v", got, want)
		}
	})
}
