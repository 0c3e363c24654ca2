package graphqlapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
)

const diffV1 = `contract_name: wave
version: 1
entry_points: [start]
steps:
  - id: start
  - id: ship
transitions:
  - {from: start, to: [ship]}
terminal_steps: [ship]
`

const diffV2 = `contract_name: wave
version: 2
entry_points: [start]
steps:
  - id: start
  - id: pack
  - id: ship
transitions:
  - {from: start, to: [pack]}
  - {from: pack, to: [ship]}
terminal_steps: [ship]
`

// TestContractDiffQuery: contractDiff reads both stored versions and
// answers the domain diff (a step added, its orders), on every store; a
// version that does not exist is not_found.
func TestContractDiffQuery(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		cs := contractstore.New(db)
		for _, src := range []string{diffV1, diffV2} {
			c, err := domain.ParseContract([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.PutContractVersion(context.Background(), c, []byte(src), "test", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		h, err := New(readmodel.New(readmodel.Deps{Store: threadquery.New(db), Contracts: cs}), log)
		if err != nil {
			t.Fatal(err)
		}
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u-viewer", Role: domain.RoleViewer})
		res, status := h.Execute(ctx, Request{Query: `{ contractDiff(name: "wave", from: 1, to: 0) { name from to same
			steps { kind name details } transitions { kind name } rules { kind name } settings { name details } } }`})
		raw, _ := json.Marshal(res)
		want := `{"data":{"contractDiff":{"name":"wave","from":1,"to":2,"same":false,` +
			`"steps":[{"kind":"added","name":"pack","details":[]}],` +
			`"transitions":[{"kind":"added","name":"pack → ship"},{"kind":"added","name":"start → pack"},{"kind":"removed","name":"start → ship"}],` +
			`"rules":[],"settings":[]}}`
		if status != 200 || len(raw) < len(want) || string(raw[:len(want)]) != want {
			t.Fatalf("status %d\n got %s\nwant %s", status, raw, want)
		}
		res, _ = h.Execute(ctx, Request{Query: `{ contractDiff(name: "wave", from: 1, to: 9) { same } }`})
		if len(res.Errors) == 0 || res.Errors[0].Extensions["code"] != string(domain.CodeNotFound) {
			t.Fatalf("missing version: %+v", res)
		}
	})
}
