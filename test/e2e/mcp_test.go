package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// bearerTransport adds the API key to every request the MCP client sends,
// the way an MCP client configured with an Authorization header does.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect opens an MCP client session over streamable HTTP with key.
// protocol "" negotiates the SDK's newest protocol version.
func mcpConnect(t testing.TB, e *enginetest.Engine, key, protocol string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), answerBound)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	cs, err := c.Connect(ctx, tr, opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

func mustConnect(t testing.TB, e *enginetest.Engine, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpConnect(t, e, key, "")
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	return cs
}

// callTool calls a tool; a protocol-level failure fails the test (tools
// report problems as results with IsError, never as protocol errors).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerBound)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wantResult decodes a successful tool result's structured content into out.
func wantResult(t *testing.T, name string, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", name, b, err)
	}
}

// wantToolError checks a tool failed as a tool (IsError) with the code.
func wantToolError(t *testing.T, name string, res *mcp.CallToolResult, code string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("%s: want a tool error %s, got success: %s", name, code, resultText(res))
	}
	if txt := resultText(res); !strings.Contains(txt, code) {
		t.Fatalf("%s: error %q does not mention %s", name, txt, code)
	}
}

// mcpFixture is the data the MCP tests read: an order thread with a retried
// step, a child thread linked to it, and a second unrelated thread.
type mcpFixture struct {
	member       domain.User
	memberKey    string
	viewerKey    string
	order, child string
	// governed follows contract "checkout" and broke it: ship right after
	// receive_order, skipping charge_card.
	governed string
}

// mcpContract governs the "checkout" threads of the fixture.
const mcpContract = `contract_name: checkout
version: 1
description: Take an order, charge it, ship it
entry_points: [receive_order]
parties: [shop]
steps:
  - id: receive_order
    owner: shop
    business_context: {required: [amount]}
  - id: charge_card
    owner: shop
    timeout: 30s
  - id: ship
    owner: shop
transitions:
  - {from: receive_order, to: charge_card}
  - {from: charge_card, to: ship, max_retries: 2}
terminal_steps: [ship]
validation: {max_duration: 1h}
`

func setupMCPFixture(t testing.TB, e *enginetest.Engine) mcpFixture {
	t.Helper()
	member, memberKey := e.NewUser(t, domain.RoleMember)
	_, viewerKey := e.NewUser(t, domain.RoleViewer)
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: member.ID, Role: domain.RoleMember})
	th := e.Server.Threads
	child, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Label: "shipment", ServiceName: "shipping", Refs: map[string]string{"order_id": "A-1042-ship"}})
	if err != nil {
		t.Fatal(err)
	}
	// The clock moves between threads so "newest first" is well defined.
	e.Clock.Advance(time.Second)
	order, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Label: "order A-1042", ServiceName: "checkout",
		Refs: map[string]string{"order_id": "A-1042", "linkedThread:shipment": child.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []threads.RecordStepInput{
		{StepName: "receive_order", Status: "success", IdempotencyKey: "k1", Context: map[string]string{"amount": "42"}},
		{StepName: "charge_card", Status: "failed", IdempotencyKey: "k2", Context: map[string]string{"card": "visa"}, Metadata: map[string]any{"error": "card declined"}},
		{StepName: "charge_card", Status: "failed", IdempotencyKey: "k2", Context: map[string]string{"card": "visa"}, Metadata: map[string]any{"error": "card declined"}},
	} {
		s.ThreadID = order.ID
		s.ServiceName = "billing-svc"
		if _, err := th.Application().Commands.RecordStep.Handle(ctx, s); err != nil {
			t.Fatalf("record %s: %v", s.StepName, err)
		}
	}
	e.Clock.Advance(time.Second)
	if _, err := e.Server.Contracts.Commands.Publish.Handle(ctx, contracts.Publish{Source: []byte(mcpContract)}); err != nil {
		t.Fatalf("upload contract: %v", err)
	}
	governed, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Contract: "checkout", Role: "shop", Refs: map[string]string{"order_id": "C-9"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []threads.RecordStepInput{
		{StepName: "receive_order", Status: "success", IdempotencyKey: "k1", Context: map[string]string{"amount": "42"}},
		// The contract allows only charge_card after receive_order.
		{StepName: "ship", Status: "success", IdempotencyKey: "k3", Context: map[string]string{"carrier": "ups"}},
	} {
		s.ThreadID = governed.ID
		if _, err := th.Application().Commands.RecordStep.Handle(ctx, s); err != nil {
			t.Fatalf("record %s: %v", s.StepName, err)
		}
	}
	e.Clock.Advance(time.Second)
	if _, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Label: "other", Refs: map[string]string{"order_id": "B-7"}}); err != nil {
		t.Fatal(err)
	}
	return mcpFixture{member: member, memberKey: memberKey, viewerKey: viewerKey, order: order.ID, child: child.ID, governed: governed.ID}
}

func TestMCPEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		fx := setupMCPFixture(t, e)
		// A viewer key reads everything the tools expose.
		cs := mustConnect(t, e, fx.viewerKey)
		ctx := context.Background()

		t.Run("lists tools, resources and prompts", func(t *testing.T) {
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
				if tl.Description == "" || tl.InputSchema == nil {
					t.Errorf("tool %s has no description or input schema", tl.Name)
				}
			}
			slices.Sort(names)
			want := []string{"can", "contract_graph", "get_thread", "graphql_query", "next", "resolve_actors", "search_threads", "should", "verify_thread_integrity"}
			if !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			res, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Resources) != 1 || res.Resources[0].URI != "graphql://schema" {
				t.Fatalf("resources %+v", res.Resources)
			}
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "graphql://schema"})
			if err != nil {
				t.Fatal(err)
			}
			if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "type Query") {
				t.Fatalf("schema resource does not hold the SDL: %+v", read.Contents)
			}
			prompts, err := cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var pnames []string
			for _, p := range prompts.Prompts {
				pnames = append(pnames, p.Name)
			}
			slices.Sort(pnames)
			if want := []string{"analyze_workflow", "debug_silent_failure", "verify_process_integrity"}; !slices.Equal(pnames, want) {
				t.Fatalf("prompts %v, want %v", pnames, want)
			}
		})

		t.Run("prompts render with their arguments and refuse missing ones", func(t *testing.T) {
			for _, p := range []struct {
				name string
				args map[string]string
				want []string
			}{
				{"debug_silent_failure", map[string]string{"thread_id": fx.order}, []string{fx.order, "get_thread", "contract_graph", "terminal"}},
				{"debug_silent_failure", map[string]string{"ref": "order_id=A-1042"}, []string{`ref_key "order_id"`, `ref_value "A-1042"`}},
				{"verify_process_integrity", map[string]string{"thread_id": fx.order}, []string{"verify_thread_integrity", fx.order}},
				{"analyze_workflow", map[string]string{"contract_name": "orders", "contract_version": "2"}, []string{"search_threads", `"orders"`, "version 2"}},
			} {
				got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.name, Arguments: p.args})
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				text := got.Messages[0].Content.(*mcp.TextContent).Text
				for _, w := range p.want {
					if !strings.Contains(text, w) {
						t.Errorf("%s: prompt lacks %q:\n%s", p.name, w, text)
					}
				}
			}
			for _, name := range []string{"debug_silent_failure", "verify_process_integrity", "analyze_workflow"} {
				if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name}); err == nil {
					t.Errorf("%s without arguments: want an error", name)
				}
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "analyze_workflow",
				Arguments: map[string]string{"contract_name": "orders", "sample_size": "all of them"}}); err == nil {
				t.Error("analyze_workflow with a non-numeric sample_size: want an error")
			}
		})

		t.Run("get_thread by id and by reference", func(t *testing.T) {
			var got struct {
				Thread struct {
					ID        string            `json:"id"`
					Status    string            `json:"status"`
					OwnerID   string            `json:"owner_id"`
					OwnerKind string            `json:"owner_kind"`
					Refs      map[string]string `json:"refs"`
					StepCount int               `json:"step_count"`
				} `json:"thread"`
				Steps []struct {
					StepName   string `json:"step_name"`
					Status     string `json:"status"`
					RetryCount int    `json:"retry_count"`
					Context    any    `json:"context"`
				} `json:"steps"`
				LinkedThreads []struct {
					ID string `json:"id"`
				} `json:"linked_threads"`
				NotificationSummary struct {
					Total int `json:"total"`
				} `json:"notification_summary"`
				OtherMatches int `json:"other_matches"`
			}
			wantResult(t, "get_thread", callTool(t, cs, "get_thread", map[string]any{"thread_id": fx.order}), &got)
			if got.Thread.ID != fx.order || got.Thread.Status != "active" || got.Thread.OwnerID != fx.member.ID || got.Thread.OwnerKind != "user" {
				t.Fatalf("thread %+v", got.Thread)
			}
			if got.Thread.Refs["order_id"] != "A-1042" {
				t.Fatalf("refs %v", got.Thread.Refs)
			}
			if len(got.Steps) != 2 || got.Steps[0].StepName != "receive_order" || got.Steps[1].StepName != "charge_card" ||
				got.Steps[1].Status != "failed" || got.Steps[1].RetryCount != 1 {
				t.Fatalf("steps %+v", got.Steps)
			}
			if len(got.LinkedThreads) != 1 || got.LinkedThreads[0].ID != fx.child {
				t.Fatalf("linked threads %+v, want the shipment %s", got.LinkedThreads, fx.child)
			}

			// The exact value wins over the substring match on A-1042-ship.
			got.OtherMatches = 0
			wantResult(t, "get_thread", callTool(t, cs, "get_thread", map[string]any{"ref_key": "order_id", "ref_value": "A-1042"}), &got)
			if got.Thread.ID != fx.order || got.OtherMatches != 1 {
				t.Fatalf("by ref: thread %s other_matches %d, want %s and 1", got.Thread.ID, got.OtherMatches, fx.order)
			}
		})

		t.Run("search_threads", func(t *testing.T) {
			var got struct {
				Threads []struct {
					ID   string            `json:"id"`
					Refs map[string]string `json:"refs"`
				} `json:"threads"`
				TotalCount int  `json:"total_count"`
				HasMore    bool `json:"has_more"`
			}
			// Case-insensitive substring: both the order and its shipment
			// match, newest (the order) first.
			wantResult(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{"ref_key": "order_id", "ref_value": "a-1042"}), &got)
			if got.TotalCount != 2 || len(got.Threads) != 2 || got.Threads[0].ID != fx.order || got.Threads[1].ID != fx.child {
				t.Fatalf("search by ref: %+v", got)
			}
			wantResult(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{"limit": 1}), &got)
			if got.TotalCount != 4 || len(got.Threads) != 1 || !got.HasMore {
				t.Fatalf("page of 1: %+v", got)
			}
			wantResult(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{"status": "completed"}), &got)
			if got.TotalCount != 0 || len(got.Threads) != 0 {
				t.Fatalf("completed: %+v", got)
			}
			wantResult(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{"contract_name": "checkout", "contract_version": 1, "status": "failed"}), &got)
			if got.TotalCount != 1 || got.Threads[0].ID != fx.governed {
				t.Fatalf("failed checkout threads: %+v", got)
			}
		})

		t.Run("resolve_actors", func(t *testing.T) {
			var got struct {
				Actors []struct {
					ID, Name, Type string
				} `json:"actors"`
				Unresolved []string `json:"unresolved"`
			}
			wantResult(t, "resolve_actors", callTool(t, cs, "resolve_actors", map[string]any{"ids": []string{fx.member.ID, e.Admin.ID, "billing-svc"}}), &got)
			if len(got.Actors) != 2 || got.Actors[0].ID != fx.member.ID || got.Actors[0].Type != "user" || got.Actors[0].Name != fx.member.FullName ||
				got.Actors[1].Name != "Owner" {
				t.Fatalf("actors %+v", got.Actors)
			}
			if !slices.Equal(got.Unresolved, []string{"billing-svc"}) {
				t.Fatalf("unresolved %v", got.Unresolved)
			}
		})

		t.Run("verify_thread_integrity detects tampering", func(t *testing.T) {
			var got struct {
				Verified    bool   `json:"verified"`
				TotalEvents int    `json:"total_events"`
				Error       string `json:"error"`
				BrokenAt    string `json:"broken_at"`
			}
			wantResult(t, "verify_thread_integrity", callTool(t, cs, "verify_thread_integrity", map[string]any{"thread_id": fx.order}), &got)
			if !got.Verified || got.TotalEvents != 3 {
				t.Fatalf("intact thread: %+v", got)
			}
			db := e.Server.DB
			if _, err := db.Exec(db.Rebind(`UPDATE thread_activities SET context = ? WHERE thread_id = ? AND step_name = ?`),
				`{"amount":"4200"}`, fx.order, "receive_order"); err != nil {
				t.Fatal(err)
			}
			wantResult(t, "verify_thread_integrity", callTool(t, cs, "verify_thread_integrity", map[string]any{"thread_id": fx.order}), &got)
			if got.Verified || got.Error == "" || got.BrokenAt == "" {
				t.Fatalf("tampered thread: %+v", got)
			}
		})

		t.Run("contract_graph and a thread that broke its contract", func(t *testing.T) {
			var g struct {
				Name          string   `json:"name"`
				Version       int      `json:"version"`
				EntryPoints   []string `json:"entry_points"`
				TerminalSteps []string `json:"terminal_steps"`
				MaxDuration   string   `json:"max_duration"`
				Steps         []struct {
					Name            string   `json:"name"`
					Owner           string   `json:"owner"`
					Next            []string `json:"next"`
					MaxRetries      int      `json:"max_retries"`
					Timeout         string   `json:"timeout"`
					RequiredContext []string `json:"required_context"`
					EntryPoint      bool     `json:"entry_point"`
					Terminal        bool     `json:"terminal"`
				} `json:"steps"`
			}
			wantResult(t, "contract_graph", callTool(t, cs, "contract_graph", map[string]any{"name": "checkout"}), &g)
			if g.Name != "checkout" || g.Version != 1 || !slices.Equal(g.EntryPoints, []string{"receive_order"}) ||
				!slices.Equal(g.TerminalSteps, []string{"ship"}) || g.MaxDuration != "1h0m0s" || len(g.Steps) != 3 {
				t.Fatalf("graph %+v", g)
			}
			recv, charge, ship := g.Steps[0], g.Steps[1], g.Steps[2]
			if !recv.EntryPoint || !slices.Equal(recv.Next, []string{"charge_card"}) || !slices.Equal(recv.RequiredContext, []string{"amount"}) ||
				charge.Timeout != "30s" || charge.MaxRetries != 2 || !slices.Equal(charge.Next, []string{"ship"}) ||
				!ship.Terminal || len(ship.Next) != 0 || ship.Owner != "shop" {
				t.Fatalf("steps %+v", g.Steps)
			}
			wantResult(t, "contract_graph", callTool(t, cs, "contract_graph", map[string]any{"name": "checkout", "version": 1}), &g)
			wantToolError(t, "contract_graph", callTool(t, cs, "contract_graph", map[string]any{"name": "checkout", "version": 2}), "not_found")
			wantToolError(t, "contract_graph", callTool(t, cs, "contract_graph", map[string]any{"name": "no-such-contract"}), "not_found")

			var th struct {
				Thread struct {
					Status          string `json:"status"`
					ContractName    string `json:"contract_name"`
					ContractVersion int    `json:"contract_version"`
				} `json:"thread"`
				Validations []struct {
					StepName      string `json:"step_name"`
					CriticalCount int    `json:"critical_count"`
					Issues        any    `json:"issues"`
				} `json:"validations"`
			}
			res := callTool(t, cs, "get_thread", map[string]any{"thread_id": fx.governed})
			wantResult(t, "get_thread", res, &th)
			if th.Thread.Status != "failed" || th.Thread.ContractName != "checkout" || th.Thread.ContractVersion != 1 {
				t.Fatalf("governed thread %+v", th.Thread)
			}
			var shipViolation bool
			for _, v := range th.Validations {
				shipViolation = shipViolation || v.StepName == "ship" && v.CriticalCount > 0
			}
			if !shipViolation || !strings.Contains(resultText(res), "invalid_transition") {
				t.Fatalf("the skipped charge_card is not reported as a critical invalid_transition: %s", resultText(res))
			}
		})

		t.Run("graphql_query shares the GraphQL API and its complexity limit", func(t *testing.T) {
			res := callTool(t, cs, "graphql_query", map[string]any{
				"query": `query($id: ID!) { thread(id: $id) { id status } }`, "variables": map[string]any{"id": fx.order}})
			var got struct {
				Data struct {
					Thread struct{ ID, Status string } `json:"thread"`
				} `json:"data"`
			}
			wantResult(t, "graphql_query", res, &got)
			if got.Data.Thread.ID != fx.order || got.Data.Thread.Status != "active" {
				t.Fatalf("graphql_query: %s", resultText(res))
			}
			big := `{ threads(limit: 100) { threads { id notifications(options: { limit: 100 }) { message } } } }`
			wantToolError(t, "graphql_query", callTool(t, cs, "graphql_query", map[string]any{"query": big}), "COMPLEXITY_LIMIT_EXCEEDED")
			diamond := graphqltest.Diamond(40)
			wantToolError(t, "graphql_query", callTool(t, cs, "graphql_query", map[string]any{"query": diamond,
				"variables": map[string]any{"id": fx.order}}), "COMPLEXITY_LIMIT_EXCEEDED")
			wantToolError(t, "graphql_query", callTool(t, cs, "graphql_query", map[string]any{"query": "{ nope"}), "errors")
		})

		t.Run("bad arguments are tool errors and the session survives", func(t *testing.T) {
			for _, c := range []struct {
				tool string
				args any
				code string
			}{
				{"get_thread", map[string]any{}, "validation_failed"},
				{"get_thread", map[string]any{"thread_id": 42}, "thread_id"},
				{"get_thread", map[string]any{"thread_id": "no-such-thread"}, "not_found"},
				{"get_thread", map[string]any{"thread_id": fx.order, "ref_value": "A"}, "validation_failed"},
				{"search_threads", map[string]any{"limit": 1000}, "validation_failed"},
				{"search_threads", map[string]any{"started_after": "yesterday"}, "validation_failed"},
				{"search_threads", map[string]any{"unknown_filter": "x"}, "unknown_filter"},
				{"contract_graph", map[string]any{}, "name"},
				{"contract_graph", map[string]any{"name": "orders", "version": 0}, "validation_failed"},
				{"resolve_actors", map[string]any{"ids": []string{}}, "validation_failed"},
				{"resolve_actors", map[string]any{"ids": "u1"}, "ids"},
				{"verify_thread_integrity", map[string]any{"thread_id": ""}, "validation_failed"},
				{"verify_thread_integrity", map[string]any{"thread_id": "no-such-thread"}, "not_found"},
				{"graphql_query", map[string]any{"query": ""}, "validation_failed"},
			} {
				wantToolError(t, c.tool, callTool(t, cs, c.tool, c.args), c.code)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
				t.Fatal("unknown tool: want a protocol error")
			}
			var ok struct {
				TotalCount int `json:"total_count"`
			}
			wantResult(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{}), &ok)
			if ok.TotalCount != 4 {
				t.Fatalf("after errors: total %d", ok.TotalCount)
			}
		})

		t.Run("a viewer service-account key reads", func(t *testing.T) {
			resp, body := e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{
				"name": "agent", "create_service_account": map[string]any{"name": "agent-bot", "role": "viewer"}})
			wantStatus(t, resp, body, http.StatusCreated)
			var created struct {
				Key    string `json:"key"`
				APIKey struct {
					ServiceAccountID string `json:"service_account_id"`
				} `json:"api_key"`
			}
			if err := json.Unmarshal(body, &created); err != nil || created.Key == "" || created.APIKey.ServiceAccountID == "" {
				t.Fatalf("create service-account key: %v %s", err, body)
			}
			sa := mustConnect(t, e, created.Key)
			var page struct {
				TotalCount int `json:"total_count"`
			}
			wantResult(t, "search_threads", callTool(t, sa, "search_threads", map[string]any{}), &page)
			if page.TotalCount != 4 {
				t.Fatalf("service account sees %d threads, want 4", page.TotalCount)
			}
			var actors struct {
				Actors []struct{ ID, Name, Type string } `json:"actors"`
			}
			wantResult(t, "resolve_actors", callTool(t, sa, "resolve_actors", map[string]any{"ids": []string{created.APIKey.ServiceAccountID}}), &actors)
			if len(actors.Actors) != 1 || actors.Actors[0].Name != "agent-bot" || actors.Actors[0].Type != "service_account" {
				t.Fatalf("actors %+v", actors.Actors)
			}
		})

		t.Run("older protocol versions connect too", func(t *testing.T) {
			old, err := mcpConnect(t, e, fx.viewerKey, "2025-06-18")
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Thread struct{ ID string } `json:"thread"`
			}
			wantResult(t, "get_thread", callTool(t, old, "get_thread", map[string]any{"thread_id": fx.child}), &got)
			if got.Thread.ID != fx.child {
				t.Fatalf("got %s", got.Thread.ID)
			}
		})
	})
}

