package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/test/enginetest"
)

// Thread health, duration and tags, the list filters alone and combined
// (with their totals), ordering, out-of-range pages, resolveActors and
// verifyStepIntegrity, on both stores.
func TestGraphQLThreadHealthAndFilters(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		ctx := adminCtx(e)
		if resp, body := e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"source": enginetest.OrderFlowYAML}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("contract: %d %s", resp.StatusCode, body)
		}
		th := e.Server.Threads
		start := func(contract, role, ref string, tags ...string) string {
			t.Helper()
			r, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Contract: contract, Role: role, Refs: map[string]string{"orderId": ref}, Tags: tags})
			if err != nil {
				t.Fatal(err)
			}
			e.Clock.Advance(time.Minute)
			return r.ID
		}
		step := func(id, name, status string, c map[string]string, meta map[string]any) {
			t.Helper()
			if c == nil {
				c = map[string]string{}
			}
			e.Clock.Advance(time.Second)
			if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: id, StepName: name, Status: status,
				IdempotencyKey: name, Context: c, Metadata: meta}); err != nil {
				t.Fatal(err)
			}
		}
		// ok: a clean contract run, completed.
		ok := start("order_flow", "checkout", "O-ok", "vip")
		step(ok, "validate", "success", map[string]string{"items": "2"}, nil)
		step(ok, "pay", "success", nil, nil)
		// violated: starts at pay, not an entry point (critical), which also fails the thread.
		bad := start("order_flow", "checkout", "O-bad", "vip", "eu")
		step(bad, "pay", "success", nil, nil)
		// failed: a free-form thread whose step failed and stays active.
		failed := start("", "", "O-fail")
		step(failed, "charge", "failed", nil, map[string]any{"error": "card declined"})
		// warning: a retry (minor retry_attempted) that succeeds.
		warn := start("order_flow", "checkout", "O-warn")
		step(warn, "validate", "success", map[string]string{"items": "1"}, nil)
		step(warn, "pay", "failed", nil, map[string]any{"error": "timeout"})
		step(warn, "pay", "success", nil, nil)

		q := `query($id: ID!) { thread(id: $id) { status durationMs tags attemptCount stepCount validationCount
 health { status failedSteps critical major warnings firstIssue { stepName type message severity } } } }`
		health := func(id string) map[string]any {
			t.Helper()
			status, r, body := gqlPost(t, e, e.AdminKey, q, map[string]any{"id": id})
			if status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("%d %s", status, body)
			}
			return r.Data["thread"].(map[string]any)
		}
		hb := health(bad)
		h := hb["health"].(map[string]any)
		fi, _ := h["firstIssue"].(map[string]any)
		if h["status"] != "VIOLATED" || h["critical"] != float64(1) || hb["status"] != "failed" || fi == nil || fi["stepName"] != "pay" ||
			fi["type"] != "invalid_entry_point" || fi["severity"] != "critical" || !strings.Contains(fi["message"].(string), "pay") {
			t.Fatalf("violated thread health: %v", hb)
		}
		if tags := hb["tags"].([]any); len(tags) != 2 || tags[0] != "vip" || hb["stepCount"] != float64(1) || hb["validationCount"] != float64(1) {
			t.Fatalf("tags/counts: %v", hb)
		}
		hf := health(failed)["health"].(map[string]any)
		if hf["status"] != "FAILED" || hf["failedSteps"] != float64(1) || hf["firstIssue"].(map[string]any)["message"] != "card declined" {
			t.Fatalf("failed thread: %v", hf)
		}
		hw := health(warn)
		if hw["health"].(map[string]any)["status"] != "WARNING" || hw["health"].(map[string]any)["failedSteps"] != float64(0) || hw["attemptCount"] != float64(3) {
			t.Fatalf("warning thread: %v", hw)
		}
		if health(ok)["health"].(map[string]any)["status"] != "OK" {
			t.Fatal("ok thread not OK")
		}

		// The thread page's data: attempts in record order, each step's own
		// validation, paged steps.
		_, r0, body0 := gqlPost(t, e, e.AdminKey, `query($id: ID!) { thread(id: $id) { attempts(limit: 2, offset: 1) { stepName idempotencyKey attempt status error }
 steps(limit: 1, offset: 1) { stepName latestValidation { overallStatus } } } }`, map[string]any{"id": warn})
		tw := r0.Data["thread"].(map[string]any)
		at := tw["attempts"].([]any)
		if len(at) != 2 || at[0].(map[string]any)["stepName"] != "pay" || at[0].(map[string]any)["error"] != "timeout" ||
			at[1].(map[string]any)["attempt"] != float64(2) {
			t.Fatalf("attempts: %s", body0)
		}
		// Each attempt carries its own validation: the violating success is
		// "violated" (never a plain success), a free-form attempt has none.
		for _, c := range []struct{ id, q, want string }{
			{bad, `thread(id: $id) { attempts { validation } }`, "violated"},
			{warn, `thread(id: $id) { attempts(limit: 1) { validation } }`, "passed"},
			{failed, `thread(id: $id) { attempts { validation } }`, ""},
		} {
			_, r, body := gqlPost(t, e, e.AdminKey, `query($id: ID!) { `+c.q+` }`, map[string]any{"id": c.id})
			a := r.Data["thread"].(map[string]any)["attempts"].([]any)
			got, _ := a[0].(map[string]any)["validation"].(string)
			if len(r.Errors) > 0 || got != c.want {
				t.Fatalf("attempt validation %q, want %q: %s", got, c.want, body)
			}
		}
		_, rh, bodyH := gqlPost(t, e, e.AdminKey, `query($id: String!) { stepHistory(threadId: $id, stepName: "pay") { attempt status validation } }`, map[string]any{"id": warn})
		hist := rh.Data["stepHistory"].([]any)
		if len(hist) != 2 || hist[0].(map[string]any)["validation"] != "warning" || hist[1].(map[string]any)["status"] != "failed" || hist[1].(map[string]any)["validation"] != "passed" {
			t.Fatalf("stepHistory validation: %s", bodyH)
		}
		st := tw["steps"].([]any)
		if len(st) != 1 || st[0].(map[string]any)["stepName"] != "pay" || st[0].(map[string]any)["latestValidation"].(map[string]any)["overallStatus"] != "warning" {
			t.Fatalf("paged steps: %s", body0)
		}
		list := func(args string) (total int, ids []string) {
			t.Helper()
			status, r, body := gqlPost(t, e, e.AdminKey, `{ threads(`+args+`) { totalCount threads { id } } }`, nil)
			if status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("threads(%s): %d %s", args, status, body)
			}
			c := r.Data["threads"].(map[string]any)
			for _, x := range c["threads"].([]any) {
				ids = append(ids, x.(map[string]any)["id"].(string))
			}
			return int(c["totalCount"].(float64)), ids
		}
		for _, c := range []struct {
			args  string
			total int
			first string
		}{
			{`health: [VIOLATED, FAILED]`, 2, ""},
			{`health: [WARNING]`, 1, warn},
			{`health: [OK], contractName: "order_flow"`, 1, ok},
			{`tag: "vip"`, 2, ""},
			{`tag: "vip", health: [VIOLATED]`, 1, bad},
			{`idPrefix: "` + strings.ToUpper(bad[:8]) + `"`, 1, bad},
			{`refKey: "orderId"`, 4, ""},
			{`refKey: "nope"`, 0, ""},
			{`refKey: "orderId", refValue: "o-", contractName: "order_flow", limit: 1`, 3, ""},
			{`contractName: "order_flow", limit: 2, offset: 2`, 3, ""},
			{`limit: 10, offset: 500`, 4, ""},
		} {
			total, ids := list(c.args)
			if total != c.total || (c.first != "" && (len(ids) == 0 || ids[0] != c.first)) {
				t.Fatalf("threads(%s) = %d %v, want %d first %s", c.args, total, ids, c.total, c.first)
			}
		}
		if _, ids := list(`orderBy: STARTED_AT, order: ASC`); len(ids) != 4 || ids[0] != ok || ids[3] != warn {
			t.Fatalf("ascending: %v", ids)
		}
		if hw["durationMs"] != float64(63000) {
			t.Fatalf("duration: %v", hw)
		}
		// An active thread's duration is known when it ends: until then it
		// sorts as 0 (all but bad are active; ties newest first), while it
		// reports its duration so far (warn's 63 s above).
		if _, ids := list(`orderBy: DURATION, order: DESC`); !slices.Equal(ids, []string{bad, warn, failed, ok}) {
			t.Fatalf("by duration: %v, want bad %s, warn %s, failed %s, ok %s", ids, bad, warn, failed, ok)
		}
		if status, r, _ := gqlPost(t, e, e.AdminKey, `{ threads(health: [BAD]) { totalCount } }`, nil); status == http.StatusOK && len(r.Errors) == 0 {
			t.Fatal("unknown health accepted")
		}

		// resolveActors: the admin by name; unknown ids left out.
		status, r, body := gqlPost(t, e, e.AdminKey, `query($ids: [String!]!) { resolveActors(ids: $ids) { id name type } }`,
			map[string]any{"ids": []string{e.Admin.ID, "nobody"}})
		actors, _ := r.Data["resolveActors"].([]any)
		if status != http.StatusOK || len(actors) != 1 || actors[0].(map[string]any)["id"] != e.Admin.ID || actors[0].(map[string]any)["type"] != "user" {
			t.Fatalf("resolveActors: %d %s", status, body)
		}
		// verifyStepIntegrity: verified, and a missing step says so.
		vq := `query($t: String!, $s: String!, $k: String!) { verifyStepIntegrity(threadId: $t, stepName: $s, idempotencyKey: $k) { verified hash prevHash error } }`
		_, r, body = gqlPost(t, e, e.AdminKey, vq, map[string]any{"t": bad, "s": "pay", "k": "pay"})
		if v := r.Data["verifyStepIntegrity"].(map[string]any); v["verified"] != true || v["hash"] == nil {
			t.Fatalf("verifyStepIntegrity: %s", body)
		}
		_, r, body = gqlPost(t, e, e.AdminKey, vq, map[string]any{"t": bad, "s": "nope", "k": "x"})
		if v := r.Data["verifyStepIntegrity"].(map[string]any); v["verified"] != false || v["error"] != "Step not found in activity log" {
			t.Fatalf("missing step: %s", body)
		}
		// Tamper with pay's stored context: the step check and the chain name it.
		if _, err := e.Server.DB.Exec(e.Server.DB.Rebind(`UPDATE thread_activities SET context = '{"x":"1"}' WHERE thread_id = ? AND step_name = 'pay'`), bad); err != nil {
			t.Fatal(err)
		}
		_, r, body = gqlPost(t, e, e.AdminKey, vq, map[string]any{"t": bad, "s": "pay", "k": "pay"})
		if v := r.Data["verifyStepIntegrity"].(map[string]any); v["verified"] != false || !strings.Contains(fmt.Sprint(v["error"]), "tampering") {
			t.Fatalf("tampered step: %s", body)
		}
		_, r, body = gqlPost(t, e, e.AdminKey, `query($id: ID!) { thread(id: $id) { hashChainStatus { verified brokenStepName brokenIdempotencyKey }
 steps { stepName verified verificationError } } }`, map[string]any{"id": bad})
		tt := r.Data["thread"].(map[string]any)
		hs := tt["hashChainStatus"].(map[string]any)
		if hs["verified"] != false || hs["brokenStepName"] != "pay" || hs["brokenIdempotencyKey"] != "pay" {
			t.Fatalf("chain status: %s", body)
		}
		for _, s := range tt["steps"].([]any) {
			m := s.(map[string]any)
			if (m["stepName"] == "pay") == (m["verified"] == true) {
				t.Fatalf("only pay must be unverified: %s", body)
			}
		}
	})
}

