package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

const signInChromium = "/usr/bin/chromium"

// TestSignInHeadlessChromium clicks through the real pages in headless
// Chromium: engine /login → "Continue with email or SSO" → the registry's
// login form → back on the engine, signed in. Screenshots of each page go to
// test/artifacts/.
func TestSignInHeadlessChromium(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(signInChromium); err != nil {
		t.Skip("chromium is not installed at " + signInChromium)
	}
	reg := startRegistry(t)
	e := startSignInEngine(t, sqldb.SQLite, reg, "lic-good", 0)
	e.InviteUser(t, "invitee@example.com", domain.RoleMember)

	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(signInChromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.WindowSize(1100, 800))
	defer cancelA()
	ctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	dir := filepath.Join("..", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name string) {
		buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Logf("screenshot %s: %v", name, err)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "signin-"+name+".png"), buf, 0o644); err != nil {
			t.Logf("screenshot %s: %v", name, err)
		}
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			shot("FAILED-" + strings.ReplaceAll(what, " ", "-"))
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%s: %v (at %s)", what, err, loc)
		}
	}

	step("open /login", chromedp.Navigate(e.URL+"/login"), chromedp.WaitVisible(chromedp.CSS("#sso")))
	shot("1-engine-login")
	step("continue with email or SSO", chromedp.Click(chromedp.CSS("#sso")), chromedp.WaitVisible(chromedp.CSS("#email")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasPrefix(loc, reg.Issuer()+"/login") {
		t.Fatalf("expected the registry login page, at %s (%v)", loc, err)
	}
	step("fill registry form",
		chromedp.SendKeys(chromedp.CSS("#email"), "invitee@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), regPassword))
	shot("2-registry-login")
	step("submit registry form", chromedp.Click(chromedp.CSS("#submit")))

	// Wait until the browser is back on the engine.
	pollUntilf(t, func() string { shot("FAILED-return"); return "never returned to the engine; at " + loc }, func() bool {
		loc, _ = chromedp.Run(ctx, chromedp.Location())
		return strings.HasPrefix(loc, e.URL)
	})
	if strings.Contains(loc, "error=") {
		shot("FAILED-refused")
		t.Fatalf("sign-in refused: %s", loc)
	}
	// Let the landing page settle before the screenshot.
	_ = chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS("body")), chromedp.Sleep(500*time.Millisecond))
	shot("3-signed-in")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch("/auth/session", {credentials: "same-origin"}).then(r => r.json()).then(j => j.authenticated + " " + (j.user ? j.user.email : ""))`,
		chromedp.EvalAwaitPromise))
	if err != nil || got != "true invitee@example.com" {
		t.Fatalf("GET /auth/session in the browser: %q %v", got, err)
	}
	// The session cookie is HttpOnly: page scripts cannot read it.
	cookies, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`))
	if err != nil || strings.Contains(cookies, "threadengine_session") {
		t.Fatalf("session cookie visible to scripts: %q %v", cookies, err)
	}

	// Sign out with the UI's button: the browser must go through the
	// provider's end_session URL (so the provider's session ends too), then
	// the API-key form, whose inline script must run under the page's CSP.
	var navMu sync.Mutex
	var navs []string
	_ = chromedp.Listen(ctx, func(ev any) {
		// The provider answers end_session with a redirect, so the URL is
		// seen when the page asks for it, not when a frame commits.
		if e, ok := ev.(*page.EventFrameRequestedNavigation); ok {
			navMu.Lock()
			navs = append(navs, e.URL)
			navMu.Unlock()
		}
	})
	step("sign out", chromedp.Navigate(e.URL+"/ui/threads"), chromedp.WaitVisible(chromedp.CSS("#sign-out")), chromedp.Click(chromedp.CSS("#sign-out")))
	seen := ""
	pollUntilf(t, func() string {
		shot("FAILED-sign-out")
		return "sign-out never visited the provider's end_session; navigations: " + seen
	}, func() bool {
		navMu.Lock()
		seen = strings.Join(navs, " ")
		navMu.Unlock()
		return strings.Contains(seen, reg.Issuer()+"/end_session")
	})
	// The provider redirects back to the sign-in page: evaluate there, not
	// in a page that is navigating away (a loaded machine shows the gap).
	step("signed out", chromedp.WaitVisible(chromedp.CSS("#api-key")))
	gone, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch("/auth/session", {credentials: "same-origin"}).then(r => r.status === 200 ? r.json().then(j => String(j.authenticated)) : String(r.status))`, chromedp.EvalAwaitPromise))
	if err != nil || (gone != "false" && gone != "401") {
		t.Fatalf("session after sign-out: %q %v", gone, err)
	}
	key := e.NewKeyFor(t, e.Admin)
	step("wrong API key", chromedp.Navigate(e.URL+"/login"), chromedp.WaitVisible(chromedp.CSS("#api-key")),
		chromedp.SendKeys(chromedp.CSS("#api-key"), "td_not-a-real-key"), chromedp.Click(chromedp.CSS("#apikey-submit")),
		chromedp.WaitVisible(chromedp.CSS("#error")))
	shot("4-api-key-refused")
	// The page is styled by the UI's shared stylesheet (the CSP allows it).
	radius, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`[...document.styleSheets].some(s => (s.href || "").endsWith("/ui/assets/app.css")) + " " + getComputedStyle(document.querySelector(".auth-card")).borderTopLeftRadius`))
	if err != nil || radius != "true 12px" {
		t.Fatalf("/login is not styled by /ui/assets/app.css: %q %v", radius, err)
	}
	// waitAt waits until the browser is at want (or at one of also: "/"
	// is the UI shell, which replaces its own URL by /ui/threads as soon as
	// its script runs, so a poll may never see "/" itself).
	waitAt := func(what, want string, also ...string) {
		t.Helper()
		pollUntilf(t, func() string { shot("FAILED-" + what); return fmt.Sprintf("%s: at %s, want %s", what, loc, want) }, func() bool {
			loc, _ = chromedp.Run(ctx, chromedp.Location())
			return loc == want || slices.Contains(also, loc)
		})
	}
	// An off-site next is ignored: the key signs in and the browser stays
	// on the engine, at its home page.
	step("API key sign-in, off-site next", chromedp.Navigate(e.URL+"/login?next="+url.QueryEscape("//evil.example/x")),
		chromedp.WaitVisible(chromedp.CSS("#api-key")), chromedp.SendKeys(chromedp.CSS("#api-key"), key),
		chromedp.Click(chromedp.CSS("#apikey-submit")))
	waitAt("off-site-next", e.URL+"/", e.URL+"/ui/threads")
	// The UI's ?next= is where the browser goes after signing in.
	step("API key sign-in with next", chromedp.Navigate(e.URL+"/login?next="+url.QueryEscape("/ui/api-keys?x=1")),
		chromedp.WaitVisible(chromedp.CSS("#api-key")), chromedp.SendKeys(chromedp.CSS("#api-key"), key),
		chromedp.Click(chromedp.CSS("#apikey-submit")))
	waitAt("next", e.URL+"/ui/api-keys?x=1")
	got, err = chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch("/auth/session").then(r => r.json()).then(j => j.authenticated + " " + (j.user ? j.user.email : ""))`,
		chromedp.EvalAwaitPromise))
	if err != nil || got != "true "+e.Admin.Email {
		t.Fatalf("session after API-key sign-in: %q %v", got, err)
	}
}
