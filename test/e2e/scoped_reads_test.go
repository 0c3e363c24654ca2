package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/adapters/mcpapi"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// newServiceKey creates a service account and its key through the REST API as
// the admin; scope "" leaves the default.
func newServiceKey(t *testing.T, e *enginetest.Engine, name, scope string) (key string, apiKey map[string]any) {
	t.Helper()
	sa := map[string]any{"name": name, "role": "member"}
	if scope != "" {
		sa["scope"] = scope
	}
	resp, body := e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{"name": name + "-key", "create_service_account": sa})
	wantStatus(t, resp, body, http.StatusCreated)
	out := decode[map[string]any](t, body)
	return out["key"].(string), out["api_key"].(map[string]any)
}

// scopedFixture: threads seen by a party-scoped service account ("scoped")
// and by everyone else. All carry ref case=S-1.
type scopedFixture struct {
	scopedKey, companyKey, memberKey string
	own, joined, other, expired      string
}

func setupScopedFixture(t *testing.T, e *enginetest.Engine) scopedFixture {
	t.Helper()
	var f scopedFixture
	f.scopedKey, _ = newServiceKey(t, e, "scoped-bot", "party")
	f.companyKey, _ = newServiceKey(t, e, "company-bot", "")
	_, f.memberKey = e.NewUser(t, domain.RoleMember)

	member := connectWS(t, e, f.memberKey)
	start := func(c *wsClient, label string) string {
		id := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{"label": label, "case": "S-1", "who": label}})["threadId"].(string)
		c.ok(step(id, "pack", "success", "k-"+label, map[string]any{"n": "1"}))
		e.Clock.Advance(time.Second) // newest first is well defined
		return id
	}
	f.other = start(member, "other")
	f.joined = start(member, "joined")
	f.expired = start(member, "expired")
	invite := func(threadID, expiresIn string) string {
		r := member.ok(map[string]any{"action": "inviteParty", "threadId": threadID, "role": "carrier", "accessLevel": "participant", "expiresIn": expiresIn})
		return r["threadToken"].(string)
	}
	joinTok, expTok := invite(f.joined, "24h"), invite(f.expired, "1m")

	scoped := connectWS(t, e, f.scopedKey)
	f.own = start(scoped, "own")
	scoped.ok(map[string]any{"action": "joinThread", "threadToken": joinTok})
	scoped.ok(map[string]any{"action": "joinThread", "threadToken": expTok})
	// Links to threads the scoped account may not see are dropped from its reads.
	scoped.ok(map[string]any{"action": "addRefs", "threadId": f.own, "refs": map[string]any{"linkedThread:next": f.other, "linkedThread:joined": f.joined}})
	member.ok(map[string]any{"action": "addRefs", "threadId": f.other, "refs": map[string]any{"linkedThread:own": f.own}})
	// The one-minute invitation's grant expires.
	e.Clock.Advance(2 * time.Minute)
	return f
}

func gqlIDs(v any) []string {
	var ids []string
	list, _ := v.([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			ids = append(ids, m["id"].(string))
		}
	}
	slices.Sort(ids)
	return ids
}

