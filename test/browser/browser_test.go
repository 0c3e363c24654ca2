// Package browser_test drives the web UI in headless Chromium (chromedp)
// against a real engine on loopback. Screenshots go to test/artifacts/
// (a failure's always, every page's with THREADENGINE_TEST_SCREENSHOTS=1).
package browser_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

const chromiumPath = "/usr/bin/chromium"

// browser starts headless Chromium with the flags CI uses, at a desktop size.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("chromium is not installed at " + chromiumPath + " (apt-get install -y chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// stepTimeout bounds one step only so that a step that can never succeed
// fails with a screenshot before go test's -timeout kills the run: every
// step waits for a condition in the page, and a busy machine (Chromium and
// the engine sharing two cores with other work) may take long to meet it.
// It is not a speed requirement.
const stepTimeout = 2 * time.Minute

// do runs actions with a per-step timeout and fails with a screenshot.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		shot(t, ctx, "FAILED-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v (page %s, count %q)", what, err, location(t, ctx), countText(ctx))
	}
}

// countText is what the page's list count says, for a failure message.
func countText(ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, _ := chromedp.Run(c, chromedp.Evaluate[string](`(document.querySelector('#threads-count')?.textContent || '').trim()`))
	return v
}

// get runs one action that returns a value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		shot(t, ctx, "FAILED-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// text waits for the first element sel matches to be displayed and reads
// its text in the same evaluation. chromedp.Text finds the node and reads
// it in two calls, and a list the page re-renders in between (the contract
// editor revalidating after a key) failed it with "No node with given id
// found" under load.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	q, _ := json.Marshal(sel)
	js := `(() => { const e = document.querySelector(` + string(q) + `); return e && e.getClientRects().length ? [e.innerText] : null })()`
	v := get(t, ctx, "text of "+sel, chromedp.Poll[[]string](js, chromedp.WithPollingTimeout(stepTimeout)))
	return strings.TrimSpace(v[0])
}

func location(t *testing.T, ctx context.Context) string {
	c, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	loc, _ := chromedp.Run(c, chromedp.Location())
	return loc
}

// noJunk fails when the page shows values that leaked from JavaScript
// ("null", "undefined", "NaN", "[object Object]").
func noJunk(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	junk := get(t, ctx, "junk check", chromedp.Evaluate[string](`(document.querySelector('main') || document.body).innerText.match(/\b(null|undefined|NaN)\b|\[object Object\]/)?.[0] || ''`))
	if junk != "" {
		shot(t, ctx, "FAILED-junk-"+page)
		t.Fatalf("%s page shows %q", page, junk)
	}
}

// void drops an action's value so it can run in a do sequence.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// waitText waits until the element's trimmed text is want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	js, _ := json.Marshal(sel)
	w, _ := json.Marshal(want)
	return void(chromedp.Poll[bool](`(document.querySelector(` + string(js) + `)?.textContent || '').trim() === ` + string(w)))
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

