package threadstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/domain"
)

// A thread created while its contract version is being deleted either is
// created first, and the deletion is refused as in use, or finds the
// version gone (not_found): never both, which would leave a thread whose
// contract no longer exists.
func TestContractVersionDeletionRacesThreadCreation(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		threads, contracts := threadstore.New(db), contractstore.New(db)
		ctx := context.Background()
		created, deleted := 0, 0
		for v := 1; v <= 30; v++ {
			src := fmt.Sprintf("contract_name: race\nversion: %d\nparties: [p]\nentry_points: [a]\nsteps:\n  - id: a\n    owner: p\nterminal_steps: [a]\n", v)
			c, err := domain.ParseContract([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if err := contracts.PutContractVersion(ctx, c, []byte(src), "u1", time.Now()); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			th := domain.Thread{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", v), ContractName: "race", ContractVersion: v,
				OwnerKind: string(domain.PrincipalUser), OwnerID: "u1", Status: domain.ThreadActive, CreatedAt: now, UpdatedAt: now}
			var createErr, deleteErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); createErr = threads.CreateThread(ctx, th, nil) }()
			go func() { defer wg.Done(); deleteErr = contracts.DeleteContractVersion(ctx, "race", v) }()
			wg.Wait()
			switch {
			case createErr == nil && domain.CodeOf(deleteErr) == domain.CodeContractVersionInUse:
				created++
			case domain.KindOf(createErr) == domain.KindNotFound && deleteErr == nil:
				deleted++
			default:
				t.Fatalf("version %d: create %v, delete %v", v, createErr, deleteErr)
			}
		}
		t.Logf("thread first %d times, deletion first %d times", created, deleted)
	})
}
