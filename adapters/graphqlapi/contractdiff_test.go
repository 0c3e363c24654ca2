package graphqlapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
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
		res, status := h.Execute(ctx, Request{Query: `{ contractDiff(name: "wave", from: 1, to: 0) }`})
		raw, _ := json.Marshal(res)
		var out struct {
			Data struct{ ContractDiff string } `json:"data"`
		}
		_ = json.Unmarshal(raw, &out)
		want := `{"from":1,"to":2,"changes":[` +
			`{"part":"step","kind":"added","name":"pack","details":[]},` +
			`{"part":"transition","kind":"added","name":"pack → ship","details":[]},` +
			`{"part":"transition","kind":"added","name":"start → pack","details":[]},` +
			`{"part":"transition","kind":"removed","name":"start → ship","details":[]}]}`
		if status != 200 || out.Data.ContractDiff != want {
			t.Fatalf("status %d\n got %s\nwant %s", status, raw, want)
		}
		res, _ = h.Execute(ctx, Request{Query: `{ contractDiff(name: "wave", from: 2, to: 2) }`})
		if raw, _ := json.Marshal(res); !strings.Contains(string(raw), `\"changes\":[]`) {
			t.Fatalf("same version: %s", raw)
		}
		res, _ = h.Execute(ctx, Request{Query: `{ contractDiff(name: "wave", from: 1, to: 9) }`})
		if len(res.Errors) == 0 || res.Errors[0].Extensions["code"] != string(domain.CodeNotFound) {
			t.Fatalf("missing version: %+v", res)
		}
	})
}
