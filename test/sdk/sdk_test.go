// Package sdk_test runs the unmodified Threadify SDKs (Node and Go) against a
// real engine. The SDKs are not published, so their checkouts are found
// through THREADENGINE_NODE_SDK_DIR (ThreadifyDev/node-sdk, `npm install`
// done) and THREADENGINE_GO_SDK_DIR (ThreadifyDev/go-sdk); each test skips
// when its variable is unset.
package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

const (
	nodeSDKEnv = "THREADENGINE_NODE_SDK_DIR"
	goSDKEnv   = "THREADENGINE_GO_SDK_DIR"
)

// contractYAML: every step belongs to "checkout" (the Node SDK derives the
// role from serviceName "checkout-service"); ship is terminal.
const contractYAML = `
contract_name: sdk_flow
version: 1
entry_points: [validate]
parties: [checkout]
steps:
  - id: validate
    owner: checkout
    business_context:
      required: [items]
  - id: pay
    owner: checkout
  - id: ship
    owner: checkout
transitions:
  - from: validate
    to: pay
  - from: pay
    to: ship
terminal_steps: [ship]
`

func repoFile(t *testing.T, rel string) string {
	p, err := filepath.Abs(rel) // relative to the package's directory, where go test runs it
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func wsURL(e *enginetest.Engine) string {
	return strings.Replace(e.URL, "http://", "ws://", 1) + "/threads"
}

// runJSON runs cmd and decodes the last stdout line as the scenario result.
func runJSON(t *testing.T, cmd *exec.Cmd) map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var out map[string]any
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &out); jerr != nil || err != nil || out["error"] != nil {
		t.Fatalf("scenario failed: %v\nresult: %v\nstdout:\n%s\nstderr:\n%s", err, out["error"], stdout.String(), stderr.String())
	}
	t.Logf("scenario result: %s", lines[len(lines)-1])
	return out
}

