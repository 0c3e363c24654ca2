package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// uploadFixture posts one of the published Threadify examples.
func uploadFixture(t *testing.T, e *enginetest.Engine, name string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(gherkinFixtures, name+".feature"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := sendSource(t, e, http.MethodPost, "/v1/contracts", string(src))
	wantStatus(t, resp, body, http.StatusCreated)
}

// refusals reads GET /v1/refusals with key.
func refusals(t *testing.T, e *enginetest.Engine, key, query string) (int, []map[string]any) {
	t.Helper()
	resp, body := e.Do(t, http.MethodGet, "/v1/refusals"+query, key, nil)
	var page struct {
		Refusals []map[string]any `json:"refusals"`
	}
	_ = json.Unmarshal(body, &page)
	return resp.StatusCode, page.Refusals
}

// The payment example judged at submission: amount 0 and currency "JPY"
// are refused with content_rule_failed naming the field and rule, nothing
// is recorded and the thread stays active; the refusals are counted and
// readable by administrators; valid content is accepted and completes the
// thread. The shipping example's cross-step equality reads the latest
// success of the referenced step.
func TestGherkinContentRulesJudgedAtSubmission(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		if v := metricValue(scrape(t, e, ""), "threadengine_step_refusals_total", map[string]string{"code": "content_rule_failed"}); v != 0 {
			t.Fatalf("refusal counter at start = %v, want present at 0", v)
		}
		uploadFixture(t, e, "valid_payment_processing")
		uploadFixture(t, e, "valid_shipping_confirmation")
		_, memberKey := e.NewUser(t, domain.RoleMember)
		reviewer := connectWS(t, e, memberKey)
		tid := reviewer.ok(map[string]any{"action": "startThread", "contractName": "payment_processing", "role": "reviewer"})["threadId"].(string)
		reviewer.ok(step(tid, "approval", "success", "a1", map[string]any{"reference": "PAY-1"}))
		payer := connectWS(t, e, memberKey)
		payer.ok(map[string]any{"action": "joinThread", "threadId": tid, "role": "payment_processor"})

		for _, tc := range []struct {
			ctx         map[string]any
			field, rule string
		}{
			{map[string]any{"amount": "0", "currency": "GBP", "reference": "PAY-1"}, "amount", "greater than 0"},
			{map[string]any{"amount": "12.50", "currency": "JPY", "reference": "PAY-1"}, "currency", `one of "GBP", "USD", "EUR"`},
			{map[string]any{"currency": "GBP", "reference": "PAY-1"}, "amount", "is missing"},
		} {
			r := payer.call(step(tid, "charge", "success", "c-bad", tc.ctx))
			msg, _ := r["message"].(string)
			if r["status"] != "error" || r["code"] != "content_rule_failed" || !strings.Contains(msg, `"`+tc.field+`"`) ||
				!strings.Contains(msg, tc.rule) || r["isDuplicate"] != nil {
				t.Fatalf("charge %v: %v", tc.ctx, r)
			}
		}
		resp, body := e.Do(t, http.MethodGet, "/v1/threads/"+tid+"/export", e.AdminKey, nil)
		if resp.StatusCode == http.StatusOK && strings.Contains(string(body), "c-bad") {
			t.Fatalf("a refused step was recorded: %s", body)
		}
		var steps int
		var status string
		if err := e.Server.DB.QueryRow(e.Server.DB.Rebind(`SELECT step_count, status FROM threads WHERE id = ?`), tid).Scan(&steps, &status); err != nil ||
			steps != 1 || status != "active" {
			t.Fatalf("thread after refusals: %d steps, %s (%v)", steps, status, err)
		}
		r := payer.ok(step(tid, "charge", "success", "c1", map[string]any{"amount": "12.50", "currency": "GBP", "reference": "PAY-1"}))
		if r["threadStatus"] != "completed" {
			t.Fatalf("valid charge: %v", r)
		}

		fams := scrape(t, e, "")
		if v := metricValue(fams, "threadengine_step_refusals_total", map[string]string{"code": "content_rule_failed", "contract": "payment_processing"}); v != 3 {
			t.Fatalf("refusals counted %v, want 3", v)
		}
		if code, _ := refusals(t, e, memberKey, ""); code != http.StatusForbidden {
			t.Fatalf("a member reads the refusal log: %d", code)
		}
		code, rows := refusals(t, e, e.AdminKey, "?thread_id="+tid+"&limit=2")
		if code != http.StatusOK || len(rows) != 2 || rows[0]["field"] != "amount" || rows[0]["rule"] != "required" ||
			rows[1]["field"] != "currency" || rows[1]["rule"] != "one_of" || rows[0]["step_name"] != "charge" ||
			rows[0]["role"] != "payment_processor" || rows[0]["contract_name"] != "payment_processing" || rows[0]["at"] == nil {
			t.Fatalf("refusal log: %d %v", code, rows)
		}
		if ctx, _ := rows[1]["context"].(map[string]any); ctx["currency"] != "JPY" {
			t.Fatalf("what was tried: %v", rows[1])
		}

		// Cross-step equality: delivery must carry the tracking number of
		// the latest shipment.
		carrier := connectWS(t, e, memberKey)
		sid := carrier.ok(map[string]any{"action": "startThread", "contractName": "shipping_confirmation", "role": "carrier"})["threadId"].(string)
		carrier.ok(step(sid, "order_shipped", "success", "s1", map[string]any{"tracking_number": "TRK-1"}))
		carrier.ok(step(sid, "order_shipped", "success", "s2", map[string]any{"tracking_number": "TRK-2"}))
		r = carrier.call(step(sid, "delivery_confirmed", "success", "d1", map[string]any{"tracking_number": "TRK-1"}))
		if r["code"] != "content_rule_failed" || !strings.Contains(r["message"].(string), "order_shipped.tracking_number") {
			t.Fatalf("delivery of an older shipment: %v", r)
		}
		if r := carrier.ok(step(sid, "delivery_confirmed", "success", "d2", map[string]any{"tracking_number": "TRK-2"})); r["threadStatus"] != "completed" {
			t.Fatalf("delivery of the latest shipment: %v", r)
		}
	})
}