func artifacts(t *testing.T) string {
	dir := filepath.Join("..", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshots reports whether the pages a passing test walks through are
// saved too (THREADENGINE_TEST_SCREENSHOTS=1, for reviewing the UI):
// full-page PNGs took a quarter of the browser tests' time, so by default
// only a failure's page is saved.
func screenshots() bool { return os.Getenv("THREADENGINE_TEST_SCREENSHOTS") != "" }

// shot saves the page as test/artifacts/ui-<name>.png: always for a
// failure (a name starting with FAILED-), else when screenshots() says so.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !strings.HasPrefix(name, "FAILED-") && !screenshots() {
		return
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	buf, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(artifacts(t), "ui-"+name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Logf("write %s: %v", p, err)
	}
}

// seedThreads records two free-form threads (one completed with three steps,
// one still active after a failed step) through the same use case the WebSocket protocol calls.
func seedThreads(t *testing.T, eng *enginetest.Engine) (okID, failedID, contractID string) {
	t.Helper()
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Email: eng.Admin.Email, Role: domain.RoleAdmin})
	th := eng.Server.Threads
	start := func(refs map[string]string) string {
		r, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Refs: refs, ServiceName: "checkout"})
		if err != nil {
			t.Fatalf("start thread: %v", err)
		}
		return r.ID
	}
	step := func(id, name, status string, c map[string]string) {
		eng.Clock.Advance(1500 * time.Millisecond)
		if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: id, StepName: name, Status: status, IdempotencyKey: name, Context: c}); err != nil {
			t.Fatalf("record %s: %v", name, err)
		}
	}
	okID = start(map[string]string{"orderId": "ORD-1001", "label": "Order ORD-1001"})
	step(okID, "validate_order", "success", map[string]string{"amount": "42.50", "currency": "EUR"})
	step(okID, "charge_card", "failed", map[string]string{"psp": "acme", "reason": "timeout"})
	step(okID, "charge_card", "success", map[string]string{"psp": "acme"})
	step(okID, "ship", "success", map[string]string{"carrier": "DHL"})
	if _, err := th.Application().Commands.EndThread.Handle(ctx, threads.EndThreadInput{ThreadID: okID, Status: "completed"}); err != nil {
		t.Fatalf("end thread: %v", err)
	}
	failedID = start(map[string]string{"orderId": "ORD-2002"})
	step(failedID, "validate_order", "failed", map[string]string{"error": "missing address"})

	// A contract thread: validate misses a required field (a recorded
	// violation), pay fails once then succeeds, ship is not reached yet.
	resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": enginetest.OrderFlowYAML})
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("upload contract: %d %s", resp.StatusCode, body)
	}
	r, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Contract: "order_flow:1", Role: "checkout", Refs: map[string]string{"orderId": "ORD-3003", "label": "Order ORD-3003"}})
	if err != nil {
		t.Fatalf("start contract thread: %v", err)
	}
	contractID = r.ID
	stepKey := func(name, status, key string, c map[string]string) {
		eng.Clock.Advance(time.Second)
		if _, err := th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: contractID, StepName: name, Status: status, IdempotencyKey: key, Context: c}); err != nil {
			t.Fatalf("record %s: %v", name, err)
		}
	}
	stepKey("validate", "success", "v1", map[string]string{"customer": "c-17"})
	stepKey("pay", "failed", "p1", map[string]string{"psp": "acme"})
	stepKey("pay", "success", "p1", map[string]string{"psp": "acme"})
	// Link the failed thread as a follow-up, so the chain has two threads.
	if err := th.Application().Commands.AddRefs.Handle(ctx, threads.AddRefsInput{ThreadID: contractID, Refs: map[string]string{"linkedThread:retry": failedID}}); err != nil {
		t.Fatalf("link threads: %v", err)
	}
	return okID, failedID, contractID
}

