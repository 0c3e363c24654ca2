package browser_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// TestPhoneAndKeyboard: at 390 px no page scrolls sideways; the closed menu
// has no tab stops and Escape closes the open one; chart labels stay
// readable. Also the smaller items of the same pages: Last sign-in after an
// API-key sign-in, the audit log filtered by an email, and /login saying what
// to configure when no identity registry is set.
func TestPhoneAndKeyboard(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	eng := enginetest.Start(t, sqldb.SQLite)
	c := seedCauses(t, eng)
	wave := seedPickWave(newRecorder(t, eng))

	do(t, ctx, "login page", chromedp.Navigate(eng.URL+"/login"), chromedp.WaitVisible(css(`#no-registry`)))
	if n := get(t, ctx, "sso button", chromedp.Evaluate[int](`document.querySelectorAll('#sso').length`)); n != 0 {
		t.Fatal("/login offers email/SSO sign-in although no identity registry is configured")
	}
	if msg := text(t, ctx, `#no-registry`); !strings.Contains(msg, "registry.url") {
		t.Fatalf("no-registry note %q", msg)
	}
	setWidth(t, ctx, 390)
	shot(t, ctx, "35-login-no-registry-390")
	signIn(t, ctx, eng)

	pages := []string{"threads", "threads/" + wave, "threads/" + c.payFirst[0], "problems", "overview", "contracts", "contracts/order_flow/1",
		"users", "api-keys", "settings/engine", "audit", "webhooks"}
	for _, p := range pages {
		do(t, ctx, p, chromedp.Navigate(eng.URL+"/ui/"+p), chromedp.WaitVisible(css(`main h1`)),
			void(chromedp.Poll[bool](`!document.querySelector('main .loading')`)))
		wideOK(t, ctx, p)
	}

	// The menu: closed, none of its links or buttons takes focus; open,
	// Escape closes it and gives focus back to the button.
	do(t, ctx, "overview", chromedp.Navigate(eng.URL+"/ui/overview"), chromedp.WaitVisible(css(`#chart-24h`)))
	tabbable := `[...document.querySelectorAll('#sidebar a, #sidebar button')].filter(e => { const s = getComputedStyle(e); return s.visibility !== 'hidden' && s.display !== 'none' && !e.closest('[inert]'); }).length`
	if n := get(t, ctx, "closed menu tab stops", chromedp.Evaluate[int](tabbable)); n != 0 {
		t.Fatalf("the closed menu has %d tab stops", n)
	}
	// Tabbing from the top never lands in the closed menu.
	for i := 0; i < 6; i++ {
		do(t, ctx, "tab", chromedp.KeyEvent(kb.Tab))
		if in := get(t, ctx, "focus", chromedp.Evaluate[bool](`!!document.activeElement.closest('#sidebar')`)); in {
			t.Fatalf("Tab %d focused %s in the closed menu", i+1, get(t, ctx, "which", chromedp.Evaluate[string](`document.activeElement.outerHTML.slice(0, 80)`)))
		}
	}
	do(t, ctx, "click the menu", chromedp.Click(css(`.topbar button[aria-controls=sidebar]`)))
	do(t, ctx, "open the menu",
		void(chromedp.Poll[bool](`document.activeElement.closest('#sidebar') !== null && getComputedStyle(document.getElementById('sidebar')).visibility === 'visible'`)))
	shot(t, ctx, "36-menu-open-390")
	do(t, ctx, "Escape", chromedp.KeyEvent(kb.Escape),
		void(chromedp.Poll[bool](`document.querySelector('.topbar button[aria-controls=sidebar]').getAttribute('aria-expanded') === 'false' && document.activeElement === document.querySelector('.topbar button[aria-controls=sidebar]')`)))
	do(t, ctx, "menu slid out", void(chromedp.Poll[bool](`getComputedStyle(document.getElementById('sidebar')).visibility === 'hidden'`)))
	// Chart labels are drawn at a readable size (not 5 px).
	if px := get(t, ctx, "axis label size", chromedp.Evaluate[float64](`document.querySelector('#chart-24h text.axis').getBoundingClientRect().height`)); px < 9 {
		t.Fatalf("chart labels %.1f px high at 390 px", px)
	}
	viewShot(t, ctx, "37-overview-390")

	// Last sign-in: the owner signed in with an API key.
	do(t, ctx, "users", chromedp.Navigate(eng.URL+"/ui/users"), chromedp.WaitVisible(css(`main table`)))
	if row := text(t, ctx, `main table tbody tr`); !strings.Contains(row, "UTC") && !strings.Contains(row, ":") {
		t.Fatalf("owner row without a last sign-in: %q", row)
	}
	resp, body := eng.Do(t, http.MethodGet, "/v1/users", eng.AdminKey, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"last_login_at":"`) {
		t.Fatalf("users after an API-key sign-in: %d %s", resp.StatusCode, body)
	}
	// The audit log filtered by an email.
	do(t, ctx, "audit by email", chromedp.Navigate(eng.URL+"/ui/audit"), chromedp.WaitVisible(css(`#audit-filters`)),
		chromedp.SendKeys(css(`#audit-filters input[name=actor_id]`), "OWNER@example.com"),
		chromedp.Click(css(`#audit-filters button[type=submit]`)),
		void(chromedp.Poll[bool](`location.search.includes('actor_id=`+eng.Admin.ID+`')`)))
	if loc := location(t, ctx); !strings.Contains(loc, "actor=OWNER%40example.com") {
		t.Fatalf("audit location %s", loc)
	}
	do(t, ctx, "unknown email", chromedp.Navigate(eng.URL+"/ui/audit"), chromedp.WaitVisible(css(`#audit-filters`)),
		chromedp.SendKeys(css(`#audit-filters input[name=actor_id]`), "nobody@example.com"),
		chromedp.Click(css(`#audit-filters button[type=submit]`)), chromedp.WaitVisible(css(`#audit-msg .alert`)))
	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
	_ = fmt.Sprint
}
