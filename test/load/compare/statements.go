package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
)

// statement is one SQL statement the engine ran for a GraphQL request, with
// its arguments.
type statement struct {
	SQL  string
	Args []any
}

// captureStatements runs each GraphQL request through the engine's own read
// path (threadquery → readmodel.Queries → graphqlapi) in this process against
// dbURL and records the statements the store sends, so pgbench replays
// exactly what the engine runs, not a hand-written copy that could drift.
func captureStatements(ctx context.Context, dbURL string, reqs map[string]graphqlapi.Request) (map[string][]statement, error) {
	db, err := sqldb.OpenAlongside(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	store := threadquery.New(db)
	defer store.Close()
	var (
		mu  sync.Mutex
		got []statement
	)
	store.OnQuery(func(q string, args []any) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, statement{SQL: q, Args: append([]any(nil), args...)})
	})
	h, err := graphqlapi.New(readmodel.New(readmodel.Deps{Store: store}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	admin := authz.WithPrincipal(ctx, domain.Principal{Kind: domain.PrincipalUser, ID: "compare", Role: domain.RoleAdmin})
	out := map[string][]statement{}
	for name, req := range reqs {
		mu.Lock()
		got = nil
		mu.Unlock()
		res, status := h.Execute(admin, req)
		if status != 200 || len(res.Errors) > 0 {
			return nil, fmt.Errorf("%s: HTTP %d %v", name, status, res.Errors)
		}
		mu.Lock()
		out[name] = got
		mu.Unlock()
	}
	return out, nil
}

var placeholder = regexp.MustCompile(`\$(\d+)`)

// pgbenchScript turns statements into a pgbench script (one transaction per
// request) and the -D definitions of its variables. Parameters become
// pgbench variables so -M prepared sends them as parameters, as the engine
// does; NULLs, which -D cannot express, are written inline.
func pgbenchScript(prefix string, stmts []statement) (string, []string) {
	var b strings.Builder
	var defs []string
	for i, st := range stmts {
		sql := placeholder.ReplaceAllStringFunc(st.SQL, func(m string) string {
			var n int
			fmt.Sscan(m[1:], &n)
			if n < 1 || n > len(st.Args) || st.Args[n-1] == nil {
				return "NULL"
			}
			return fmt.Sprintf(":%s%d_%d", prefix, i, n)
		})
		for n, a := range st.Args {
			if a != nil {
				defs = append(defs, fmt.Sprintf("%s%d_%d=%s", prefix, i, n+1, argText(a)))
			}
		}
		b.WriteString(strings.TrimSpace(sql))
		b.WriteString(";\n")
	}
	return b.String(), defs
}

func argText(a any) string {
	switch v := a.(type) {
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case *time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case []byte:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}