// dig walks maps (string keys) and lists (int keys) of decoded JSON.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// A party-scoped service account reads only the threads it is a party of —
// started, or joined with a grant that has not expired — through GraphQL
// (roots and nested links), MCP, the UI's session and the WebSocket; every
// other thread answers exactly like one that does not exist. Humans and
// unscoped service accounts read every thread.
func TestScopedReads(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		f := setupScopedFixture(t, e)
		const missing = "00000000-0000-4000-8000-000000000000"
		all := sorted(f.own, f.joined, f.other, f.expired)
		mine := sorted(f.own, f.joined)

		t.Run("REST shows the scope", func(t *testing.T) {
			resp, body := e.Do(t, http.MethodGet, "/v1/api-keys", e.AdminKey, nil)
			wantStatus(t, resp, body, http.StatusOK)
			scopes := map[string]string{}
			for _, k := range decode[map[string][]map[string]any](t, body)["api_keys"] {
				if sa, ok := k["service_account"].(map[string]any); ok {
					scopes[sa["name"].(string)] = sa["scope"].(string)
				}
			}
			if scopes["scoped-bot"] != "party" || scopes["company-bot"] != "company" {
				t.Fatalf("key list scopes %v", scopes)
			}
			resp, body = e.Do(t, http.MethodGet, "/v1/service-accounts", e.AdminKey, nil)
			wantStatus(t, resp, body, http.StatusOK)
			if sas := decode[map[string][]map[string]any](t, body)["service_accounts"]; len(sas) != 2 {
				t.Fatalf("service accounts %v", sas)
			}
			resp, body = e.Do(t, http.MethodGet, "/v1/service-accounts", f.memberKey, nil)
			wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
			resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{"name": "x",
				"create_service_account": map[string]any{"name": "x", "scope": "own"}})
			if p := wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed"); !strings.Contains(string(body), "scope") {
				t.Fatalf("bad scope: %+v", p)
			}
		})

		t.Run("GraphQL", func(t *testing.T) {
			q := `query($id: ID!, $other: ID!, $sid: String!) {
			  one: thread(id: $id) { id threadChain { id } steps { stepName } notificationSummary { totalNotifications } }
			  other: thread(id: $other) { id }
			  threads { totalCount threads { id } }
			  byRef: threadsByRef(refValue: "S-1") { totalCount threads { id } }
			  chainOwn: threadChain(rootId: $id) { id }
			  chainOther: threadChain(rootId: $other) { id }
			  history: stepHistory(threadId: $sid, stepName: "pack") { status }
			  validations: validationResults(threadId: $sid, stepName: "pack", idempotencyKey: "k-other") { validationId }
			}`
			vars := map[string]any{"id": f.own, "other": f.other, "sid": f.other}
			for _, c := range []struct {
				who, key string
				sees     []string
				chainOwn []string
			}{
				{"party-scoped service account", f.scopedKey, mine, sorted(f.own, f.joined)},
				{"company service account", f.companyKey, all, sorted(f.own, f.other, f.joined)},
				{"member", f.memberKey, all, sorted(f.own, f.other, f.joined)},
			} {
				status, r, body := gqlPost(t, e, c.key, q, vars)
				if status != 200 || len(r.Errors) > 0 {
					t.Fatalf("%s: %d %s", c.who, status, body)
				}
				d := r.Data
				scoped := c.key == f.scopedKey
				if got := gqlIDs(dig(d, "threads", "threads")); !slices.Equal(got, c.sees) || dig(d, "threads", "totalCount") != float64(len(c.sees)) {
					t.Errorf("%s: threads %v (total %v), want %v", c.who, got, dig(d, "threads", "totalCount"), c.sees)
				}
				if got := gqlIDs(dig(d, "byRef", "threads")); !slices.Equal(got, c.sees) || dig(d, "byRef", "totalCount") != float64(len(c.sees)) {
					t.Errorf("%s: threadsByRef %v, want %v", c.who, got, c.sees)
				}
				if got := gqlIDs(dig(d, "one", "threadChain")); !slices.Equal(got, c.chainOwn) {
					t.Errorf("%s: nested threadChain %v, want %v", c.who, got, c.chainOwn)
				}
				if got := gqlIDs(dig(d, "chainOwn")); !slices.Equal(got, c.chainOwn) {
					t.Errorf("%s: threadChain(own) %v, want %v", c.who, got, c.chainOwn)
				}
				if dig(d, "one", "steps", 0, "stepName") != "pack" || dig(d, "one", "notificationSummary") == nil {
					t.Errorf("%s: own thread's nested reads %v", c.who, d["one"])
				}
				hist, _ := d["history"].([]any)
				if scoped {
					if d["other"] != nil || len(hist) != 0 || len(gqlIDs(d["chainOther"])) != 0 {
						t.Errorf("scoped account reads the other thread: %v / %v / %v", d["other"], hist, d["chainOther"])
					}
				} else if dig(d, "other", "id") != f.other || len(hist) != 1 || len(gqlIDs(d["chainOther"])) != 3 {
					t.Errorf("%s: other thread %v, history %v, chain %v", c.who, d["other"], hist, d["chainOther"])
				}
			}
			// Not visible answers like missing, error for error.
			verify := `query($id: String!){ verifyThreadIntegrity(threadId: $id) { verified } }`
			_, hidden, _ := gqlPost(t, e, f.scopedKey, verify, map[string]any{"id": f.other})
			_, absent, _ := gqlPost(t, e, f.scopedKey, verify, map[string]any{"id": missing})
			if len(hidden.Errors) != 1 || len(absent.Errors) != 1 ||
				strings.ReplaceAll(hidden.Errors[0].Message, f.other, missing) != absent.Errors[0].Message ||
				hidden.Errors[0].Extensions["code"] != absent.Errors[0].Extensions["code"] {
				t.Errorf("verify hidden %+v, missing %+v", hidden.Errors, absent.Errors)
			}
			_, own, body := gqlPost(t, e, f.scopedKey, verify, map[string]any{"id": f.own})
			if len(own.Errors) != 0 {
				t.Errorf("verify own: %s", body)
			}
		})

		t.Run("MCP", func(t *testing.T) {
			cs := mustConnect(t, e, f.scopedKey)
			var got mcpapi.GetThreadOutput
			wantResult(t, mcpapi.ToolGetThread, callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"thread_id": f.own}), &got)
			var linked []string
			for _, l := range got.LinkedThreads {
				linked = append(linked, l.ID)
			}
			if got.Thread.ID != f.own || slices.Contains(linked, f.other) || !slices.Contains(linked, f.joined) {
				t.Errorf("get_thread own: %+v, linked %v", got.Thread, linked)
			}
			hidden := resultText(callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"thread_id": f.other}))
			absent := resultText(callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"thread_id": missing}))
			if !strings.Contains(hidden, "not_found") || strings.ReplaceAll(hidden, f.other, missing) != absent {
				t.Errorf("get_thread hidden %q, missing %q", hidden, absent)
			}
			wantToolError(t, mcpapi.ToolGetThread, callTool(t, cs, mcpapi.ToolGetThread, map[string]any{"ref_key": "who", "ref_value": "other"}), "not_found")
			var page mcpapi.SearchThreadsOutput
			wantResult(t, mcpapi.ToolSearchThreads, callTool(t, cs, mcpapi.ToolSearchThreads, map[string]any{"ref_value": "S-1"}), &page)
			var ids []string
			for _, th := range page.Threads {
				ids = append(ids, th.ID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, mine) || page.TotalCount != len(mine) {
				t.Errorf("search_threads %v (total %d), want %v", ids, page.TotalCount, mine)
			}
			// graphql_query goes through the same reads.
			res := callTool(t, cs, mcpapi.ToolGraphQLQuery, map[string]any{"query": `{ threads { totalCount } }`})
			if txt := resultText(res); res.IsError || !strings.Contains(txt, `"totalCount":2`) {
				t.Errorf("graphql_query: %s", txt)
			}
		})

		t.Run("UI session", func(t *testing.T) {
			ck := exchange(t, e, f.scopedKey)
			if info := sessionInfo(t, e, ck); dig(info, "user", "scope") != "party" {
				t.Errorf("session does not show the scope: %v", info)
			}
			resp, body := e.DoWith(t, http.MethodPost, "/graphql", map[string]any{"query": `{ threads { totalCount threads { id } } }`}, withCookie(ck, e.URL))
			wantStatus(t, resp, body, http.StatusOK)
			var r gqlResult
			_ = json.Unmarshal(body, &r)
			d := r.Data
			if got := gqlIDs(dig(d, "threads", "threads")); !slices.Equal(got, mine) {
				t.Errorf("UI threads %v, want %v", got, mine)
			}
		})

		t.Run("WebSocket", func(t *testing.T) {
			scoped := connectWS(t, e, f.scopedKey)
			hidden := scoped.call(map[string]any{"action": "joinThread", "threadId": f.other})
			absent := scoped.call(map[string]any{"action": "joinThread", "threadId": missing})
			if hidden["status"] != "error" || hidden["code"] != "not_found" || hidden["message"] != absent["message"] {
				t.Errorf("join by id: hidden %v, missing %v", hidden, absent)
			}
			// Writes by id answer the same: the thread does not exist for it.
			for _, w := range []map[string]any{
				step(f.other, "probe", "success", "probe-1", nil),
				{"action": "addRefs", "requestId": "r", "threadId": f.other, "refs": map[string]any{"probe": "1"}},
				{"action": "threadEnd", "requestId": "e", "threadId": f.other, "status": "cancelled"},
			} {
				w2 := map[string]any{}
				for k, v := range w {
					w2[k] = v
				}
				w2["threadId"] = missing
				hidden, absent := scoped.call(w), scoped.call(w2)
				if hidden["code"] != "not_found" || hidden["message"] != absent["message"] {
					t.Errorf("%s on a hidden thread: %v; on a missing one: %v", w["action"], hidden, absent)
				}
			}
			// By id, the threads it is a party of can still be joined.
			scoped.ok(map[string]any{"action": "joinThread", "threadId": f.own})
			scoped.ok(map[string]any{"action": "joinThread", "threadId": f.joined})
			// A company-scoped account reads every thread (above), but joining
			// by id — becoming a party — needs an invitation like anyone who
			// does not own the thread (issue 13's party rules).
			company := connectWS(t, e, f.companyKey)
			if r := company.call(map[string]any{"action": "joinThread", "threadId": f.other}); r["code"] != "not_a_party" {
				t.Errorf("company account joins by id: %v", r)
			}
			// Pushes: only for its threads.
			scoped.ok(map[string]any{"action": "subscribe", "requestId": "s", "stepName": "ship", "eventTypes": []string{"step.success"}})
			member := connectWS(t, e, f.memberKey)
			member.ok(step(f.other, "ship", "success", "ship-other", nil))
			scoped.noPush(500 * time.Millisecond)
			member.ok(step(f.joined, "ship", "success", "ship-joined", nil))
			if n := scoped.push(5 * time.Second); dig(n, "notification", "threadId") != f.joined {
				t.Errorf("push %v", n)
			}
		})
	})
}

