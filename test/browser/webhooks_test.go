package browser_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/test/enginetest"
)

// An administrator creates a webhook in the UI (the secret is shown once),
// presses "Send test", and sees the delivery in the log.
func TestWebhooksPage(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	var hits atomic.Int64
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("webhook-signature") != "" {
			hits.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = rcv.Serve(l) }()
	t.Cleanup(func() { _ = rcv.Close() })
	eng := enginetest.Start(t, sqldb.SQLite, enginetest.WithConfig(func(c *config.Config) {
		c.Alerts.PollInterval = 50 * time.Millisecond
		c.Alerts.SilentAfter = 30 * time.Minute
	}))
	base := eng.URL
	do(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/webhooks"), chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey), chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`#webhook-form`)))
	do(t, ctx, "create",
		chromedp.SendKeys(css(`#webhook-name`), "On-call"),
		chromedp.SendKeys(css(`#webhook-url`), "http://"+l.Addr().String()+"/hook"),
		chromedp.Click(css(`#save-webhook`)), chromedp.WaitVisible(css(`#webhook-secret`)))
	if secret := text(t, ctx, `#webhook-secret`); !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q", secret)
	}
	shot(t, ctx, "webhooks-01-secret")
	do(t, ctx, "close secret", chromedp.Click(css(`dialog .dialog-foot .btn-primary`)), chromedp.WaitNotPresent(css(`dialog`)),
		chromedp.WaitVisible(css(`#send-test`)))
	do(t, ctx, "send test", chromedp.Click(css(`#send-test`)), chromedp.WaitVisible(css(`#delivery-log table`)))
	// Refreshed in the page until the delivery shows (however long a busy
	// machine takes to deliver it).
	do(t, ctx, "refresh until delivered", void(chromedp.Poll[bool](`(() => {
  if ((document.querySelector('#delivery-log')?.textContent || '').includes('delivered')) return true;
  document.querySelector('#refresh-log')?.click(); return false; })()`, chromedp.WithPollingInterval(300*time.Millisecond))))
	page := text(t, ctx, `#delivery-log`)
	for _, want := range []string{"webhook.test", "delivered", "204", " ms"} {
		if !strings.Contains(page, want) {
			shot(t, ctx, "FAILED-webhooks-log")
			t.Fatalf("delivery log lacks %q: %s", want, page)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("receiver got %d signed requests", hits.Load())
	}
	shot(t, ctx, "webhooks-02-delivery-log")
	noJunk(t, ctx, "webhook")
	do(t, ctx, "list", chromedp.Navigate(base+"/ui/webhooks"), chromedp.WaitVisible(css(`#webhook-list table`)))
	if list := text(t, ctx, `#webhook-list`); !strings.Contains(list, "On-call") || !strings.Contains(list, "enabled") {
		t.Fatalf("list %s", list)
	}
	shot(t, ctx, "webhooks-03-list")
	noJunk(t, ctx, "webhooks")

	// A thread silent for longer than alerts.silent_after shows the
	// sweep's validation result on its page, without a new step.
	th, err := eng.Server.Threads.Application().Commands.StartThread.Handle(adminCtx(eng), threads.StartThreadInput{Refs: map[string]string{"orderId": "ORD-9"}})
	if err != nil {
		t.Fatal(err)
	}
	eng.Clock.Advance(time.Hour)
	if res, err := eng.Server.Alerts.Sweep(context.Background()); err != nil || res.Silent != 1 {
		t.Fatalf("sweep %+v %v", res, err)
	}
	do(t, ctx, "silent thread", chromedp.Navigate(base+"/ui/threads/"+th.ID), chromedp.WaitVisible(css(`main h1`)),
		void(chromedp.Poll[bool](`(document.querySelector('main')?.innerText || '').includes('thread_silent')`)))
	if page := text(t, ctx, `main`); !strings.Contains(page, "thread_silent") || !strings.Contains(page, "no update for") {
		shot(t, ctx, "FAILED-webhooks-silent-thread")
		t.Fatalf("silent thread page: %s", page)
	}
	shot(t, ctx, "webhooks-04-silent-thread")
	noJunk(t, ctx, "silent thread")
}