// freshScenario: two waiters for a charge, on their own sockets (on two
// replicas when they are), one approval: exactly one is allowed; the other
// is allowed only after a second approval; cancelling the first grant
// restores nothing.
func freshScenario(t *testing.T, writer, w1, w2 *wsClient) {
	t.Helper()
	tid := writer.ok(map[string]any{"action": "startThread", "contractName": "fresh_pay", "role": "ops"})["threadId"].(string)
	wait := func(c *wsClient, req, inv string, ms int) {
		c.send(map[string]any{"action": "waitFor", "requestId": req, "threadId": tid, "stepName": "charge",
			"invocationId": inv, "await": true, "timeoutMs": ms})
	}
	wait(w1, "a", "inv-a", 15000)
	wait(w2, "b", "inv-b", 15000)
	w1.noReplyFor("a", 200*time.Millisecond)
	writer.ok(step(tid, "approval", "success", "ap1", nil))

	var first, second *wsClient
	var firstReq, firstInv, secondReq, secondInv string
	select {
	case r := <-w1.replies:
		w1.mu.Lock()
		w1.held = append(w1.held, r)
		w1.mu.Unlock()
		first, firstReq, firstInv, second, secondReq, secondInv = w1, "a", "inv-a", w2, "b", "inv-b"
	case r := <-w2.replies:
		w2.mu.Lock()
		w2.held = append(w2.held, r)
		w2.mu.Unlock()
		first, firstReq, firstInv, second, secondReq, secondInv = w2, "b", "inv-b", w1, "a", "inv-a"
	case <-time.After(answerBound):
		t.Fatal("no waiter was granted after the approval")
	}
	if r := first.replyFor(firstReq, time.Second); r["decision"] != "allowed" || r["invocationId"] != firstInv {
		t.Fatalf("first charge: %v", r)
	}
	second.noReplyFor(secondReq, 300*time.Millisecond)
	// The first gives its grant back: the approval stays spent.
	first.send(map[string]any{"action": "waitFor", "requestId": "c", "threadId": tid, "stepName": "charge",
		"invocationId": firstInv, "cancel": true})
	if r := first.replyFor("c", 5*time.Second); r["decision"] != "cancelled" {
		t.Fatalf("cancel: %v", r)
	}
	second.noReplyFor(secondReq, 300*time.Millisecond)
	writer.ok(step(tid, "approval", "success", "ap2", nil))
	if r := second.replyFor(secondReq, 10*time.Second); r["decision"] != "allowed" || r["invocationId"] != secondInv {
		t.Fatalf("second charge after the second approval: %v", r)
	}
	rep := step(tid, "charge", "success", "ch2", map[string]any{"amount": "5"})
	rep["invocationId"] = secondInv
	if r := second.ok(rep); r["threadStatus"] != "active" {
		t.Fatalf("granted charge: %v", r)
	}
	// The engine's own grant rows cannot be named by a client.
	reserved := step(tid, "charge", "success", "ch-r", map[string]any{"amount": "5"})
	reserved["invocationId"] = domain.ReportInvocationPrefix + "x"
	if r := writer.call(reserved); r["status"] != "error" || r["code"] != "validation_failed" {
		t.Fatalf("reserved invocation id on a report: %v", r)
	}
	wait(writer, "r", domain.ReportInvocationPrefix+"x", 1000)
	if r := writer.replyFor("r", 5*time.Second); r["status"] != "error" {
		t.Fatalf("reserved invocation id on a wait: %v", r)
	}
	// A third charge, unguarded, on no new approval: recorded, and a
	// critical violation.
	r := writer.ok(step(tid, "charge", "success", "ch3", map[string]any{"amount": "5"}))
	if v, _ := r["validation"].(map[string]any); v["overallStatus"] != "violated" ||
		!strings.Contains(mustJSON(t, v), domain.IssueFreshDependencyRequired) {
		t.Fatalf("charge on a spent approval: %v", r)
	}
}

