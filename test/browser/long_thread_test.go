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
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// recorder records steps on one engine as its owner, a second apart.
type recorder struct {
	t   *testing.T
	eng *enginetest.Engine
	ctx context.Context
}

func newRecorder(t *testing.T, eng *enginetest.Engine) recorder {
	ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Email: eng.Admin.Email, Role: domain.RoleAdmin})
	return recorder{t: t, eng: eng, ctx: ctx}
}

func (r recorder) start(in threads.StartThreadInput) string {
	r.t.Helper()
	res, err := r.eng.Server.Threads.Application().Commands.StartThread.Handle(r.ctx, in)
	if err != nil {
		r.t.Fatal(err)
	}
	return res.ID
}

func (r recorder) step(id, name, key, status string, meta map[string]any) {
	r.t.Helper()
	at := r.eng.Clock.Now()
	r.eng.Clock.Advance(time.Second)
	fin := r.eng.Clock.Now()
	if _, err := r.eng.Server.Threads.Application().Commands.RecordStep.Handle(r.ctx, threads.RecordStepInput{ThreadID: id, StepName: name, Status: status,
		IdempotencyKey: key, Context: map[string]string{}, Metadata: meta, StartedAt: &at, FinishedAt: &fin}); err != nil {
		r.t.Fatalf("record %s/%s: %v", name, key, err)
	}
}

// seedPickWave records a free-form pick wave of 60 step identities:
// start_wave, pick_item under 58 keys (the 45th fails), close_wave.
func seedPickWave(r recorder) string {
	id := r.start(threads.StartThreadInput{Label: "pick wave 7", Tags: []string{"wave"}})
	r.step(id, "start_wave", "start_wave", "success", nil)
	for i := 1; i <= 58; i++ {
		status, meta := "success", map[string]any(nil)
		if i == 45 {
			status, meta = "failed", map[string]any{"error": "bin B-45 empty"}
		}
		r.step(id, "pick_item", fmt.Sprintf("pick-%02d", i), status, meta)
	}
	r.step(id, "close_wave", "close_wave", "success", nil)
	return id
}

func signIn(t *testing.T, ctx context.Context, eng *enginetest.Engine) {
	do(t, ctx, "sign in",
		chromedp.Navigate(eng.URL+"/ui/threads"),
		chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey),
		chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`#threads-count`)))
}

// setWidth resizes the page: 1280 (desktop) or 390 (phone).
func setWidth(t *testing.T, ctx context.Context, w int) {
	h := int64(900)
	if w < 500 {
		h = 844
	}
	do(t, ctx, fmt.Sprintf("width %d", w), chromedp.EmulateViewport(int64(w), h))
}

// TestRepeatedStepsKeyedByIdentity: a 60-step pick wave whose 45th pick
// fails. Every step has its own element id, the banner links to the failed
// identity (loaded however deep), repeated steps collapse into one row.
func TestRepeatedStepsKeyedByIdentity(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			eng := enginetest.Start(t, d)
			id := seedPickWave(newRecorder(t, eng))
			signIn(t, ctx, eng)
			for _, w := range []int{1280, 390} {
				setWidth(t, ctx, w)
				do(t, ctx, "thread page", chromedp.Navigate(eng.URL+"/ui/threads/"+id), chromedp.WaitVisible(css(`#first-issue-link`)),
					chromedp.WaitVisible(css(`.step-group[data-group="pick_item"]`)))
				href := get(t, ctx, "banner href", chromedp.Evaluate[string](`document.querySelector('#first-issue-link').getAttribute('href')`))
				if href != "#step-pick_item/pick-45" {
					t.Fatalf("banner links to %q, want the 45th pick", href)
				}
				dups := get(t, ctx, "duplicate ids", chromedp.Evaluate[[]string](`(() => { const seen = new Map(); for (const e of document.querySelectorAll('[id]')) seen.set(e.id, (seen.get(e.id) || 0) + 1);
  return [...seen].filter(([, n]) => n > 1).map(([k]) => k); })()`))
				if len(dups) > 0 {
					t.Fatalf("duplicate element ids: %v", dups)
				}
				group := text(t, ctx, `.step-group[data-group="pick_item"] summary`)
				if !strings.Contains(group, "pick_item × 58") || !strings.Contains(group, "1 failed") {
					t.Fatalf("group row %q", group)
				}
				run := text(t, ctx, `.wf-run[data-run="pick_item"]`)
				if !strings.Contains(run, "pick_item × 58") || !strings.Contains(run, "(1 failed)") {
					t.Fatalf("timeline run %q", run)
				}
				if n := get(t, ctx, "visible timeline rows", chromedp.Evaluate[int](`[...document.querySelectorAll('#waterfall .wf-row:not(.wf-axis)')].filter(r => !r.hidden).length`)); n != 3 {
					t.Fatalf("timeline shows %d rows, want start_wave, the pick_item run and close_wave", n)
				}
				viewShot(t, ctx, fmt.Sprintf("30-pick-wave-top-%s-%d", d, w))
				do(t, ctx, "banner link", chromedp.Click(css(`#first-issue-link`)),
					void(chromedp.Poll[bool](`(() => { const e = document.getElementById('step-pick_item/pick-45'); if (!e) return false;
  const r = e.getBoundingClientRect(); return r.top >= -1 && r.top < window.innerHeight && e.dataset.status === 'failed'; })()`)))
				viewShot(t, ctx, fmt.Sprintf("30-pick-wave-problem-%s-%d", d, w))
				if got := text(t, ctx, `[id="step-pick_item/pick-45"] .step-msg`); got != "bin B-45 empty" {
					t.Fatalf("problem step message %q", got)
				}
				// The group expands a page at a time, without duplicating the problem step.
				do(t, ctx, "load the group", chromedp.Click(css(`.step-group[data-group="pick_item"] .load-more button`)),
					void(chromedp.Poll[bool](`document.querySelectorAll('.step-group[data-group="pick_item"] li[data-key]').length >= 21`)))
				if n := get(t, ctx, "pick-45 once", chromedp.Evaluate[int](`document.querySelectorAll('[data-key="pick-45"]').length`)); n != 2 { // the step and its timeline row
					t.Fatalf("pick-45 appears %d times", n)
				}
				// The observed graph draws every step name.
				if n := get(t, ctx, "graph nodes", chromedp.Evaluate[int](`document.querySelectorAll('#contract-graph .g-node').length`)); n != 3 {
					t.Fatalf("graph has %d nodes, want 3", n)
				}
				if w == 390 {
					wideOK(t, ctx, "thread page")
				}
				viewShot(t, ctx, fmt.Sprintf("30-pick-wave-%s-%d", d, w))
				noJunk(t, ctx, "pick wave")
			}
		})
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
}

// wideOK fails when the page scrolls sideways, naming the widest elements.
func wideOK(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	culprits := get(t, ctx, "culprits", chromedp.Evaluate[[]string](`(() => {
  if (document.documentElement.scrollWidth <= window.innerWidth + 1) return [];
  const out = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (r.right > window.innerWidth + 1 && r.width > 0) out.push(e.tagName + '#' + e.id + '.' + [...e.classList].join('.') + ' right=' + Math.round(r.right));
  }
  return out.slice(0, 12);
})()`))
	if len(culprits) > 0 {
		shot(t, ctx, "FAILED-overflow-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s scrolls sideways at %d px: %v", what, window(t, ctx), culprits)
	}
}

var _ = http.MethodGet
var _ = sqldb.SQLite
