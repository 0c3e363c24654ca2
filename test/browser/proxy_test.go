package browser_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// TestWebUIBehindProxyPrefix serves the engine under /engine on a reverse
// proxy (which strips the prefix and sends X-Forwarded-Prefix) and checks that
// the UI, its assets and every API call stay under the prefix.
func TestWebUIBehindProxyPrefix(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyOrigin := "http://" + l.Addr().String()
	eng := enginetest.Start(t, sqldb.SQLite, enginetest.WithConfig(func(c *config.Config) {
		c.Server.PublicURL = proxyOrigin + "/engine"
		c.Registry.BrowserOrigin = proxyOrigin
	}))
	seedThreads(t, eng)

	target, _ := url.Parse(eng.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var outside []string
	seen := map[string]bool{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/engine/")
		mu.Lock()
		if !ok {
			outside = append(outside, r.Method+" "+r.URL.Path)
		} else {
			seen[r.Method+" /"+rest] = true
		}
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		r.URL.Path = "/" + rest
		r.Header.Set("X-Forwarded-Prefix", "/engine")
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	// Sign in through the proxy (the exchange checks Origin against the
	// browser origin), then hand the session cookie to the browser.
	req, _ := http.NewRequest(http.MethodPost, proxyOrigin+"/engine/auth/api-key/exchange", strings.NewReader(`{"api_key":"`+eng.AdminKey+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", proxyOrigin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		t.Fatalf("exchange through the proxy: %d", resp.StatusCode)
	}
	ck := resp.Cookies()[0]
	do(t, ctx, "cookie", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.SetCookie, network.SetCookieParams{Name: ck.Name, Value: ck.Value, URL: proxyOrigin + "/"})
		return err
	}))

	do(t, ctx, "threads under the prefix",
		chromedp.Navigate(proxyOrigin+"/engine/ui/threads"),
		chromedp.WaitVisible(css(`a[data-thread-id]`)),
		waitText(`#threads-count`, "1–3 of 3"))
	href := get(t, ctx, "link", chromedp.Evaluate[string](`document.querySelector('a[data-thread-id]').getAttribute('href')`))
	if !strings.HasPrefix(href, "/engine/ui/threads/") {
		t.Fatalf("thread link %q is not under the prefix", href)
	}
	do(t, ctx, "detail", chromedp.Click(css(`a[data-thread-id]`)), chromedp.WaitVisible(css(`#steps-timeline`)))
	if loc := location(t, ctx); !strings.HasPrefix(loc, proxyOrigin+"/engine/ui/threads/") {
		t.Fatalf("detail at %s", loc)
	}
	do(t, ctx, "settings", chromedp.Navigate(proxyOrigin+"/engine/ui/settings/engine"), chromedp.WaitVisible(css(`#effective-url`)))
	if eff := text(t, ctx, `#effective-url`); eff != proxyOrigin+"/engine" {
		t.Fatalf("effective %q", eff)
	}
	if ep := text(t, ctx, `#endpoints`); !strings.Contains(ep, "ws://"+strings.TrimPrefix(proxyOrigin, "http://")+"/engine/threads") {
		t.Fatalf("endpoints lose the prefix: %q", ep)
	}
	shot(t, ctx, "13-proxy-prefix-settings")

	// A same-origin engine URL that does not answer must not lock the UI out.
	do(t, ctx, "bad prefix",
		chromedp.SendKeys(css(`#engine-url`), proxyOrigin+"/wrong"),
		chromedp.Click(css(`#save-engine-url`)),
		chromedp.WaitVisible(css(`#engine-url-unreachable`)),
		chromedp.Navigate(proxyOrigin+"/engine/ui/threads"),
		chromedp.WaitVisible(css(`a[data-thread-id]`)),
		chromedp.Navigate(proxyOrigin+"/engine/ui/settings/engine"),
		chromedp.WaitVisible(css(`#reset-engine-url:not([disabled])`)),
		chromedp.Click(css(`#reset-engine-url`)),
		chromedp.WaitVisible(css(`#settings-msg .alert.ok`)))
	if src := text(t, ctx, `#engine-url-source`); !strings.HasPrefix(src, "config") {
		t.Fatalf("after reset: %q", src)
	}

	// Signed out, the UI sends the browser to /engine/login?next=...; the
	// page's stylesheet, API-key exchange and redirect all stay under the
	// prefix, and the browser returns to the page it asked for.
	do(t, ctx, "sign out", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
		return err
	}), chromedp.Navigate(proxyOrigin+"/engine/ui/api-keys"), chromedp.WaitVisible(css(`#api-key`)))
	if loc := location(t, ctx); loc != proxyOrigin+"/engine/login?next=%2Fengine%2Fui%2Fapi-keys" {
		t.Fatalf("signed-out visit went to %s", loc)
	}
	if r := get(t, ctx, "login style", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('.auth-card')).borderTopLeftRadius`)); r != "12px" {
		t.Fatalf("/engine/login is not styled by app.css (radius %q)", r)
	}
	shot(t, ctx, "14-proxy-prefix-login")
	do(t, ctx, "sign in under the prefix",
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey),
		chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`#key-form`)))
	if loc := location(t, ctx); loc != proxyOrigin+"/engine/ui/api-keys" {
		t.Fatalf("after sign-in at %s, want %s/engine/ui/api-keys", loc, proxyOrigin)
	}

	mu.Lock()
	defer mu.Unlock()
	// The only request outside the prefix is the probe of the wrong URL.
	for _, o := range outside {
		if o != "GET /wrong/healthz" {
			t.Fatalf("requests escaped the prefix: %v", outside)
		}
	}
	for _, want := range []string{"GET /ui/assets/app.css", "GET /ui/assets/app.js", "GET /login", "POST /auth/api-key/exchange", "POST /graphql", "GET /v1/engine/settings", "PUT /v1/engine/settings", "DELETE /v1/engine/settings"} {
		if !seen[want] {
			t.Errorf("no %s through the prefix (saw %v)", want, seen)
		}
	}
}