func TestGherkinFreshApprovals(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := sendSource(t, e, http.MethodPost, "/v1/contracts", enginetest.FreshPayFeature)
		wantStatus(t, resp, body, http.StatusCreated)
		_, key := e.NewUser(t, domain.RoleMember)
		freshScenario(t, connectWS(t, e, key), connectWS(t, e, key), connectWS(t, e, key))
	})
}

// The same with the two waiters on two replicas of one PostgreSQL.
func TestReplicasGherkinFreshApprovals(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	resp, body := sendSource(t, a, http.MethodPost, "/v1/contracts", enginetest.FreshPayFeature)
	wantStatus(t, resp, body, http.StatusCreated)
	_, key := a.NewUser(t, domain.RoleMember)
	freshScenario(t, connectWS(t, a, key), connectWS(t, a, key), connectWS(t, b, key))
}

// OTLP spans are judged by the same rules: a span breaking a content rule
// is rejected (partial success naming the rule), not recorded, and logged.
func TestGherkinContentRulesOverOTLP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		uploadFixture(t, e, "valid_shipping_confirmation")
		_, key := e.NewUser(t, domain.RoleMember)
		attrs := `{"key":"threadify.contract","value":{"stringValue":"shipping_confirmation"}},{"key":"threadify.role","value":{"stringValue":"carrier"}}`
		span := func(id, name, tracking string, start int) string {
			return `{"traceId":"` + strings.Repeat("ab", 16) + `","spanId":"` + strings.Repeat(id, 8) + `","name":"` + name +
				`","startTimeUnixNano":"` + strconv.Itoa(1700000000000000000+start*1000000) +
				`","endTimeUnixNano":"` + strconv.Itoa(1700000000000000000+(start+1)*1000000) +
				`","attributes":[{"key":"threadify.context.tracking_number","value":{"stringValue":"` + tracking + `"}},` + attrs + `]}`
		}
		js := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"carrier-service"}}]},
 "scopeSpans":[{"spans":[` + span("01", "order_shipped", "TRK-1", 1) + `,` + span("02", "delivery_confirmed", "TRK-9", 3) + `]}]}]}`
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/traces", strings.NewReader(js))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			PartialSuccess struct {
				RejectedSpans string `json:"rejectedSpans"`
				ErrorMessage  string `json:"errorMessage"`
			} `json:"partialSuccess"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d %v %+v", resp.StatusCode, err, body)
		}
		if body.PartialSuccess.RejectedSpans != "1" ||
			!strings.Contains(body.PartialSuccess.ErrorMessage, `content field "tracking_number" violates equals rule`) {
			t.Fatalf("partial success %+v", body.PartialSuccess)
		}
		var steps int
		if err := e.Server.DB.Get(&steps, `SELECT COUNT(*) FROM thread_activities`); err != nil || steps != 1 {
			t.Fatalf("recorded steps %d (%v), want the shipment only", steps, err)
		}
		if code, rows := refusals(t, e, e.AdminKey, "?contract=shipping_confirmation"); code != http.StatusOK || len(rows) != 1 ||
			rows[0]["step_name"] != "delivery_confirmed" || rows[0]["rule"] != "equals" {
			t.Fatalf("refusal log %d %v", code, rows)
		}
	})
}