// The contracts and overview aggregates answer the same before and after the
// hourly roll-up, on both stores, with the counts of what was recorded.
func TestGraphQLStatsAcrossRollup(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		ctx := adminCtx(e)
		if resp, body := e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"source": enginetest.OrderFlowYAML}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("contract: %d %s", resp.StatusCode, body)
		}
		th := e.Server.Threads
		start := func(contract, role string) string {
			r, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Contract: contract, Role: role})
			if err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		step := func(id, name, status string, c map[string]string) {
			t.Helper()
			if c == nil {
				c = map[string]string{}
			}
			e.Clock.Advance(40 * time.Minute) // spread over several hours
			if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: id, StepName: name, Status: status, IdempotencyKey: name,
				Context: c, Metadata: map[string]any{"error": "boom"}}); err != nil {
				t.Fatal(err)
			}
		}
		a := start("order_flow", "checkout")
		step(a, "validate", "success", map[string]string{"items": "1"})
		step(a, "pay", "failed", nil)
		step(a, "pay", "success", nil)
		b := start("order_flow", "checkout")
		step(b, "pay", "success", nil) // not an entry point: violated
		c := start("", "")
		step(c, "charge", "failed", nil)
		e.Clock.Advance(2 * time.Hour)

		q := `{ contractStats { name version threads violated }
 stepStats(contractName: "order_flow", contractVersion: 1) { stepName attempts failed violated warnings }
 overview(hours: 24, limit: 10) { hours { start started completed failed } steps { stepName attempts failed violated warnings } } }`
		read := func() map[string]any {
			t.Helper()
			status, r, body := gqlPost(t, e, e.AdminKey, q, nil)
			if status != http.StatusOK || len(r.Errors) > 0 {
				t.Fatalf("%d %s", status, body)
			}
			return r.Data
		}
		before := read()
		steps := map[string]map[string]any{}
		for _, s := range before["stepStats"].([]any) {
			steps[s.(map[string]any)["stepName"].(string)] = s.(map[string]any)
		}
		if p := steps["pay"]; p == nil || p["attempts"] != float64(3) || p["failed"] != float64(1) || p["violated"] != float64(1) ||
			steps["validate"]["attempts"] != float64(1) || steps["charge"] != nil {
			t.Fatalf("stepStats %v", before["stepStats"])
		}
		if cs := before["contractStats"].([]any); len(cs) != 1 || cs[0].(map[string]any)["threads"] != float64(2) || cs[0].(map[string]any)["violated"] != float64(1) {
			t.Fatalf("contractStats %v", cs)
		}
		if top := before["overview"].(map[string]any)["steps"].([]any); len(top) != 3 {
			t.Fatalf("overview steps %v", top)
		}
		rolled := 0
		for {
			n, err := threadquery.New(e.Server.DB).RollUp(context.Background(), e.Clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if rolled += n; n == 0 {
				break
			}
		}
		var rows int
		if err := e.Server.DB.Get(&rows, `SELECT COUNT(*) FROM step_stats_hourly`); err != nil || rows == 0 {
			t.Fatalf("%d rolled-up rows (%d hours), %v", rows, rolled, err)
		}
		if after := read(); !reflect.DeepEqual(before, after) {
			t.Fatalf("after the roll-up:\n%v\nbefore:\n%v", after, before)
		}
	})
}
