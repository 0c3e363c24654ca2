package abuse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
)

// gql posts one GraphQL operation and returns the status and the decoded body.
func (e *engine) gql(t testing.TB, key, query string, vars map[string]any) (int, gqlBody) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	st, body := e.do(t, http.MethodPost, "/graphql", key, bytes.NewReader(b))
	var out gqlBody
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("graphql answered %d %.200s", st, body)
	}
	return st, out
}

type gqlBody struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	Extensions map[string]any `json:"extensions"`
}

func (b gqlBody) code() any {
	if len(b.Errors) == 0 {
		return nil
	}
	return b.Errors[0].Extensions["code"]
}

// recordSteps records n steps on a new thread over one WebSocket.
func recordSteps(t *testing.T, e *engine, key string, n int) string {
	t.Helper()
	// A bound against a hang only: 2,000 sequential steps took over two
	// minutes on a machine busy with other work (load 35).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, err := dialWS(ctx, e.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.close()
	if _, err := ws.ok(ctx, map[string]any{"action": "connect", "apiKey": key, "serviceName": "long-service"}); err != nil {
		t.Fatal(err)
	}
	r, err := ws.ok(ctx, map[string]any{"action": "startThread", "refs": map[string]any{"orderId": "long"}})
	if err != nil {
		t.Fatal(err)
	}
	id := r["threadId"]
	for i := 0; i < n; i++ {
		if _, err := ws.ok(ctx, map[string]any{"action": "recordThreadEvent", "threadId": id, "stepName": fmt.Sprint("s", i),
			"status": "success", "context": map[string]any{"i": fmt.Sprint(i)}, "idempotencyKey": fmt.Sprint("k", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return id.(string)
}

// The GraphQL attacks of issue 14 points 1, 2 and 10, sent with a viewer key
// by four clients for a few seconds each: the fragment diamond, aliased
// hash-chain verification of a long thread, aliased introspection and
// nested steps under a full page of threads. Each is refused with
// COMPLEXITY_LIMIT_EXCEEDED while the engine stays small and responsive.
func TestGraphQLCostAttacks(t *testing.T) {
	t.Parallel()
	for _, d := range dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := start(t, d)
			member := e.serviceKey(t, "writer", "member")
			viewer := e.serviceKey(t, "reader", "viewer")
			// 500 steps: verifying them is priced 50 points (domain.VerifyStepsPerPoint),
			// so 25 aliases ask for 12,500 verified steps, over the 10,000 a
			// request may verify, and 1,325 points, over the 1,000 limit; their
			// steps with history are far over it too. 2,000 steps were a quarter of the package's time on
			// PostgreSQL (recorded one at a time) and proved nothing more.
			long := recordSteps(t, e, member, 500)
			normal, err := newNormalClient(e, e.serviceKey(t, "normal", "member"))
			if err != nil {
				t.Fatal(err)
			}
			defer normal.close()

			aliases := func(n int, field string) string {
				var b strings.Builder
				b.WriteString("{")
				for i := 0; i < n; i++ {
					fmt.Fprintf(&b, " a%d: %s", i, field)
				}
				return b.String() + " }"
			}
			verify := fmt.Sprintf(`verifyThreadIntegrity(threadId: %q) { verified totalEvents }`, long)
			attacks := []struct {
				name  string
				query string
				vars  map[string]any
			}{
				{"fragment diamond (1 KB)", graphqltest.Diamond(22), map[string]any{"id": long}},
				{"fragment diamond (2^40)", graphqltest.Diamond(40), map[string]any{"id": long}},
				{"400 aliased verifications", aliases(400, verify), nil},
				{"25 aliased verifications of 500 steps", aliases(25, verify), nil},
				{"50 aliased __schema", aliases(50, `__schema { types { name fields { name args { name } } } }`), nil},
				{"steps of a long thread", `query($id: ID!) { thread(id: $id) { steps { stepName status history(limit: 50) { attempt context } } } }`,
					map[string]any{"id": long}},
			}
			// Each attack alone: refused, and fast.
			for _, a := range attacks {
				start := time.Now()
				st, b := e.gql(t, viewer, a.query, a.vars)
				if st != http.StatusUnprocessableEntity || b.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
					t.Fatalf("%s: %d %+v", a.name, st, b.Errors)
				}
				t.Logf("%-40s refused in %v: %s", a.name, time.Since(start).Round(time.Millisecond), b.Errors[0].Message[:min(80, len(b.Errors[0].Message))])
			}
			// One verification of the long thread fits and is charged for it.
			st, b := e.gql(t, viewer, aliases(1, verify), nil)
			if st != http.StatusOK || len(b.Errors) > 0 || b.Extensions["cost"] != float64(1+50+2) {
				t.Fatalf("one verification: %d %+v %v", st, b.Errors, b.Extensions)
			}

			w := e.during(t, normal.round)
			var wg sync.WaitGroup
			until := time.Now().Add(4 * time.Second)
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					for n := i; time.Now().Before(until); n++ {
						a := attacks[n%len(attacks)]
						if st, b := e.gql(t, viewer, a.query, a.vars); st != http.StatusUnprocessableEntity || b.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
							t.Errorf("%s: %d %+v", a.name, st, b.Errors)
							return
						}
						// Paced: each refusal must be cheap, which a request
						// flood (a rate limit's business) would not show.
						time.Sleep(10 * time.Millisecond)
					}
				}(i)
			}
			wg.Wait()
			w.check(t, "GraphQL cost attacks ("+string(d)+")")
		})
	}
}