// graphql runs a query as the admin and returns data.
func graphql(t *testing.T, e *enginetest.Engine, query string, vars map[string]any) map[string]any {
	t.Helper()
	resp, body := e.Do(t, http.MethodPost, "/graphql", e.AdminKey, map[string]any{"query": query, "variables": vars})
	var r struct {
		Data   map[string]any `json:"data"`
		Errors []any          `json:"errors"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || len(r.Errors) > 0 {
		t.Fatalf("graphql %d: %s", resp.StatusCode, body)
	}
	return r.Data
}

func verifyChain(t *testing.T, e *enginetest.Engine, threadID string, wantEvents int) {
	t.Helper()
	d := graphql(t, e, `query($id: String!){ verifyThreadIntegrity(threadId: $id) { verified totalEvents error } }`,
		map[string]any{"id": threadID})
	v := d["verifyThreadIntegrity"].(map[string]any)
	if v["verified"] != true || v["totalEvents"] != float64(wantEvents) {
		t.Errorf("hash chain of %s: %v, want verified with %d events", threadID, v, wantEvents)
	}
}

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

func uploadContract(t *testing.T, e *enginetest.Engine) {
	t.Helper()
	resp, body := e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"source": contractYAML})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload contract: %d %s", resp.StatusCode, body)
	}
}

func TestNodeSDK(t *testing.T) {
	dir, node := nodeSDK(t)
	script := repoFile(t, "node/scenario.mjs")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d)
		e.Server.Threads.Hub().SetRedeliverAfter(500 * time.Millisecond)
		// Leases end on the engine's clock: let it run while the script does.
		stopClock := make(chan struct{})
		defer close(stopClock)
		go func() {
			for {
				select {
				case <-stopClock:
					return
				case <-time.After(100 * time.Millisecond):
					e.Clock.Advance(100 * time.Millisecond)
				}
			}
		}()
		uploadContract(t, e)
		_, key := e.NewUser(t, domain.RoleMember)
		_, key2 := e.NewUser(t, domain.RoleMember)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script)
		cmd.Env = append(os.Environ(), nodeSDKEnv+"="+dir, "ENGINE_WS_URL="+wsURL(e), "ENGINE_API_KEY="+key,
			"ENGINE_API_KEY_2="+key2, "ENGINE_CONTRACT=sdk_flow", "ENGINE_REDELIVERY=1")
		start := time.Now()
		out := runJSON(t, cmd)
		t.Logf("node scenario ran in %v", time.Since(start).Round(time.Millisecond))
		tid, _ := out["threadId"].(string)

		if got := dig(out, "thread", "refs", "serviceName"); got != "checkout-service" {
			t.Errorf("refs.serviceName = %v", got)
		}
		steps, _ := out["steps"].([]any)
		names := []string{}
		for _, s := range steps {
			names = append(names, dig(s, "stepName").(string))
			if dig(s, "verified") != true {
				t.Errorf("step not verified: %v", s)
			}
		}
		if strings.Join(names, ",") != "validate,pay,ship" {
			t.Errorf("steps = %v, want first-seen order validate,pay,ship", names)
		}
		if dig(out, "steps", 1, "previousStep") != "validate" {
			t.Errorf("pay.previousStep = %v", dig(out, "steps", 1, "previousStep"))
		}
		var payCtx map[string]string
		if ctxJSON, _ := dig(out, "payHistory", 1, "context").(string); json.Unmarshal([]byte(ctxJSON), &payCtx) != nil || payCtx["amount"] != "5" {
			t.Errorf("failed attempt context = %q", ctxJSON)
		}
		if dig(out, "payHistory", 0, "attempt") != float64(2) || dig(out, "payHistory", 1, "attempt") != float64(1) {
			t.Errorf("pay attempts = %v", out["payHistory"])
		}
		if out["stepsByStatusSuccess"] != float64(3) {
			t.Errorf("steps(status: success) = %v, want 3", out["stepsByStatusSuccess"])
		}
		if dig(out, "complete", "steps") != float64(3) || dig(out, "complete", "historyTotal") != float64(4) {
			t.Errorf("getCompleteData = %v (want 3 steps, 4 attempts: the duplicate ship is not recorded)", out["complete"])
		}
		if out["duplicateResolved"] != true {
			t.Errorf("duplicate ship did not resolve")
		}
		n := dig(out, "notifications", 0)
		if dig(n, "stepName") != "ship" || dig(n, "stepStatus") != "success" || dig(n, "hasAckToken") != true {
			t.Errorf("notification = %v", n)
		}
		ships := 0
		for _, n := range out["notifications"].([]any) {
			if dig(n, "threadId") == tid {
				ships++
			}
		}
		if ships != 1 {
			t.Errorf("notifications = %v, want one for %s (the duplicate re-send publishes nothing)", out["notifications"], tid)
		}
		if r := out["redelivery"]; dig(r, "deliveries") != float64(2) || dig(r, "distinct") != float64(1) || dig(r, "handlerCalls") != float64(1) {
			t.Errorf("redelivery = %v, want 2 deliveries of 1 notification (the SDK acks the duplicate), 1 handler call", r)
		}
		if g := out["globalNotification"]; dig(g, "stepName") != "global" || dig(g, "hasAckToken") != true {
			t.Errorf("thread-level notification = %v", g)
		}
		if out["closed"] != true {
			t.Errorf("connection not closed after close()")
		}
		verifyChain(t, e, tid, 4)

		if dig(out, "contract", "status") != "completed" || dig(out, "contract", "contractName") != "sdk_flow" ||
			dig(out, "contract", "contractVersion") != float64(1) {
			t.Errorf("contract thread = %v", out["contract"])
		}
		if dig(out, "contract", "completeAfterTerminal") != "completed" {
			t.Errorf("complete() after the terminal step = %v", dig(out, "contract", "completeAfterTerminal"))
		}
		for _, v := range dig(out, "contract", "validations").([]any) {
			if dig(v, "overallStatus") != "passed" {
				t.Errorf("validation %v", v)
			}
		}
		verifyChain(t, e, dig(out, "contract", "threadId").(string), 3)

		if got := dig(out, "otel", "refs", "route"); got != "/pay" {
			t.Errorf("OTel refs = %v (want route from the refs option)", dig(out, "otel", "refs"))
		}
		if got := dig(out, "otel", "refs", "invoice"); got != "INV-9" {
			t.Errorf("OTel threadify.ref.invoice = %v", got)
		}
		if got := dig(out, "otel", "chargeContext", "amount"); got != "9" {
			t.Errorf("OTel context = %v", dig(out, "otel", "chargeContext"))
		}
		if got := dig(out, "otel", "chargeDuration"); got != float64(250) {
			t.Errorf("OTel step duration = %v, want 250 (span end - start)", got)
		}
		if got := dig(out, "otel", "subSteps", 0); got != "authorized" {
			t.Errorf("OTel span event sub-step = %v", dig(out, "otel", "subSteps"))
		}
		verifyChain(t, e, dig(out, "otel", "threadId").(string), 2)

		if dig(out, "privateContext", "private_secret") != "s3" || dig(out, "errorStatusFilter", 0) != "b" ||
			out["pagedHistory"] != float64(1) || dig(out, "completeFiltered", 0) != "a:1" {
			t.Errorf("extras: private %v, status filter %v, paged history %v, filtered complete data %v",
				out["privateContext"], out["errorStatusFilter"], out["pagedHistory"], out["completeFiltered"])
		}
		inv := out["invite"]
		// cancel({reason, by}) is a cancel reason, not an error: error
		// stays null and the caller's object is the thread's endReason.
		if dig(inv, "guestSeesSteps", 0) != "deliver" || dig(inv, "cancel") != "cancelled" || dig(inv, "cancelError") != nil {
			t.Errorf("invitation flow = %v", inv)
		}
		var endReason string
		if err := e.Server.DB.Get(&endReason, e.Server.DB.Rebind(`SELECT end_reason FROM threads WHERE id = ?`),
			dig(inv, "threadId")); err != nil || endReason != `{"by":"scenario","reason":"test over"}` {
			t.Errorf("cancel reason stored as %q (%v)", endReason, err)
		}
	})
}

// buildGoProgram builds test/sdk/<rel> (a main package kept as .txt) against
// the Go SDK checkout in THREADENGINE_GO_SDK_DIR, or skips when it is unset.
func buildGoProgram(t *testing.T, rel string) string {
	t.Helper()
	dir := os.Getenv(goSDKEnv)
	if dir == "" {
		t.Skipf("%s not set (point it at a checkout of ThreadifyDev/go-sdk)", goSDKEnv)
	}
	src, err := os.ReadFile(repoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return buildGoMain(t, src, dir)
}

// buildGoMain builds src, a main package, in a temporary module whose
// go.mod replaces the SDK with the checkout sdkDir.
func buildGoMain(t *testing.T, src []byte, sdkDir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found on PATH")
	}
	mod := t.TempDir()
	gomod := "module sdkscenario\n\ngo 1.25\n\nrequire github.com/ThreadifyDev/go-sdk v0.0.0\n\n" +
		"replace github.com/ThreadifyDev/go-sdk => " + sdkDir + "\n"
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "main.go": src} {
		if err := os.WriteFile(filepath.Join(mod, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Build once (gorilla/websocket comes from the module proxy or cache).
	bin := filepath.Join(mod, "scenario")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build against the Go SDK: %v\n%s", err, b)
	}
	return bin
}

func TestGoSDK(t *testing.T) {
	bin := buildGoProgram(t, "gosdk/scenario.go.txt")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d)
		uploadContract(t, e)
		_, key := e.NewUser(t, domain.RoleMember)
		_, key2 := e.NewUser(t, domain.RoleMember)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(os.Environ(), "ENGINE_WS_URL="+wsURL(e), "ENGINE_API_KEY="+key, "ENGINE_API_KEY_2="+key2,
			"ENGINE_CONTRACT=sdk_flow")
		out := runJSON(t, cmd)
		tid, _ := out["threadId"].(string)

		if out["duplicateFlag"] != true {
			t.Errorf("the duplicate pay step: Duplicate = %v, want true", out["duplicateFlag"])
		}
		if out["startAccessLevel"] != "owner" {
			t.Errorf("start accessLevel = %v", out["startAccessLevel"])
		}
		if n := out["notification"]; dig(n, "source") != "execution" || dig(n, "notificationType") != "execution.success" ||
			dig(n, "stepName") != "ship" || dig(n, "acked") != true {
			t.Errorf("notification = %v", n)
		}
		if te := out["threadEvent"]; dig(te, "stepName") != "global" || dig(te, "source") != "thread" ||
			dig(te, "notificationType") != "thread.completed" {
			t.Errorf("thread event = %v", te)
		}
		if dig(out, "end", "status") != "completed" || dig(out, "end", "endedAt") == "" {
			t.Errorf("end = %v", out["end"])
		}
		if dig(out, "thread", "status") != "completed" || dig(out, "thread", "refs", "invoiceId") != "INV-7" ||
			dig(out, "thread", "refs", "amount") != "12" || dig(out, "thread", "refs", "tracking") != "TR-7" ||
			dig(out, "thread", "refs", "serviceName") != "billing-service" || dig(out, "thread", "refs", "label") != "Invoice-7" {
			t.Errorf("thread = %v", out["thread"])
		}
		steps, _ := out["steps"].([]any)
		if len(steps) != 3 || dig(steps, 1, "stepName") != "pay" || dig(steps, 1, "retryCount") != float64(1) ||
			dig(steps, 1, "lastExecution", "status") != "success" {
			t.Errorf("steps = %v", steps)
		}
		for _, s := range steps {
			if dig(s, "verified") != true {
				t.Errorf("step not verified: %v", s)
			}
		}
		h := out["payHistory"]
		if dig(h, 0, "status") != "success" || dig(h, 1, "status") != "failed" || dig(h, 1, "error") != "card declined" {
			t.Errorf("pay history = %v", h)
		}
		var payload map[string]any
		pj, _ := dig(out, "subSteps", 0, "payload").(string)
		if dig(out, "subSteps", 0, "name") != "inner" || json.Unmarshal([]byte(pj), &payload) != nil || payload["y"] != float64(2) {
			t.Errorf("subSteps = %v", out["subSteps"])
		}
		if out["validationResults"] != float64(0) || out["completeStatus"] != "completed" {
			t.Errorf("validations %v, complete status %v", out["validationResults"], out["completeStatus"])
		}
		if ids, _ := out["threadsByRef"].([]any); len(ids) != 1 || ids[0] != tid {
			t.Errorf("threadsByRef = %v", out["threadsByRef"])
		}
		if out["chainLen"] != float64(1) {
			t.Errorf("chain = %v", out["chainLen"])
		}
		if out["lateStepRefused"] != true {
			t.Errorf("a step on a completed thread: %v", out["lateStepError"])
		}
		verifyChain(t, e, tid, 4)

		if out["badKeyError"] != "Invalid API key" {
			t.Errorf("bad key: %v", out["badKeyError"])
		}
		if c := out["contract"]; dig(c, "status") != "completed" || dig(c, "contractName") != "sdk_flow" ||
			strings.Join(toStrings(dig(c, "validations")), ",") != "pay:passed,ship:passed,validate:passed" {
			t.Errorf("contract thread = %v", c)
		}
		if v := out["violation"]; dig(v, "violationType") != "missing_required_field" || dig(v, "isViolated") != true ||
			dig(v, "notificationType") != "validation.violated" || dig(v, "contractName") != "sdk_flow" || dig(v, "threadOk") != true {
			t.Errorf("violation notification = %v", v)
		}
		inv := out["invite"]
		if dig(inv, "joined", "threadId") != true || dig(inv, "joined", "role") != "supplier" ||
			dig(inv, "joined", "accessLevel") != "participant" {
			t.Errorf("join = %v", dig(inv, "joined"))
		}
		if dig(inv, "waitFor", "stepStatus") != "failed" || dig(inv, "waitFor", "notificationType") != "execution.failed" {
			t.Errorf("WaitFor = %v", dig(inv, "waitFor"))
		}
		if w := dig(inv, "waitForUnsubscribed"); dig(w, "stepName") != "inspect" || dig(w, "stepStatus") != "success" ||
			dig(w, "ackErr") != "<nil>" {
			t.Errorf("WaitFor without Subscribe = %v", w)
		}
		// Cancel("supplier failed") is the thread's cancel reason, not an
		// error (which stays for failures).
		if dig(inv, "cancel", "status") != "cancelled" || dig(inv, "guestView", "status") != "cancelled" ||
			dig(inv, "guestView", "error") != "" {
			t.Errorf("cancel = %v, guest view %v", dig(inv, "cancel"), dig(inv, "guestView"))
		}
		var n int
		if err := e.Server.DB.Get(&n, `SELECT COUNT(*) FROM threads WHERE status = 'cancelled' AND end_reason = 'supplier failed'`); err != nil || n != 1 {
			t.Errorf("threads cancelled with reason %q: %d (%v), want 1", "supplier failed", n, err)
		}
	})
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	// Rows recorded at the same (fake-clock) instant have no defined order.
	sort.Strings(out)
	return out
}

// One Go SDK connection lives through 1,000 notification acks and 300
// heartbeats (the SDK's 30 s ticker over 2.5 hours) and can still start a
// thread: the engine does not answer these fire-and-forget frames, whose
// replies the SDK would park until its 256-slot buffer overflows and the
// next real reply is dropped.
func TestGoSDKLongLivedConnection(t *testing.T) {
	bin := buildGoProgram(t, "gosdk/longhaul.go.txt")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d)
		_, key := e.NewUser(t, domain.RoleMember)
		ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(os.Environ(), "ENGINE_WS_URL="+wsURL(e), "ENGINE_API_KEY="+key)
		start := time.Now()
		out := runJSON(t, cmd)
		t.Logf("long-haul scenario ran in %v", time.Since(start).Round(time.Millisecond))
		if dig(out, "sent", "ack_notification").(float64) < 1000 || dig(out, "sent", "heartbeat").(float64) < 300 {
			t.Errorf("sent %v, want at least 1,000 acks and 300 heartbeats", out["sent"])
		}
		for _, a := range []string{"ack_notification", "heartbeat", "subscribe"} {
			if n := dig(out, "received", a); n != nil {
				t.Errorf("the engine sent %v %s replies the SDK never asked for", n, a)
			}
		}
		if dig(out, "received", "notification").(float64) < 1000 {
			t.Errorf("received %v", out["received"])
		}
		if dig(out, "final", "stepStatus") != "success" {
			t.Errorf("after the long haul: %v", out["final"])
		}
	})
}