// OTLP with a party-scoped key neither resumes nor probes another
// principal's thread: a trace id already used elsewhere starts the account's
// own thread, and a threadify.thread_id it may not see is refused exactly
// like an unknown one.
func TestScopedOTLP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, memberKey := e.NewUser(t, domain.RoleMember)
		scopedKey, _ := newServiceKey(t, e, "scoped-otel", "party")
		body, _ := proto.Marshal(traceReq(0xcd, "Order-1"))
		for _, key := range []string{memberKey, scopedKey} {
			if code, b := otlpPost(t, e, key, "application/x-protobuf", body, false); code != http.StatusOK {
				t.Fatalf("post: %d %s", code, b)
			}
		}
		db := e.Server.DB
		var owners []string
		if err := db.Select(&owners, db.Rebind(`SELECT t.owner_id FROM threads t JOIN thread_refs r ON r.thread_id = t.id
 WHERE r.ref_key = 'otel_trace_id' AND r.ref_value = ? ORDER BY t.created_at`), strings.Repeat("cd", 16)); err != nil {
			t.Fatal(err)
		}
		if len(owners) != 2 || owners[0] == owners[1] {
			t.Fatalf("threads for the trace owned by %v, want the member's and the scoped account's", owners)
		}
		var memberThread string
		if err := db.Get(&memberThread, db.Rebind(`SELECT t.id FROM threads t JOIN thread_refs r ON r.thread_id = t.id
 WHERE r.ref_key = 'otel_trace_id' AND r.ref_value = ? AND t.owner_id = ?`), strings.Repeat("cd", 16), owners[0]); err != nil {
			t.Fatal(err)
		}
		reject := func(threadID string) string {
			js := `{"resourceSpans":[{"resource":{"attributes":[{"key":"threadify.thread_id","value":{"stringValue":"` + threadID + `"}}]},
 "scopeSpans":[{"spans":[{"traceId":"` + strings.Repeat("ee", 16) + `","spanId":"0505050505050505","name":"probe"}]}]}]}`
			code, b := otlpPost(t, e, scopedKey, "application/json", []byte(js), false)
			if code != http.StatusOK || !strings.Contains(string(b), `"rejectedSpans":"1"`) {
				t.Fatalf("span on %s: %d %s", threadID, code, b)
			}
			return string(b)
		}
		if hidden, absent := reject(memberThread), reject("00000000-0000-4000-8000-000000000000"); hidden != absent {
			t.Errorf("hidden thread %s, unknown thread %s", hidden, absent)
		}
		var n int
		if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE thread_id = ?`), memberThread); err != nil || n != 2 {
			t.Errorf("member's thread has %d activities (%v), want its own 2", n, err)
		}
	})
}
