package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// consoleErrors records uncaught exceptions and console.error calls.
func consoleErrors(ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	_ = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			errs = append(errs, "exception: "+e.ExceptionDetails.Text+" "+fmt.Sprint(e.ExceptionDetails.Exception.Description))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				errs = append(errs, "console.error: "+strings.Join(parts, " "))
			}
		}
	})
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, errs...) }
}

type seeded struct {
	violated, failed, cancelled, long, spans, parent, child, tampered string
	bulk, bulkBad                                                     int
}

// seedHealth records the threads the support-engineer pages are judged on:
// a contract violation, a failed free-form thread, a cancellation with a
// reason, a 500-step thread, OTLP-style nested spans, linked threads, a
// tampered chain, and 10,000 plain threads written straight into the store.
func seedHealth(t *testing.T, eng *enginetest.Engine) seeded {
	t.Helper()
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Email: eng.Admin.Email, Role: domain.RoleAdmin})
	th := eng.Server.Threads
	if resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": enginetest.OrderFlowYAML}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("contract: %d %s", resp.StatusCode, body)
	}
	var s seeded
	start := func(in threads.StartThreadInput) string {
		r, err := th.Application().Commands.StartThread.Handle(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	step := func(id, name, key, status string, c map[string]string, meta map[string]any, d time.Duration) {
		t.Helper()
		at := eng.Clock.Now()
		eng.Clock.Advance(d)
		fin := eng.Clock.Now()
		if c == nil {
			c = map[string]string{}
		}
		if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: id, StepName: name, Status: status, IdempotencyKey: key,
			Context: c, Metadata: meta, StartedAt: &at, FinishedAt: &fin}); err != nil {
			t.Fatalf("record %s: %v", name, err)
		}
	}

	// 9,990 threads written in bulk (every 10th violated, every 25th
	// failed): with the 8 below, under the 10,000 a list counts exactly.
	db := eng.Server.DB
	base := eng.Clock.Now().Add(-6 * 24 * time.Hour)
	const n = 9990
	tx, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 500 {
		var q strings.Builder
		var args []any
		q.WriteString(`INSERT INTO threads (id, contract_name, contract_version, contract_id, label, owner_kind, owner_id, status, tags, created_at, updated_at, completed_at,
 health, critical_issues, failed_steps, first_issue_step, first_issue_type, first_issue_message, duration_ms, step_count, health_version) VALUES `)
		for j := i; j < min(i+500, n); j++ {
			if j > i {
				q.WriteString(",")
			}
			q.WriteString("(?,?,?,?,?,'user',?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)")
			created := base.Add(time.Duration(j) * 50 * time.Second)
			done := created.Add(time.Duration(j%97) * time.Second)
			status, health, crit, failed := "completed", "OK", 0, 0
			var is, typ, msg any
			switch {
			case j%25 == 0:
				status, health, failed, is, typ, msg = "failed", "FAILED", 1, "pay", "step_failed", "card declined"
				s.bulkBad++
			case j%10 == 0:
				health, crit, is, typ, msg = "VIOLATED", 1, "ship", "invalid_transition", "Invalid transition from validate to ship"
				s.bulkBad++
			}
			args = append(args, uuid.NewString(), "order_flow", 1, "order_flow", fmt.Sprintf("bulk %05d", j), eng.Admin.ID, status,
				`["bulk"]`, sqldb.Time(created), sqldb.Time(done), sqldb.Time(done), health, crit, failed, is, typ, msg, done.Sub(created).Milliseconds(), 2)
		}
		if _, err := tx.Exec(db.Rebind(q.String()), args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Rows written behind the engine's back, ended days ago: the contract
	// statistics count them anyway (migration 00097's triggers on threads).
	s.bulk = n

	// A contract violation on a running thread: pay is not an entry point.
	s.violated = start(threads.StartThreadInput{Contract: "order_flow", Role: "checkout", Label: "Order ORD-VIOL", Refs: map[string]string{"orderId": "ORD-VIOL"}, Tags: []string{"vip"}})
	step(s.violated, "pay", "p1", "success", map[string]string{"psp": "acme"}, nil, 800*time.Millisecond)
	// A free-form thread whose step failed.
	s.failed = start(threads.StartThreadInput{Label: "Refund R-9", Refs: map[string]string{"refundId": "R-9"}})
	step(s.failed, "refund", "r1", "failed", map[string]string{"amount": "12"}, map[string]any{"error": "PSP refused the refund: account closed"}, 2*time.Second)
	// Its next attempt carries sub-steps, in the order sent.
	if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: s.failed, StepName: "refund", Status: "failed",
		IdempotencyKey: "r2", Context: map[string]string{"amount": "12"}, Metadata: map[string]any{"error": "PSP refused the refund: account closed"},
		SubSteps: []threads.SubStepInput{{Name: "lookup-account", Status: "success"}, {Name: "call-psp", Status: "failed"}}}); err != nil {
		t.Fatal(err)
	}
	// Cancelled with a reason.
	s.cancelled = start(threads.StartThreadInput{Label: "Order ORD-CANCEL"})
	step(s.cancelled, "validate", "v", "success", nil, nil, time.Second)
	if _, err := th.Application().Commands.EndThread.Handle(ctx, threads.EndThreadInput{ThreadID: s.cancelled, Status: "cancelled", Reason: "customer changed their mind"}); err != nil {
		t.Fatal(err)
	}
	// Linked threads: parent → child.
	s.parent = start(threads.StartThreadInput{Label: "Order ORD-PARENT"})
	step(s.parent, "validate", "v", "success", nil, nil, time.Second)
	s.child = start(threads.StartThreadInput{Label: "Refund of ORD-PARENT"})
	step(s.child, "refund", "r", "success", nil, nil, time.Second)
	if err := th.Application().Commands.AddRefs.Handle(ctx, threads.AddRefsInput{ThreadID: s.parent, Refs: map[string]string{"linkedThread:refund": s.child}}); err != nil {
		t.Fatal(err)
	}
	// OTLP-style spans: a root with two children, one of which has a child.
	s.spans = start(threads.StartThreadInput{Label: "Trace checkout", ServiceName: "otel"})
	span := func(name, id, parent string, d time.Duration, status string) {
		meta := map[string]any{"otel_trace_id": "t1", "otel_span_id": id}
		if parent != "" {
			meta["otel_parent_span_id"] = parent
		}
		step(s.spans, name, id, status, nil, meta, d)
	}
	span("GET /checkout", "a1", "", 300*time.Millisecond, "success")
	span("db.query", "b1", "a1", 120*time.Millisecond, "success")
	span("psp.charge", "b2", "a1", 900*time.Millisecond, "success")
	span("http.post", "c1", "b2", 400*time.Millisecond, "failed")
	// 500 steps.
	s.long = start(threads.StartThreadInput{Label: "Batch import 500"})
	for i := 0; i < 500; i++ {
		step(s.long, fmt.Sprintf("row_%03d", i), "k", "success", nil, nil, 500*time.Millisecond)
	}
	// Ended, it is the longest thread (longest first lists ended threads by
	// duration; a running one sorts as 0 until it ends).
	if _, err := th.Application().Commands.EndThread.Handle(ctx, threads.EndThreadInput{ThreadID: s.long, Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	// A tampered chain: the second and third steps' stored contexts are
	// altered; the page must name the first, approve.
	s.tampered = start(threads.StartThreadInput{Label: "Tampered T-1"})
	step(s.tampered, "create", "c", "success", map[string]string{"amount": "10"}, nil, time.Second)
	step(s.tampered, "approve", "a", "success", map[string]string{"amount": "10"}, nil, time.Second)
	step(s.tampered, "pay_out", "p", "success", map[string]string{"amount": "10"}, nil, time.Second)
	if _, err := db.Exec(db.Rebind(`UPDATE thread_activities SET context = '{"amount":"10000"}' WHERE thread_id = ? AND step_name IN ('approve', 'pay_out')`), s.tampered); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSupportEngineerPages(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	eng := enginetest.Start(t, sqldb.SQLite)
	began := time.Now()
	s := seedHealth(t, eng)
	t.Logf("seeded 9,990 + 8 threads (one with 500 steps) in %s", time.Since(began).Round(time.Millisecond))
	base := eng.URL
	do(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/threads"),
		chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey),
		chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`#threads-count`)))

	t.Run("one filter finds every failed or violated thread", func(t *testing.T) {
		do(t, ctx, "needs attention", chromedp.Click(css(`#needs-attention`)), chromedp.WaitVisible(css(`#threads-count`)),
			void(chromedp.Poll[bool](`location.search.includes('health=FAILED%2CVIOLATED')`)))
		want := s.bulkBad + 3 // + the violated contract thread, the failed refund and the trace with a failed span
		do(t, ctx, "count", waitText(`#threads-count`, fmt.Sprintf("1–25 of %d", want)))
		healths := get(t, ctx, "row health", chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-health]')].map(r => r.dataset.health)`))
		for _, h := range healths {
			if h != "FAILED" && h != "VIOLATED" {
				t.Fatalf("row with health %s in the needs-attention list", h)
			}
		}
		// A violation is never green; active and completed differ in colour.
		colours := get(t, ctx, "colours", chromedp.Evaluate[[]string](`(() => {
  const c = (sel) => { const e = document.querySelector(sel); return e ? getComputedStyle(e).color : 'missing'; };
  return [c('[data-health=VIOLATED]'), c('.pill[data-health=VIOLATED]'), c('.pill[data-status=active]'), c('.pill[data-status=completed]')];
})()`))
		if colours[1] == "missing" || strings.Contains(colours[1], "rgb(26, 127") || colours[2] == colours[3] {
			t.Fatalf("badge colours %v: violated must not be green; active must differ from completed", colours)
		}
		reason := text(t, ctx, `tr[data-row="`+s.failed+`"] .reason`)
		if !strings.Contains(reason, "refund: PSP refused the refund") {
			t.Fatalf("reason line %q", reason)
		}
		// Every column fits at 1280 px: the table does not scroll sideways
		// and each Started cell (date, time and zone) is inside the panel.
		fit := get(t, ctx, "fit", chromedp.Evaluate[string](`(() => {
  const w = document.querySelector('#threads-h').closest('.panel').querySelector('.table-wrap');
  if (w.scrollWidth > w.clientWidth) return 'table scrolls: ' + w.scrollWidth + ' > ' + w.clientWidth;
  const right = w.getBoundingClientRect().right;
  for (const c of document.querySelectorAll('td.col-started time')) {
    const r = c.getBoundingClientRect();
    if (r.right > right + 0.5 || r.width === 0) return 'started cell clipped: ' + c.textContent + ' ends at ' + r.right + ' > ' + right;
    if (!/(UTC|GMT)/.test(c.textContent)) return 'no zone in ' + c.textContent;
  }
  return 'ok';
})()`))
		if fit != "ok" || window(t, ctx) != 1280 {
			t.Fatalf("threads table at %d px: %s", window(t, ctx), fit)
		}
		noJunk(t, ctx, "needs-attention")
		shot(t, ctx, "20-threads-needs-attention")
	})

	t.Run("contract picked case-insensitively, ref key alone, id prefix", func(t *testing.T) {
		do(t, ctx, "contract",
			chromedp.Navigate(base+"/ui/threads"), chromedp.WaitVisible(css(`#threads-count`)),
			chromedp.SendKeys(css(`#thread-filters input[name=contract]`), "ORDER_FLOW"),
			chromedp.Click(css(`#thread-filters button[type=submit]`)),
			void(chromedp.Poll[bool](`location.search.includes('contract=order_flow')`)),
			waitText(`#threads-count`, fmt.Sprintf("1–25 of %d", s.bulk+1)))
		do(t, ctx, "ref key alone", chromedp.Navigate(base+"/ui/threads?refKey=refundId"), waitText(`#threads-count`, "1–1 of 1"))
		do(t, ctx, "ref key and contract", chromedp.Navigate(base+"/ui/threads?refKey=orderId&contract=order_flow"), waitText(`#threads-count`, "1–1 of 1"))
		do(t, ctx, "id prefix", chromedp.Navigate(base+"/ui/threads?id="+strings.ToUpper(s.spans[:8])), waitText(`#threads-count`, "1–1 of 1"),
			chromedp.WaitVisible(css(`a[data-thread-id="`+s.spans+`"]`)))
	})

	t.Run("sort, page size, time presets and pages past the end", func(t *testing.T) {
		do(t, ctx, "longest first, 50 per page", chromedp.Navigate(base+"/ui/threads?sort=long&size=50"), waitText(`#threads-count`, fmt.Sprintf("1–50 of %d", s.bulk+8)))
		rows := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('tr[data-row]').length`))
		first := get(t, ctx, "first", chromedp.Evaluate[string](`document.querySelector('tr[data-row]').dataset.row`))
		if rows != 50 || first != s.long {
			t.Fatalf("%d rows, first %s; want 50 with the 500-step thread first", rows, first)
		}
		do(t, ctx, "last hour", chromedp.Navigate(base+"/ui/threads?when=1h"), waitText(`#threads-count`, "1–8 of 8"))
		do(t, ctx, "past the end", chromedp.Navigate(base+"/ui/threads?page=9999"), chromedp.WaitVisible(css(`#page-past-end`)))
		if c := text(t, ctx, `#threads-count`); c != "Page 9999 is past the end" {
			t.Fatalf("count %q", c)
		}
		do(t, ctx, "last page", chromedp.Click(css(`#last-page`)), waitText(`#threads-count`, fmt.Sprintf("%d–%d of %d", (s.bulk+8-1)/25*25+1, s.bulk+8, s.bulk+8)))
		do(t, ctx, "a title from the list", chromedp.Navigate(base+"/ui/threads?page=4&size=10"), waitText(`#threads-count`, fmt.Sprintf("31–40 of %d", s.bulk+8)))
		noJunk(t, ctx, "last-page")
		shot(t, ctx, "21-threads-last-page")
	})

	t.Run("new threads appear without a reload", func(t *testing.T) {
		do(t, ctx, "open", chromedp.Navigate(base+"/ui/threads?when=1h"), waitText(`#threads-count`, "1–8 of 8"),
			void(chromedp.Evaluate[bool](`window.__stay = true`)))
		// While nothing changes the page polls the version (304) and
		// does not run its GraphQL query again.
		const requests = `(() => { const r = performance.getEntriesByType('resource');
  return r.filter(e => e.name.includes('/graphql')).length + ' ' + r.filter(e => e.name.includes('/v1/threads/version')).map(e => e.responseStatus).join(','); })()`
		before := get(t, ctx, "requests", chromedp.Evaluate[string](requests))
		gqlBefore, pollsBefore, _ := strings.Cut(before, " ")
		// Wait (in the page, however long a busy machine takes) for a poll
		// (every 5 s) answered since.
		pollsJS, _ := json.Marshal(pollsBefore)
		do(t, ctx, "a version poll", void(chromedp.Poll[bool](`(() => { const p = performance.getEntriesByType('resource').filter(e => e.name.includes('/v1/threads/version')).map(e => e.responseStatus).join(',');
  return p.length > `+string(pollsJS)+`.length && p.endsWith(',304'); })()`)))
		gqlAfter, polls, _ := strings.Cut(get(t, ctx, "requests", chromedp.Evaluate[string](requests)), " ")
		if gqlAfter != gqlBefore || !strings.HasSuffix(polls, ",304") {
			t.Fatalf("while nothing changed: graphql requests %s → %s, version answers %s", gqlBefore, gqlAfter, polls)
		}
		actx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
		r, err := eng.Server.Threads.Application().Commands.StartThread.Handle(actx, threads.StartThreadInput{Label: "Fresh one"})
		if err != nil {
			t.Fatal(err)
		}
		do(t, ctx, "appears", chromedp.WaitVisible(css(`a[data-thread-id="`+r.ID+`"]`)), waitText(`#threads-count`, "1–9 of 9"))
		if !get(t, ctx, "no reload", chromedp.Evaluate[bool](`window.__stay === true`)) {
			t.Fatal("the page reloaded")
		}
	})

	t.Run("thread page says why above the fold", func(t *testing.T) {
		do(t, ctx, "violated", chromedp.Navigate(base+"/ui/threads/"+s.violated), chromedp.WaitVisible(css(`#first-issue`)), chromedp.WaitVisible(css(`#contract-graph`)))
		issue := text(t, ctx, `#first-issue`)
		top := get(t, ctx, "fold", chromedp.Evaluate[float64](`document.querySelector('#first-issue').getBoundingClientRect().bottom`))
		if !strings.Contains(issue, "pay") || !strings.Contains(issue, "cannot start a thread") || top > 900 {
			t.Fatalf("first issue %q at %vpx", issue, top)
		}
		if v := text(t, ctx, `li[data-step=pay] [data-validation]`); v != "violated" {
			t.Fatalf("step validation %q", v)
		}
		// Never green: not in the step list (its pills), the waterfall, the
		// graph node, nor the attempts table.
		do(t, ctx, "open attempts", chromedp.Click(css(`li[data-step=pay] details.history:last-of-type summary`)), chromedp.WaitVisible(css(`li[data-step=pay] details.history table`)))
		green := get(t, ctx, "green", chromedp.Evaluate[[]string](`(() => {
  const out = [];
  const isGreen = (c) => { const m = c.match(/\d+/g); return m && Number(m[1]) > Number(m[0]) + 40 && Number(m[1]) > Number(m[2]) + 20; };
  for (const e of document.querySelectorAll('li[data-step=pay] .pill, li[data-step=pay] .dot')) {
    const st = getComputedStyle(e);
    if (isGreen(st.color) || isGreen(st.borderTopColor) || e.classList.contains('ok')) out.push('step: ' + e.textContent + ' ' + st.color);
  }
  const bar = document.querySelector('#waterfall .wf-row[data-step=pay] .wf-bar');
  if (!bar || isGreen(getComputedStyle(bar).backgroundColor)) out.push('waterfall bar ' + (bar ? getComputedStyle(bar).backgroundColor : 'missing'));
  const node = document.querySelector('#contract-graph .g-node[data-step=pay]');
  if (!node || !node.classList.contains('s-bad')) out.push('graph node ' + (node ? node.getAttribute('class') : 'missing'));
  else if (isGreen(getComputedStyle(node.querySelector('rect')).stroke)) out.push('graph stroke ' + getComputedStyle(node.querySelector('rect')).stroke);
  return out;
})()`))
		if len(green) > 0 {
			t.Fatalf("the violating step looks green: %v", green)
		}
		if x := text(t, ctx, `li[data-step=pay] details.history table`); !strings.Contains(x, "violated") {
			t.Fatalf("attempts table %q must say violated", x)
		}
		who := text(t, ctx, `li[data-step=pay] .actor`)
		if !strings.Contains(who, "Owner") {
			t.Fatalf("actor %q, want the owner's name", who)
		}
		// Every in-page link has its target, and following the banner's
		// step link stays on this page (the shell's <base href> must not
		// send it to the UI root) and brings the step into view.
		if dead := get(t, ctx, "dead anchors", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#content a[href^="#"]')]
  .map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)))`)); len(dead) > 0 {
			t.Fatalf("in-page links without a target: %v", dead)
		}
		threadURL := base + "/ui/threads/" + s.violated
		do(t, ctx, "scroll away", void(chromedp.Evaluate[bool](`window.scrollTo(0, document.body.scrollHeight), true`)))
		do(t, ctx, "follow the banner's step link", chromedp.Click(css(`#first-issue a`)))
		// Steps are keyed by identity: the pay step's key is p1.
		at := get(t, ctx, "after the link", chromedp.Evaluate[string](`location.href + ' ' + Math.round(document.getElementById('step-pay/p1').getBoundingClientRect().top)`))
		if loc, top, _ := strings.Cut(at, " "); loc != threadURL+"#step-pay/p1" || top == "" || strings.HasPrefix(top, "-") || len(top) > 3 {
			t.Fatalf("banner link: at %s, step at %spx from the top; want %s#step-pay/p1 with the step in view", loc, top, threadURL)
		}
		if x := text(t, ctx, `#first-issue`); !strings.Contains(x, "pay") {
			t.Fatalf("left the thread page: %q", x)
		}
		noJunk(t, ctx, "violated-thread")
		do(t, ctx, "scroll to top", void(chromedp.Evaluate[bool](`window.scrollTo(0, 0), true`)))
		shot(t, ctx, "22-thread-violated")
		do(t, ctx, "failed", chromedp.Navigate(base+"/ui/threads/"+s.failed), chromedp.WaitVisible(css(`#first-issue`)))
		if x := text(t, ctx, `#first-issue`); !strings.Contains(x, "PSP refused the refund") {
			t.Fatalf("failed thread banner %q", x)
		}
		// The step shows its message and its sub-steps, in the order sent.
		if x := text(t, ctx, `li[data-step=refund] .step-msg`); !strings.Contains(x, "PSP refused the refund: account closed") {
			t.Fatalf("step message %q", x)
		}
		if x := text(t, ctx, `li[data-step=refund] .substeps`); !strings.Contains(x, "Sub-steps (2)") ||
			!strings.Contains(x, "lookup-account") || !strings.Contains(x, "call-psp") || strings.Index(x, "lookup-account") > strings.Index(x, "call-psp") {
			t.Fatalf("sub-steps %q", x)
		}
		do(t, ctx, "cancelled", chromedp.Navigate(base+"/ui/threads/"+s.cancelled), chromedp.WaitVisible(css(`#end-reason`)))
		if x := text(t, ctx, `#end-reason`); !strings.Contains(x, "customer changed their mind") {
			t.Fatalf("end reason %q", x)
		}
		if x := text(t, ctx, `.cards`); !strings.Contains(strings.ToLower(x), "cancelled\n") {
			t.Fatalf("cards %q must label the end as Cancelled", x)
		}
		shot(t, ctx, "23-thread-cancelled")
	})

	t.Run("500 steps load a page at a time with counts", func(t *testing.T) {
		do(t, ctx, "long", chromedp.Navigate(base+"/ui/threads/"+s.long), waitText(`#steps-count`, "showing 20 of 500"),
			waitText(`#attempts-count`, "showing 60 of 500 attempts"))
		// The observed graph is drawn from every step name the outline holds (100), not the 20 loaded.
		do(t, ctx, "graph count", waitText(`#graph-count`, "drawn from the first 100 step names (100 of 500 steps)"))
		do(t, ctx, "more steps", chromedp.Click(css(`#more-steps`)), waitText(`#steps-count`, "showing 40 of 500"))
		do(t, ctx, "more attempts", chromedp.Click(css(`#more-attempts`)), waitText(`#attempts-count`, "showing 120 of 500 attempts"))
		scale := get(t, ctx, "scale", chromedp.Evaluate[float64](`Number(document.querySelector('#contract-graph').dataset.scale)`))
		font := get(t, ctx, "font", chromedp.Evaluate[float64](`document.querySelector('#contract-graph .g-node text').getBoundingClientRect().height`))
		if scale < 0.79 || font < 9 {
			t.Fatalf("graph zoom %v, text %vpx: must stay readable", scale, font)
		}
		do(t, ctx, "zoom in", chromedp.Click(css(`.graph-tools button[aria-label="Zoom in"]`)))
		if s2 := get(t, ctx, "scale", chromedp.Evaluate[float64](`Number(document.querySelector('#contract-graph').dataset.scale)`)); s2 <= scale {
			t.Fatalf("zoom in: %v → %v", scale, s2)
		}
		noJunk(t, ctx, "long-thread")
		viewShot(t, ctx, "24-thread-500-steps")
	})

	t.Run("spans keep their nesting, links go both ways, times switch to UTC", func(t *testing.T) {
		do(t, ctx, "spans", chromedp.Navigate(base+"/ui/threads/"+s.spans), chromedp.WaitVisible(css(`#waterfall`)))
		depths := get(t, ctx, "depths", chromedp.Evaluate[string](`[...document.querySelectorAll('#waterfall .wf-row[data-step]')].map(r => r.dataset.step + ':' + r.dataset.depth).join(',')`))
		if depths != "GET /checkout:0,db.query:1,psp.charge:1,http.post:2" {
			t.Fatalf("waterfall nesting %s", depths)
		}
		if cls := get(t, ctx, "failed pill", chromedp.Evaluate[string](`document.querySelector('li[data-step="http.post"] [data-run]').className`)); !strings.Contains(cls, "bad") {
			t.Fatalf("a failed step's status pill is %q, want red", cls)
		}
		shot(t, ctx, "25-thread-spans")
		do(t, ctx, "child", chromedp.Navigate(base+"/ui/threads/"+s.child), chromedp.WaitVisible(css(`#links-from a[data-linked="`+s.parent+`"]`)))
		do(t, ctx, "parent", chromedp.Navigate(base+"/ui/threads/"+s.parent), chromedp.WaitVisible(css(`#links-to a[data-linked="`+s.child+`"]`)))
		local := text(t, ctx, `.cards time`)
		do(t, ctx, "utc", chromedp.Click(css(`#tz-toggle`)), waitText(`#tz-toggle`, "Times in UTC"))
		utc := text(t, ctx, `.cards time`)
		if !strings.HasSuffix(utc, "UTC") || local == "" {
			t.Fatalf("times %q → %q", local, utc)
		}
		do(t, ctx, "back to local", chromedp.Click(css(`#tz-toggle`)), waitText(`#tz-toggle`, "Times in local zone"))
	})

	t.Run("a tampered chain names the altered step", func(t *testing.T) {
		do(t, ctx, "tampered", chromedp.Navigate(base+"/ui/threads/"+s.tampered), chromedp.WaitVisible(css(`#chain-broken`)))
		if x := text(t, ctx, `#chain-broken`); !strings.Contains(x, "approve") {
			t.Fatalf("banner %q", x)
		}
		marked := get(t, ctx, "marked", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#steps-timeline li.tampered')].map(l => l.dataset.step)`))
		if strings.Join(marked, ",") != "approve" {
			t.Fatalf("marked steps %v, want only approve", marked)
		}
		wf := get(t, ctx, "waterfall marks", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#waterfall [data-altered]')].map(e => e.dataset.altered)`))
		node := get(t, ctx, "graph node", chromedp.Evaluate[string](`document.querySelector('#contract-graph .g-node[data-step=approve]').getAttribute('class')`))
		title := text(t, ctx, `#thread-banner .outcome-title`)
		if strings.Join(wf, ",") != "approve" || !strings.Contains(node, "s-bad") || !strings.Contains(title, "altered") {
			t.Fatalf("timeline marks %v, graph node %q, banner %q", wf, node, title)
		}
		shot(t, ctx, "26-thread-tampered")
	})

	t.Run("an open thread updates live", func(t *testing.T) {
		do(t, ctx, "open", chromedp.Navigate(base+"/ui/threads/"+s.parent), waitText(`#steps-count`, "showing 1 of 1"))
		actx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
		if _, err := eng.Server.Threads.Application().Commands.RecordStep.Handle(actx, threads.RecordStepInput{ThreadID: s.parent, StepName: "ship", Status: "failed", IdempotencyKey: "s",
			Context: map[string]string{}, Metadata: map[string]any{"error": "carrier down"}}); err != nil {
			t.Fatal(err)
		}
		do(t, ctx, "updated", waitText(`#steps-count`, "showing 2 of 2"), chromedp.WaitVisible(css(`#first-issue`)))
	})

	t.Run("contracts and overview", func(t *testing.T) {
		do(t, ctx, "contracts", chromedp.Navigate(base+"/ui/contracts"), chromedp.WaitVisible(css(`a[data-contract=order_flow]`)))
		if n := text(t, ctx, `a[data-threads=order_flow]`); n != fmt.Sprint(s.bulk+1) {
			t.Fatalf("order_flow threads %q", n)
		}
		if n := text(t, ctx, `[data-steps=order_flow]`); n != "3" {
			t.Fatalf("order_flow steps %q", n)
		}
		shot(t, ctx, "27-contracts")
		do(t, ctx, "contract version", chromedp.Click(css(`a[data-contract=order_flow]`)), chromedp.WaitVisible(css(`#contract-graph`)),
			chromedp.WaitVisible(css(`#step-stats table`)))
		if src := text(t, ctx, `#contract-source`); !strings.Contains(src, "contract_name: order_flow") {
			t.Fatalf("source %q", src)
		}
		if p := text(t, ctx, `#contract-parties`); p != "checkout, warehouse" {
			t.Fatalf("parties %q", p)
		}
		stats := text(t, ctx, `#step-stats`)
		if !strings.Contains(stats, "pay") || !strings.Contains(stats, "1 (100 %)") {
			t.Fatalf("step stats %q", stats)
		}
		if n := text(t, ctx, `#contract-threads-count`); !strings.HasPrefix(n, fmt.Sprintf("showing 10 of %d", s.bulk+1)) {
			t.Fatalf("latest threads count %q", n)
		}
		noJunk(t, ctx, "contract")
		shot(t, ctx, "28-contract-version")
		// A version threads use is not offered for deletion: the page says
		// why (the engine would refuse it with contract_version_in_use).
		if n := get(t, ctx, "delete offered", chromedp.Evaluate[int](`document.querySelectorAll('#delete-version').length`)); n != 0 {
			t.Fatal("Delete offered for a version in use")
		}
		if msg := text(t, ctx, `#version-in-use`); msg != fmt.Sprintf("v1 is used by %d threads: it cannot be deleted", s.bulk+1) {
			t.Fatalf("in-use note %q", msg)
		}
		shot(t, ctx, "28b-contract-version-in-use")
		if resp, _ := eng.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/1", eng.AdminKey, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("v1 after refused delete: %d", resp.StatusCode)
		}
		// An unused version: cancel keeps it, confirm deletes it.
		v2 := strings.Replace(enginetest.OrderFlowYAML, "version: 1", "version: 2", 1)
		if resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": v2}); resp.StatusCode != http.StatusCreated {
			t.Fatalf("v2: %d %s", resp.StatusCode, body)
		}
		do(t, ctx, "v2 page", chromedp.Navigate(base+"/ui/contracts/order_flow/2"), chromedp.WaitVisible(css(`#delete-version`)),
			chromedp.Click(css(`#delete-version`)), chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
			chromedp.Click(css(`dialog .dialog-foot button:first-child`)), chromedp.WaitNotPresent(css(`dialog`)))
		if resp, _ := eng.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/2", eng.AdminKey, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("cancel deleted v2: %d", resp.StatusCode)
		}
		do(t, ctx, "delete v2", chromedp.Click(css(`#delete-version`)), chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
			chromedp.Click(css(`dialog .btn-danger.solid`)), void(chromedp.Poll[bool](`location.pathname.endsWith('/ui/contracts')`)))
		if resp, _ := eng.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/2", eng.AdminKey, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("v2 after delete: %d", resp.StatusCode)
		}
		do(t, ctx, "list after delete", waitText(`[data-versions=order_flow]`, "v1"))
		do(t, ctx, "threads of one version", chromedp.Navigate(base+"/ui/threads?contract=order_flow&version=1"), waitText(`#threads-count`, fmt.Sprintf("1–25 of %d", s.bulk+1)),
			chromedp.WaitVisible(css(`#all-versions`)))
		do(t, ctx, "overview", chromedp.Navigate(base+"/ui/overview"), chromedp.WaitVisible(css(`#chart-7d`)))
		started := text(t, ctx, `#started-7d`)
		bars := get(t, ctx, "bars", chromedp.Evaluate[int](`document.querySelectorAll('#chart-7d rect[data-series=started]').length`))
		rates := text(t, ctx, `#rate-contracts`)
		top := text(t, ctx, `#top-failing`)
		if started == "0" || bars < 100 || !strings.Contains(rates, "order_flow v1") || !strings.Contains(top, "http.post") {
			t.Fatalf("overview: started %s, %d bars, rates %q, top %q", started, bars, rates, top)
		}
		// The contract's rate is its VIOLATED threads of all its threads.
		resp, body := eng.Do(t, http.MethodPost, "/graphql", eng.AdminKey, map[string]any{
			"query": `{ contractStats { name version threads violated } }`})
		var cs struct {
			Data struct {
				ContractStats []struct {
					Name              string
					Version           int
					Threads, Violated int
				}
			}
		}
		if err := json.Unmarshal(body, &cs); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("contractStats: %d %s", resp.StatusCode, body)
		}
		for _, c := range cs.Data.ContractStats {
			if c.Name == "order_flow" && c.Version == 1 {
				if c.Violated == 0 || !strings.Contains(rates, fmt.Sprintf("%d/%d", c.Violated, c.Threads)) {
					t.Fatalf("contract rate %q, want %d/%d", rates, c.Violated, c.Threads)
				}
			}
		}
		if steps := text(t, ctx, `#rate-steps`); !strings.Contains(steps, "/") {
			t.Fatalf("violation rate by step %q", steps)
		}
		if n := get(t, ctx, "24h bars", chromedp.Evaluate[int](`document.querySelectorAll('#chart-24h rect').length`)); n == 0 {
			t.Fatal("the 24 h chart has no bars")
		}
		noJunk(t, ctx, "overview")
		shot(t, ctx, "29-overview")
	})

	// The last subtests add contract threads as the admin, after every
	// count above was checked.
	actx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
	cmds := eng.Server.Threads.Application().Commands
	startOrder := func(t *testing.T, label string) domain.Thread {
		t.Helper()
		r, err := cmds.StartThread.Handle(actx, threads.StartThreadInput{Contract: "order_flow", Role: "checkout", Label: label})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("validation results load more", func(t *testing.T) {
		r := startOrder(t, "Many validations")
		// 25 attempts of the entry step (retries after failures): each is
		// judged, none fails the thread.
		for i := range 25 {
			if _, err := cmds.RecordStep.Handle(actx, threads.RecordStepInput{ThreadID: r.ID, StepName: "validate", Status: "failed",
				IdempotencyKey: "v", Context: map[string]string{"items": "1"}, Metadata: map[string]any{"error": fmt.Sprintf("try %d", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		rows := func() int {
			return get(t, ctx, "validation rows", chromedp.Evaluate[int](`document.querySelectorAll('#validation-panel tbody tr').length`))
		}
		do(t, ctx, "thread", chromedp.Navigate(base+"/ui/threads/"+r.ID), chromedp.WaitVisible(css(`#more-validations`)))
		if n := rows(); n != 20 {
			t.Fatalf("%d validation results on the first page; want 20", n)
		}
		do(t, ctx, "more", chromedp.Click(css(`#more-validations`)), chromedp.WaitNotPresent(css(`#more-validations`)))
		if n := rows(); n != 25 {
			t.Fatalf("%d validation results after load more; want 25", n)
		}
		noJunk(t, ctx, "many-validations")
	})

	t.Run("a forbidden transition is marked on the graph, which pans", func(t *testing.T) {
		r := startOrder(t, "Skips payment")
		for _, name := range []string{"validate", "ship"} { // validate → ship is not a transition
			if _, err := cmds.RecordStep.Handle(actx, threads.RecordStepInput{ThreadID: r.ID, StepName: name, Status: "success",
				IdempotencyKey: name, Context: map[string]string{"items": "1"}}); err != nil {
				t.Fatal(err)
			}
		}
		do(t, ctx, "thread", chromedp.Navigate(base+"/ui/threads/"+r.ID), chromedp.WaitVisible(css(`#contract-graph`)))
		if n := get(t, ctx, "violated edge", chromedp.Evaluate[int](`document.querySelectorAll('#contract-graph path.g-edge.violated[data-edge="validate→ship"]').length`)); n != 1 {
			t.Fatalf("%d violated validate→ship edges drawn; want 1", n)
		}
		transform := func() string {
			return get(t, ctx, "transform", chromedp.Evaluate[string](`document.querySelector('#contract-graph .g-root').getAttribute('transform')`))
		}
		// The viewport fits the graph again on the next animation frame; let
		// that pass so the only change below is the keyboard's.
		get(t, ctx, "two frames", chromedp.Evaluate[bool](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise))
		before := transform()
		do(t, ctx, "pan with the keyboard", chromedp.Focus(css(`.graph-viewport`)), chromedp.KeyEvent(kb.ArrowLeft))
		if after := transform(); after == before || !strings.HasPrefix(after, "translate(") {
			t.Fatalf("ArrowLeft did not pan the graph: %q → %q", before, after)
		}
		noJunk(t, ctx, "forbidden-transition")
	})

	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
}

// window is the page's layout width in CSS pixels.
func window(t *testing.T, ctx context.Context) int {
	return get(t, ctx, "width", chromedp.Evaluate[int](`window.innerWidth`))
}

// viewShot saves what the window shows (a full-page capture of a 500-step
// page is tens of thousands of pixels tall).
func viewShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !screenshots() {
		return
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(artifacts(t), "ui-"+name+".png"), buf, 0o644); err != nil {
		t.Logf("write %s: %v", name, err)
	}
}
