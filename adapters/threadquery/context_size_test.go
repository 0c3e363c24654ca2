package threadquery_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

// An attempt's context size is written with it (context_bytes, migration
// 00105) and the list cap and the export bound read it instead of the
// context (issue 25: on PostgreSQL sizing a context serialized it whole);
// a row without it (written by the previous release) is sized from its
// context as before. Each check fails when the readers size the context
// itself (the first) or read only the column (the second).
func TestContextSizeIsWrittenAndRead(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		th := threads.New(threadstore.New(db), nil, nil, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
		a, err := graphqltest.SeedThread(ctx, th, "a", 2) // three attempts with small contexts
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		if err := db.SelectContext(ctx, &ids, db.Rebind(`SELECT id FROM thread_activities WHERE thread_id = ? ORDER BY seq`), a.ID); err != nil || len(ids) != 3 {
			t.Fatalf("attempts %v %v", ids, err)
		}
		// Written: the size of the context's JSON.
		var unsized int
		if err := db.GetContext(ctx, &unsized, db.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ? AND (context_bytes IS NULL OR context_bytes < 10)`), a.ID); err != nil || unsized != 0 {
			t.Fatalf("%d attempts written without their context's size (%v)", unsized, err)
		}
		// Read instead of the context: a size of a million on a small one.
		if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE thread_activities SET context_bytes = 1000000 WHERE id = ?`), ids[0]); err != nil {
			t.Fatal(err)
		}
		// A previous release's row: no size, a context over the cap.
		big := `{"blob":"` + strings.Repeat("x", 300) + `"}`
		if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE thread_activities SET context_bytes = NULL, context = ? WHERE id = ?`), big, ids[1]); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)
		s.SetListContextBytes(200)
		att, err := s.Attempts(ctx, []string{a.ID}, 10, 0)
		if err != nil || len(att[a.ID]) != 3 {
			t.Fatalf("attempts %+v %v", att, err)
		}
		got := map[string]string{}
		for _, x := range att[a.ID] {
			got[x.ID] = x.Context
		}
		if got[ids[0]] != threadquery.TruncatedContext(1000000) {
			t.Errorf("the attempt sized a million: %s", got[ids[0]])
		}
		if !strings.Contains(got[ids[1]], `"$truncated":true`) || strings.Contains(got[ids[1]], "xxx") {
			t.Errorf("the unsized attempt over the cap: %.100s", got[ids[1]])
		}
		if !strings.Contains(got[ids[2]], `"orderId"`) {
			t.Errorf("the small attempt: %s", got[ids[2]])
		}
		// The export's bound counts the written size.
		stored, err := s.StoredBytes(ctx, []string{a.ID})
		if err != nil || stored[a.ID] < 1000000 {
			t.Fatalf("stored bytes %v %v", stored, err)
		}
	})
}