func TestMCPAuthentication(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleViewer)
		initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "curl", "version": "1"}}}
		mcpPost := func(key string) (*http.Response, []byte) {
			return e.DoWith(t, http.MethodPost, "/mcp", initialize, func(r *http.Request) {
				r.Header.Set("Accept", "application/json, text/event-stream")
				if key != "" {
					r.Header.Set("Authorization", "Bearer "+key)
				}
			})
		}

		resp, body := mcpPost("")
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
		resp, body = mcpPost("td_not-a-real-key")
		wantStatus(t, resp, body, http.StatusUnauthorized)
		resp, body = mcpPost(key)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `"threadengine"`) {
			t.Fatalf("initialize result lacks the server name: %s", body)
		}
		// X-API-Key works as it does for GraphQL.
		resp, body = e.DoWith(t, http.MethodPost, "/mcp", initialize, func(r *http.Request) {
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set("X-API-Key", key)
		})
		wantStatus(t, resp, body, http.StatusOK)

		// A session opened with a key dies with the key: every HTTP request
		// is authenticated again, so the next call after revocation fails.
		cs := mustConnect(t, e, key)
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		k, err := e.Server.Store.GetAPIKeyByHash(context.Background(), domain.HashSecret(key))
		if err != nil {
			t.Fatal(err)
		}
		resp, body = e.Do(t, http.MethodDelete, "/v1/api-keys/"+k.ID, e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)

		resp, body = mcpPost(key)
		wantProblem(t, resp, body, http.StatusUnauthorized, "api_key_revoked")
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_threads", Arguments: map[string]any{}}); err == nil {
			t.Fatal("call with a revoked key succeeded")
		}
		if _, err := mcpConnect(t, e, key, ""); err == nil {
			t.Fatal("connect with a revoked key succeeded")
		}
	})
}