func TestWebUI(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	eng := enginetest.Start(t, sqldb.SQLite)
	okID, failedID, contractID := seedThreads(t, eng)
	base := eng.URL

	t.Run("unauthenticated goes to login, sign in with API key", func(t *testing.T) {
		var loc string
		do(t, ctx, "open app", chromedp.Navigate(base+"/ui/threads"), chromedp.WaitVisible(css(`#api-key`)))
		loc = location(t, ctx)
		if loc != base+"/login?next=%2Fui%2Fthreads" {
			t.Fatalf("unauthenticated visit landed on %s, want /login?next=%%2Fui%%2Fthreads", loc)
		}
		if n := get(t, ctx, "login card", chromedp.Evaluate[int](`document.querySelectorAll('main.auth-page .auth-card #apikey-form').length`)); n != 1 {
			t.Fatal("/login does not use the UI's auth-page layout")
		}
		shot(t, ctx, "01-login")
		do(t, ctx, "sign in",
			chromedp.SendKeys(css(`#api-key`), eng.AdminKey),
			chromedp.Click(css(`#apikey-submit`)),
			chromedp.WaitVisible(css(`#whoami`)),
			chromedp.WaitVisible(css(`a[data-thread-id]`)))
		loc = location(t, ctx)
		if !strings.HasSuffix(strings.SplitN(loc, "?", 2)[0], "/ui/threads") {
			t.Fatalf("after sign-in at %s, want /ui/threads", loc)
		}
		who := text(t, ctx, `#whoami`)
		if who != "Owner" {
			t.Fatalf("sidebar shows %q, want the owner's name", who)
		}
	})

	t.Run("threads list filters by ref and paginates", func(t *testing.T) {
		count := text(t, ctx, `#threads-count`)
		if count != "1–3 of 3" {
			t.Fatalf("count %q, want 1–3 of 3", count)
		}
		noJunk(t, ctx, "threads")
		shot(t, ctx, "02-threads")
		do(t, ctx, "filter by ref",
			chromedp.SendKeys(css(`#thread-filters input[name=ref]`), "ORD-1001"),
			chromedp.Click(css(`#thread-filters button[type=submit]`)),
			waitText(`#threads-count`, "1–1 of 1"),
			chromedp.WaitVisible(css(`a[data-thread-id="`+okID+`"]`)))
		count = text(t, ctx, `#threads-count`)
		if count != "1–1 of 1" {
			t.Fatalf("ref filter count %q, want 1–1 of 1", count)
		}
		loc := location(t, ctx)
		if !strings.Contains(loc, "ref=ORD-1001") {
			t.Fatalf("filters are not in the URL: %s", loc)
		}
		do(t, ctx, "filter by status",
			chromedp.Navigate(base+"/ui/threads?status=active"),
			chromedp.WaitVisible(css(`#threads-count`)))
		count = text(t, ctx, `#threads-count`)
		if count != "1–2 of 2" {
			t.Fatalf("status filter count %q, want 1–2 of 2", count)
		}
	})

	t.Run("thread detail shows timeline, integrity and graph", func(t *testing.T) {
		var badge, steps string
		var nodes []string
		do(t, ctx, "open thread",
			chromedp.Navigate(base+"/ui/threads"),
			chromedp.WaitVisible(css(`a[data-thread-id="`+okID+`"]`)),
			chromedp.Click(css(`a[data-thread-id="`+okID+`"]`)),
			chromedp.WaitVisible(css(`#steps-timeline`)),
			chromedp.WaitVisible(css(`#integrity-badge`)),
			chromedp.WaitVisible(css(`#contract-graph`)))
		badge = text(t, ctx, `#integrity-badge`)
		steps = text(t, ctx, `#steps-count`)
		nodes = get(t, ctx, "evaluate", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#contract-graph g[data-step]')].map(g => g.dataset.step)`))
		if !strings.Contains(badge, "verified") || !strings.Contains(badge, "4 events") {
			t.Fatalf("integrity badge %q, want verified with 4 events", badge)
		}
		if steps != "showing 3 of 3" {
			t.Fatalf("steps heading %q", steps)
		}
		if strings.Join(nodes, ",") != "validate_order,charge_card,ship" {
			t.Fatalf("graph nodes %v", nodes)
		}
		retry := text(t, ctx, `li[data-step=charge_card] .step-head`)
		if !strings.Contains(retry, "1 retry") {
			t.Fatalf("charge_card head %q, want a retry pill", retry)
		}
		noJunk(t, ctx, "thread")
		shot(t, ctx, "03-thread-detail")
	})

	t.Run("contract thread shows the contract graph and validation results", func(t *testing.T) {
		do(t, ctx, "open contract thread",
			chromedp.Navigate(base+"/ui/threads/"+contractID),
			chromedp.WaitVisible(css(`#contract-graph`)),
			chromedp.WaitVisible(css(`#validation-panel table`)))
		nodes := get(t, ctx, "graph", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#contract-graph g[data-step]')].map(g => g.dataset.step + ':' + g.getAttribute('class').trim().replace(/\s+/g, ' '))`))
		// validate broke a major rule (never green), pay was retried (minor).
		want := []string{"validate:g-node entry s-bad on-path", "pay:g-node s-warn on-path", "ship:g-node terminal"}
		if strings.Join(nodes, "|") != strings.Join(want, "|") {
			t.Fatalf("graph nodes %q, want %q", nodes, want)
		}
		// Forward transitions solid, pay's retry dashed, the path taken marked.
		edges := get(t, ctx, "edges", chromedp.Evaluate[string](`['path.g-edge:not(.back)', 'path.g-edge.back', 'path.g-edge.taken'].map(s => document.querySelectorAll('#contract-graph ' + s).length).join(',')`))
		if edges != "2,1,1" {
			t.Fatalf("edges solid,dashed,taken = %s, want 2,1,1", edges)
		}
		chain := get(t, ctx, "chain", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#links-to > li a[data-linked]')].map(a => a.dataset.linked)`))
		if strings.Join(chain, ",") != failedID {
			t.Fatalf("related threads %v, want this thread then %s", chain, failedID)
		}
		val := text(t, ctx, `#validation-panel`)
		if !strings.Contains(val, "items") {
			t.Fatalf("validation panel does not name the missing field: %q", val)
		}
		noJunk(t, ctx, "contract-thread")
		shot(t, ctx, "03b-contract-thread")
	})

	t.Run("unknown thread and unknown page", func(t *testing.T) {
		do(t, ctx, "unknown thread", chromedp.Navigate(base+"/ui/threads/00000000-0000-4000-8000-000000000000"), chromedp.WaitVisible(css(`main h1`)))
		if h := text(t, ctx, `main h1`); h != "Thread not found" {
			t.Fatalf("unknown thread heading %q", h)
		}
		do(t, ctx, "unknown page", chromedp.Navigate(base+"/ui/nope"), chromedp.WaitVisible(css(`main h1`)))
		if h := text(t, ctx, `main h1`); h != "Page not found" {
			t.Fatalf("unknown page heading %q", h)
		}
	})

	t.Run("invite shows the sign-in link", func(t *testing.T) {
		var link string
		do(t, ctx, "invite",
			chromedp.Navigate(base+"/ui/users"),
			chromedp.WaitVisible(css(`#invite-user`)),
			chromedp.Click(css(`#invite-user`)),
			chromedp.WaitVisible(css(`#invite-form input[name=email]`)),
			chromedp.SendKeys(css(`#invite-form input[name=email]`), "ada@example.com"),
			chromedp.SendKeys(css(`#invite-form input[name=full_name]`), "Ada Lovelace"),
			chromedp.SetValue(css(`#invite-form select[name=role]`), "viewer"),
			chromedp.Click(css(`dialog .dialog-foot .btn-primary`)),
			chromedp.WaitVisible(css(`#invite-link`)),
			chromedp.WaitVisible(css(`tr[data-email="ada@example.com"][data-status=invited]`)))
		link = text(t, ctx, `#invite-link`)
		if link != eng.URL+"/login" {
			t.Fatalf("sign-in link %q, want %s/login", link, eng.URL)
		}
		u, err := eng.Server.Store.GetUserByEmail(context.Background(), "ada@example.com")
		if err != nil || u.Status != domain.StatusInvited || u.Role != domain.RoleViewer || u.FullName != "Ada Lovelace" {
			t.Fatalf("stored invite %+v, %v", u, err)
		}
		noJunk(t, ctx, "users")
		shot(t, ctx, "04-users-invited")
	})

	t.Run("suspend and reactivate", func(t *testing.T) {
		m, _ := eng.NewUser(t, domain.RoleMember)
		row := `tr[data-email="` + m.Email + `"]`
		do(t, ctx, "suspend",
			chromedp.Navigate(base+"/ui/users"),
			chromedp.WaitVisible(css(row+`[data-status=active]`)),
			chromedp.Click(css(`button[aria-label="Suspend `+m.Email+`"]`)),
			chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
			chromedp.Click(css(`dialog .btn-danger.solid`)),
			chromedp.WaitVisible(css(row+`[data-status=suspended]`)))
		if u, _ := eng.Server.Store.GetUser(context.Background(), m.ID); u.Status != domain.StatusSuspended {
			t.Fatalf("after suspend: %s", u.Status)
		}
		shot(t, ctx, "05-users-suspended")
		do(t, ctx, "reactivate",
			chromedp.Click(css(`button[aria-label="Reactivate `+m.Email+`"]`)),
			chromedp.WaitVisible(css(row+`[data-status=active]`)))
		if u, _ := eng.Server.Store.GetUser(context.Background(), m.ID); u.Status != domain.StatusActive {
			t.Fatalf("after reactivate: %s", u.Status)
		}
		// Change the role with the row's select.
		do(t, ctx, "change role",
			chromedp.SetValue(css(`select[aria-label="Role of `+m.Email+`"]`), "viewer"),
			void(chromedp.Evaluate[bool](`document.querySelector('select[aria-label="Role of `+m.Email+`"]').dispatchEvent(new Event('change'))`)),
			chromedp.WaitVisible(css(`dialog[open] .dialog-foot`)))
		if u, _ := eng.Server.Store.GetUser(context.Background(), m.ID); u.Role == domain.RoleViewer {
			t.Fatal("the role changed before it was confirmed")
		}
		shot(t, ctx, "05b-users-role-confirm")
		do(t, ctx, "confirm role",
			chromedp.Click(css(`dialog[open] .dialog-foot .btn-primary`)),
			// The reactivation's own "ok" alert is still shown: wait for this
			// change's message, not for any alert.
			waitText(`#users-msg .alert.ok`, m.Email+` is now viewer.`))
		if u, _ := eng.Server.Store.GetUser(context.Background(), m.ID); u.Role != domain.RoleViewer {
			t.Fatalf("after role change: %s", u.Role)
		}
	})

	t.Run("archive asks for confirmation and is permanent", func(t *testing.T) {
		row := `tr[data-email="ada@example.com"]`
		do(t, ctx, "cancel archive",
			chromedp.Navigate(base+"/ui/users"),
			chromedp.WaitVisible(css(row+`[data-status=invited]`)),
			chromedp.Click(css(`button[aria-label="Archive ada@example.com"]`)),
			chromedp.WaitVisible(css(`dialog .btn-danger.solid`)))
		if msg := text(t, ctx, `dialog`); !strings.Contains(msg, "permanent") {
			t.Fatalf("archive dialog %q does not say it is permanent", msg)
		}
		do(t, ctx, "cancel", chromedp.Click(css(`dialog .dialog-foot button:first-child`)), chromedp.WaitNotPresent(css(`dialog`)))
		if u, _ := eng.Server.Store.GetUserByEmail(context.Background(), "ada@example.com"); u.Status != domain.StatusInvited {
			t.Fatalf("cancel archived anyway: %s", u.Status)
		}
		do(t, ctx, "archive",
			chromedp.Click(css(`button[aria-label="Archive ada@example.com"]`)),
			chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
			chromedp.Click(css(`dialog .btn-danger.solid`)),
			chromedp.WaitVisible(css(row+`[data-status=archived]`)))
		if n := get(t, ctx, "archived actions", chromedp.Evaluate[int](`document.querySelectorAll('`+row+` button, `+row+` select').length`)); n != 0 {
			t.Fatalf("an archived user still has %d controls", n)
		}
	})

	t.Run("last admin refusal is a clear message", func(t *testing.T) {
		var msg string
		do(t, ctx, "suspend owner",
			chromedp.Navigate(base+"/ui/users"),
			chromedp.WaitVisible(css(`button[aria-label="Suspend owner@example.com"]`)),
			chromedp.Click(css(`button[aria-label="Suspend owner@example.com"]`)),
			chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
			chromedp.Click(css(`dialog .btn-danger.solid`)),
			chromedp.WaitVisible(css(`#users-msg .alert.bad`)))
		msg = text(t, ctx, `#users-msg .alert.bad`)
		if !strings.Contains(msg, "At least one active administrator must remain") {
			t.Fatalf("message %q", msg)
		}
		if u, _ := eng.Server.Store.GetUser(context.Background(), eng.Admin.ID); u.Status != domain.StatusActive {
			t.Fatalf("owner became %s", u.Status)
		}
		shot(t, ctx, "06-users-last-admin")
	})

	t.Run("create and revoke an API key", func(t *testing.T) {
		var secret string
		do(t, ctx, "create",
			chromedp.Navigate(base+"/ui/api-keys"),
			chromedp.WaitVisible(css(`#key-form input[name=name]`)),
			chromedp.SendKeys(css(`#key-form input[name=name]`), "ci-pipeline"),
			chromedp.SendKeys(css(`#key-form input[name=expires_in_days]`), "30"),
			chromedp.Click(css(`#key-form input[value=service]`)),
			chromedp.SetValue(css(`#key-form select[name=sa_role]`), "viewer"),
			chromedp.SetValue(css(`#key-form select[name=sa_scope]`), "party"),
			chromedp.Click(css(`#create-key`)),
			chromedp.WaitVisible(css(`#new-key-secret`)),
			chromedp.WaitVisible(css(`tr[data-key-name=ci-pipeline][data-key-status=active]`)),
			chromedp.WaitVisible(css(`tr[data-key-name=ci-pipeline] .scope[data-scope=party]`)))
		secret = text(t, ctx, `#new-key-secret`)
		if !strings.HasPrefix(secret, "td_") {
			t.Fatalf("secret %q", secret)
		}
		// The account was created party-scoped: it is a party of no thread yet,
		// so it sees none of the seeded ones.
		if resp, body := eng.Do(t, http.MethodPost, "/graphql", secret, map[string]any{"query": "{ threads { totalCount } }"}); resp.StatusCode != http.StatusOK ||
			!strings.Contains(string(body), `"totalCount":0`) {
			t.Fatalf("new party-scoped key: %d %s", resp.StatusCode, body)
		}
		resp, body := eng.Do(t, http.MethodGet, "/v1/engine/settings", secret, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("new key on /v1/engine/settings: %d %s", resp.StatusCode, body)
		}
		noJunk(t, ctx, "keys")
		shot(t, ctx, "07-keys-created")
		do(t, ctx, "revoke",
			chromedp.Click(css(`button[aria-label="Revoke key ci-pipeline"]`)),
			chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
			chromedp.Click(css(`dialog .btn-danger.solid`)),
			chromedp.WaitNotPresent(css(`tr[data-key-name=ci-pipeline]`)),
			chromedp.Click(css(`#show-revoked`)),
			chromedp.WaitVisible(css(`tr[data-key-name=ci-pipeline][data-key-status=revoked]`)))
		if resp, _ := eng.Do(t, http.MethodGet, "/v1/engine/settings", secret, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("revoked key still works: %d", resp.StatusCode)
		}
	})

	t.Run("engine URL override persists after reload and can be removed", func(t *testing.T) {
		// Same port on "localhost": a different origin from this 127.0.0.1
		// page, so the UI must warn and keep calling its own origin.
		override := strings.Replace(eng.URL, "127.0.0.1", "localhost", 1) + "/engine/"
		// Later subtests must not inherit the override if this one fails.
		defer eng.Do(t, http.MethodDelete, "/v1/engine/settings", eng.AdminKey, nil)
		var src, eff, warn string
		do(t, ctx, "save",
			chromedp.Navigate(base+"/ui/settings/engine"),
			chromedp.WaitVisible(css(`#engine-url`)),
			chromedp.SendKeys(css(`#engine-url`), override),
			chromedp.WaitVisible(css(`#engine-url-warning .alert.warn`)),
			chromedp.Click(css(`#save-engine-url`)),
			chromedp.WaitVisible(css(`#settings-msg .alert.ok`)))
		do(t, ctx, "reload",
			chromedp.Reload(),
			chromedp.WaitVisible(css(`#effective-url`)))
		eff = text(t, ctx, `#effective-url`)
		src = text(t, ctx, `#engine-url-source`)
		warn = text(t, ctx, `#banner`)
		want := strings.TrimSuffix(override, "/")
		if eff != want || !strings.HasPrefix(src, "ui") {
			t.Fatalf("after reload: effective %q source %q, want %q from ui", eff, src, want)
		}
		if !strings.Contains(warn, "localhost and 127.0.0.1 are mixed") {
			t.Fatalf("no mix warning in banner: %q", warn)
		}
		ws := text(t, ctx, `#endpoints`)
		if !strings.Contains(ws, "ws://localhost"+strings.TrimPrefix(eng.URL, "http://127.0.0.1")+"/engine/threads") {
			t.Fatalf("endpoints keep the proxy prefix? %q", ws)
		}
		var stored struct {
			PublicURL string `json:"public_url"`
			Source    string `json:"source"`
		}
		_, body := eng.Do(t, http.MethodGet, "/v1/engine/settings", eng.AdminKey, nil)
		if err := json.Unmarshal(body, &stored); err != nil || stored.PublicURL != want || stored.Source != "ui" {
			t.Fatalf("API view %s (%v)", body, err)
		}
		noJunk(t, ctx, "settings")
		shot(t, ctx, "08-engine-settings-override")
		// The UI still works (it kept calling its own origin).
		do(t, ctx, "still works", chromedp.Navigate(base+"/ui/threads"), chromedp.WaitVisible(css(`a[data-thread-id]`)))
		do(t, ctx, "reset",
			chromedp.Navigate(base+"/ui/settings/engine"),
			chromedp.WaitVisible(css(`#reset-engine-url:not([disabled])`)),
			chromedp.Click(css(`#reset-engine-url`)),
			chromedp.WaitVisible(css(`#settings-msg .alert.ok`)))
		eff = text(t, ctx, `#effective-url`)
		src = text(t, ctx, `#engine-url-source`)
		if eff != eng.URL || !strings.HasPrefix(src, "config") {
			t.Fatalf("after reset: %q %q", eff, src)
		}
	})

	t.Run("phone width", func(t *testing.T) {
		defer func() { _ = chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)) }()
		do(t, ctx, "phone",
			chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
			chromedp.Navigate(base+"/ui/threads/"+okID),
			chromedp.WaitVisible(css(`#steps-timeline`)))
		sidebarLeft := get(t, ctx, "evaluate", chromedp.Evaluate[float64](`document.getElementById('sidebar').getBoundingClientRect().right`))
		if sidebarLeft > 1 {
			t.Fatalf("sidebar visible on a phone (right edge %v)", sidebarLeft)
		}
		overflow := get(t, ctx, "evaluate", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		if overflow {
			t.Fatalf("page scrolls horizontally at 390px")
		}
		shot(t, ctx, "09-phone-thread")
		do(t, ctx, "open menu",
			chromedp.Click(css(`button[aria-controls=sidebar]`)),
			chromedp.Sleep(300*time.Millisecond))
		shot(t, ctx, "10-phone-menu")
		for _, page := range []string{"users", "api-keys", "threads", "settings/engine"} {
			do(t, ctx, "phone "+page, chromedp.Navigate(base+"/ui/"+page), chromedp.WaitVisible(css(`main h1`)), chromedp.WaitNotPresent(css(`main .loading`)))
			if get(t, ctx, "overflow "+page, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
				shot(t, ctx, "FAILED-phone-"+strings.ReplaceAll(page, "/", "-"))
				t.Fatalf("%s scrolls horizontally at 390px", page)
			}
		}
		shot(t, ctx, "10b-phone-settings")
		do(t, ctx, "phone users", chromedp.Navigate(base+"/ui/users"), chromedp.WaitVisible(css(`tr[data-email]`)))
		shot(t, ctx, "10c-phone-users")
	})

	t.Run("keyboard: invite dialog opens with Enter, focuses the email field, closes with Escape", func(t *testing.T) {
		do(t, ctx, "open users", chromedp.Navigate(base+"/ui/users"), chromedp.WaitVisible(css(`#invite-user`)),
			chromedp.Focus(css(`#invite-user`)), chromedp.KeyEvent("\r"), chromedp.WaitVisible(css(`#invite-form`)))
		focused := get(t, ctx, "focus", chromedp.Evaluate[string](`document.activeElement.name || document.activeElement.id`))
		if focused != "email" {
			t.Fatalf("focus is on %q, want the email field", focused)
		}
		do(t, ctx, "escape", chromedp.KeyEvent("\u001b"), chromedp.WaitNotPresent(css(`dialog`)))
		// Every control in the main navigation is reachable and labelled.
		unlabelled := get(t, ctx, "labels", chromedp.Evaluate[int](`[...document.querySelectorAll('main input, main select, main button')].filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.textContent.trim()).length`))
		if unlabelled != 0 {
			t.Fatalf("%d unlabelled controls on the users page", unlabelled)
		}
	})

	t.Run("threads pagination", func(t *testing.T) {
		ctx2 := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
		for i := 0; i < 25; i++ {
			eng.Clock.Advance(time.Second)
			if _, err := eng.Server.Threads.Application().Commands.StartThread.Handle(ctx2, threads.StartThreadInput{Refs: map[string]string{"batch": "b1"}}); err != nil {
				t.Fatal(err)
			}
		}
		do(t, ctx, "page 1", chromedp.Navigate(base+"/ui/threads"), chromedp.WaitVisible(css(`#next-page`)))
		if c := text(t, ctx, `#threads-count`); c != "1–25 of 28" {
			t.Fatalf("page 1 count %q", c)
		}
		do(t, ctx, "next", chromedp.Click(css(`#next-page`)), chromedp.WaitVisible(css(`#prev-page:not([disabled])`)))
		if c := text(t, ctx, `#threads-count`); c != "26–28 of 28" {
			t.Fatalf("page 2 count %q", c)
		}
		if loc := location(t, ctx); !strings.Contains(loc, "page=2") {
			t.Fatalf("page not in URL: %s", loc)
		}
		if n := get(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('a[data-thread-id]').length`)); n != 3 {
			t.Fatalf("%d rows on page 2", n)
		}
		if dis := get(t, ctx, "next disabled", chromedp.Evaluate[bool](`document.getElementById('next-page').disabled`)); !dis {
			t.Fatal("next is enabled on the last page")
		}
		do(t, ctx, "back", chromedp.NavigateBack(), chromedp.WaitVisible(css(`#prev-page[disabled]`)))
	})

	t.Run("dark color scheme", func(t *testing.T) {
		scheme := func(v string) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
				return err
			})
		}
		defer func() { _ = chromedp.Do(ctx, scheme("light")) }()
		do(t, ctx, "dark", scheme("dark"), chromedp.Navigate(base+"/ui/threads/"+contractID), chromedp.WaitVisible(css(`#contract-graph`)))
		bg := get(t, ctx, "background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		if bg != "rgb(15, 19, 27)" {
			t.Fatalf("dark background %q", bg)
		}
		shot(t, ctx, "12-dark-contract-thread")
	})

	t.Run("sign out", func(t *testing.T) {
		var loc string
		do(t, ctx, "sign out",
			chromedp.Navigate(base+"/ui/threads"),
			chromedp.WaitVisible(css(`#sign-out`)),
			chromedp.Click(css(`#sign-out`)),
			chromedp.WaitVisible(css(`#api-key`)),
			chromedp.Navigate(base+"/ui/users"),
			chromedp.WaitVisible(css(`#api-key`)))
		loc = location(t, ctx)
		if !strings.Contains(loc, "/login") {
			t.Fatalf("after sign-out %s", loc)
		}
	})

	t.Run("a member sees read-only administration", func(t *testing.T) {
		m, key := eng.NewUser(t, domain.RoleMember)
		do(t, ctx, "sign in as member",
			chromedp.Navigate(base+"/login"),
			chromedp.WaitVisible(css(`#api-key`)),
			chromedp.SendKeys(css(`#api-key`), key),
			chromedp.Click(css(`#apikey-submit`)),
			chromedp.WaitVisible(css(`#whoami`)),
			chromedp.Navigate(base+"/ui/users"),
			chromedp.WaitVisible(css(`tr[data-email="`+m.Email+`"]`)))
		if n := get(t, ctx, "admin controls", chromedp.Evaluate[int](`document.querySelectorAll('main td.actions, main select[name=role]').length + (document.getElementById('invite-user').hidden ? 0 : 1)`)); n != 0 {
			t.Fatalf("a member sees %d user-management controls", n)
		}
		do(t, ctx, "settings", chromedp.Navigate(base+"/ui/settings/engine"), chromedp.WaitVisible(css(`#engine-url[disabled]`)))
		do(t, ctx, "keys", chromedp.Navigate(base+"/ui/api-keys"), chromedp.WaitVisible(css(`#key-form`)))
		if n := get(t, ctx, "key type", chromedp.Evaluate[int](`document.querySelectorAll('#key-form input[name=kind]').length`)); n != 0 {
			t.Fatal("a member is offered service-account keys")
		}
		shot(t, ctx, "11-member-keys")
	})
}

// A cancelled thread shows its cancel reason as "cancelled: reason", not as a
// red error (error stays for failures).
func TestWebUICancelReason(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	eng := enginetest.Start(t, sqldb.SQLite)
	actx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
	th, err := eng.Server.Threads.Application().Commands.StartThread.Handle(actx, threads.StartThreadInput{Refs: map[string]string{"label": "Cancelled one"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Server.Threads.Application().Commands.EndThread.Handle(actx, threads.EndThreadInput{ThreadID: th.ID, Reason: "customer left"}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "sign in", chromedp.Navigate(eng.URL+"/ui/threads"), chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey), chromedp.Click(css(`#apikey-submit`)), chromedp.WaitVisible(css(`#whoami`)))
	do(t, ctx, "open the thread", chromedp.Navigate(eng.URL+"/ui/threads/"+th.ID), waitText(`#end-reason`, "cancelled: customer left"))
	shot(t, ctx, "cancel-reason")
	if n := get(t, ctx, "error rows", chromedp.Evaluate[int](`[...document.querySelectorAll('dl.kv dt')].filter((d) => d.textContent === 'Error').length`)); n != 0 {
		t.Fatalf("a cancel reason is shown as an error (%d Error rows)", n)
	}
}
