package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// An OTLP trace whose provider call fails with HTTP 429 under a charge span
// that retried: once its root span ended and the quiet period passed, the
// thread page says it failed at the deepest failing span with its status
// message, its duration is the trace's, and the retry is not a success.
func TestWebUIOTLPTraceFailsAtItsDeepestSpan(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	eng := enginetest.Start(t, sqldb.SQLite)
	t0 := eng.Clock.Now().Add(-3 * time.Second)
	ns := func(d time.Duration) string { return fmt.Sprint(t0.Add(d).UnixNano()) }
	str := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	span := func(id, parent, name string, from, to time.Duration, errMsg string, events ...map[string]any) map[string]any {
		sp := map[string]any{"traceId": trace, "spanId": id, "name": name, "startTimeUnixNano": ns(from), "endTimeUnixNano": ns(to)}
		if parent != "" {
			sp["parentSpanId"] = parent
		}
		if errMsg != "" {
			sp["status"] = map[string]any{"code": 2, "message": errMsg}
		}
		if len(events) > 0 {
			sp["events"] = events
		}
		return sp
	}
	body := map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{str("service.name", "checkout-service")}},
		"scopeSpans": []any{map[string]any{"spans": []any{
			span("00f067aa0ba902b7", "", "POST /checkout", 0, 1450*time.Millisecond, "checkout failed"),
			span("00f067aa0ba902b8", "00f067aa0ba902b7", "charge", 100*time.Millisecond, 1200*time.Millisecond, "payment failed",
				map[string]any{"name": "retry", "timeUnixNano": ns(600 * time.Millisecond), "attributes": []any{str("attempt", "2")}}),
			span("00f067aa0ba902b9", "00f067aa0ba902b8", "provider.call", 700*time.Millisecond, 1100*time.Millisecond, "HTTP 429 Too Many Requests"),
		}}},
	}}}
	if resp, out := eng.Do(t, http.MethodPost, "/v1/traces", eng.AdminKey, body); resp.StatusCode != http.StatusOK {
		t.Fatalf("otlp: %d %s", resp.StatusCode, out)
	}
	eng.Clock.Advance(31 * time.Second) // the default quiet period, no span since
	actx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
	if n, err := eng.Server.QuietTraces.Handle(actx); err != nil || n != 1 {
		t.Fatalf("quiet traces ended %d, %v", n, err)
	}
	id, err := eng.Server.Threads.Application().Queries.FindThreadByRef.Handle(actx, "otel_trace_id", trace)
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "sign in", chromedp.Navigate(eng.URL+"/ui/threads"), chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey), chromedp.Click(css(`#apikey-submit`)), chromedp.WaitVisible(css(`#whoami`)))
	for _, w := range []struct {
		name string
		w, h int64
	}{{"wide", 1440, 900}, {"phone", 390, 844}} {
		do(t, ctx, "size "+w.name, chromedp.EmulateViewport(w.w, w.h))
		do(t, ctx, "open the trace thread", chromedp.Navigate(eng.URL+"/ui/threads/"+id), chromedp.WaitVisible(css(`#thread-duration`)))
		shot(t, ctx, "otlp-trace-failed-"+w.name)
		banner := text(t, ctx, `#thread-banner`)
		if !strings.Contains(banner, "This thread failed") || !strings.Contains(banner, "provider.call") || !strings.Contains(banner, "HTTP 429 Too Many Requests") {
			t.Errorf("%s banner: %q", w.name, banner)
		}
		if d := text(t, ctx, `#thread-duration`); !strings.Contains(d, "1.45") && !strings.Contains(d, "1,45") {
			t.Errorf("%s duration %q, want the trace's 1.45 s", w.name, d)
		}
	}
	// The retry event is a retry (amber), not a green success sub-step.
	pills := get(t, ctx, "sub-step pills", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('.substeps li')].map((li) => li.querySelector('.pill').className + ' ' + li.textContent)`))
	found := false
	for _, p := range pills {
		if strings.Contains(p, "retry") {
			found = true
			if !strings.Contains(p, "warn") || strings.Contains(p, " ok") {
				t.Errorf("retry sub-step rendered as %q", p)
			}
		}
	}
	if !found {
		t.Errorf("no retry sub-step on the page: %q", pills)
	}
}
