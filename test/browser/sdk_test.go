package browser_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/test/enginetest"
)

// sdkPage runs the JavaScript SDK in the page: it writes a thread with a
// notification subscribed, reads it back, and leaves the outcome (or the
// error's code and message) in window.__result.
const sdkPage = `<!doctype html>
<meta charset="utf-8">
<title>SDK in a browser</title>
<script type="module">
import { connect, ThreadengineError } from './sdk/index.js';
const key = new URLSearchParams(location.search).get('key');
try {
  const conn = await connect({ engineUrl: location.origin + '/engine', apiKey: key, serviceName: 'browser-app' });
  const heard = [];
  await conn.subscribe('step.failed', 'pay', (n) => { heard.push(n.event); n.ack(); });
  const t = await conn.start('Browser-1', { refs: { orderId: 'B-1' } });
  await t.step('validate').addContext({ items: 2, city: 'Zürich' }).success();
  await t.step('pay').failed({ error: 'card declined' });
  await t.step('pay').success();
  await t.complete('done');
  while (heard.length === 0) await new Promise((r) => setTimeout(r, 20));
  const view = await conn.getThread(t.threadId);
  const [pay] = await view.steps('pay');
  const integrity = await view.verifyIntegrity();
  let badKey = '';
  try {
    await connect({ engineUrl: location.origin + '/engine', apiKey: 'td_wrong', reconnect: false });
  } catch (err) {
    badKey = err instanceof ThreadengineError ? err.code : String(err);
  }
  window.__result = { wsUrl: conn.wsUrl, status: view.status, orderId: view.refs.orderId, retryCount: pay.retryCount,
    heard, verified: integrity.verified, badKey, browserWebSocket: typeof WebSocket === 'function' };
  await conn.close();
} catch (err) {
  window.__result = { error: (err.code || '') + ': ' + err.message };
}
</script>`

// TestJavaScriptSDKInBrowser loads sdk/js/src as ES modules in headless
// Chromium (no bundler, the browser's own WebSocket and fetch) from a page
// served on the same origin as the engine, which sits under /engine behind a
// reverse proxy, as a web app would use it.
func TestJavaScriptSDKInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	eng := enginetest.Start(t, sqldb.SQLite)
	src, err := filepath.Abs(filepath.Join("..", "..", "sdk", "js", "src")) // the package's directory (go test)
	if err != nil {
		t.Fatal(err)
	}

	target, _ := url.Parse(eng.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	mux.Handle("/app/sdk/", http.StripPrefix("/app/sdk/", http.FileServer(http.Dir(src))))
	mux.HandleFunc("/app/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(sdkPage))
	})
	mux.HandleFunc("/engine/", func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/engine")
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	origin := "http://" + l.Addr().String()

	do(t, ctx, "open the page", chromedp.Navigate(origin+"/app/?key="+url.QueryEscape(eng.AdminKey)),
		void(chromedp.Poll[bool](`window.__result !== undefined`)))
	raw := get(t, ctx, "result", chromedp.Evaluate[string](`JSON.stringify(window.__result)`))
	var res struct {
		Error, WSURL, Status, OrderID, BadKey string
		RetryCount                            int
		Heard                                 []string
		Verified, BrowserWebSocket            bool
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	if res.Error != "" {
		shot(t, ctx, "FAILED-sdk-in-browser")
		t.Fatalf("the SDK failed in the browser: %s", res.Error)
	}
	wantWS := "ws://" + l.Addr().String() + "/engine/threads"
	if res.WSURL != wantWS || res.Status != "completed" || res.OrderID != "B-1" || res.RetryCount != 1 ||
		len(res.Heard) != 1 || res.Heard[0] != "step.failed" || !res.Verified || res.BadKey != "invalid_api_key" ||
		!res.BrowserWebSocket {
		t.Fatalf("unexpected result %s (want wsUrl %s)", raw, wantWS)
	}
}
