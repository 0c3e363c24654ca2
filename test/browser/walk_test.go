package browser_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/test/enginetest"
)

// layoutJS lists what is wrong with the page's layout, as text: sideways
// scroll, visible text under 10 px (SVG text at its drawn size), text cut
// off by a box that hides its overflow without an ellipsis, and chart,
// graph or time-axis labels drawn over each other, and timeline bars off
// their time axis.
const layoutJS = `(() => {
  const out = [];
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.classList.length ? '.' + [...e.classList].join('.') : '');
  const visible = (e) => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e); return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' && s.opacity !== '0'; };
  if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push('scrolls sideways: ' + document.documentElement.scrollWidth + ' px');
  for (const e of document.querySelectorAll('body *')) {
    if (!visible(e) || e.closest('[aria-hidden="true"], .sr-only, .visually-hidden, #sidebar[inert]')) continue;
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
    if (!own) continue;
    const s = getComputedStyle(e);
    let px = parseFloat(s.fontSize);
    if (e instanceof SVGElement && e.getScreenCTM) { const m = e.getScreenCTM(); if (m) px *= Math.hypot(m.a, m.b); }
    if (px < 9.9) out.push('text ' + px.toFixed(1) + ' px: ' + name(e) + ' "' + e.textContent.trim().slice(0, 30) + '"');
    if (!(e instanceof SVGElement) && (s.overflowX === 'hidden' || s.overflowX === 'clip') && (s.textOverflow !== 'ellipsis' || s.display.includes('flex')) && e.scrollWidth > e.clientWidth + 2) {
      out.push('clipped: ' + name(e) + ' "' + e.textContent.trim().slice(0, 30) + '" ' + e.scrollWidth + '>' + e.clientWidth);
    }
  }
  const groups = [...document.querySelectorAll('main svg')].map((svg) => [svg, [...svg.querySelectorAll('text')]]);
  for (const axis of document.querySelectorAll('main .wf-axis .wf-track')) groups.push([axis, [...axis.querySelectorAll('.wf-tick')]]);
  for (const [svg, texts] of groups) {
    if (!visible(svg)) continue;
    const labels = texts.filter((t) => visible(t) && t.textContent.trim() !== '').map((t) => [t, t.getBoundingClientRect()]);
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++) {
        const [a, ra] = labels[i]; const [b, rb] = labels[j];
        const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (w > 2 && h > 2 && w * h > 0.15 * Math.min(ra.width * ra.height, rb.width * rb.height)) {
          out.push('labels overlap: "' + a.textContent.trim().slice(0, 20) + '" and "' + b.textContent.trim().slice(0, 20) + '" in ' + name(svg));
        }
      }
    }
  }
  // Every timeline bar's track starts where the time axis does.
  for (const wf of document.querySelectorAll('main .waterfall')) {
    const axis = wf.querySelector('.wf-axis .wf-track');
    if (!axis || !visible(axis)) continue;
    const x = axis.getBoundingClientRect().left;
    for (const t of wf.querySelectorAll('.wf-row:not(.wf-axis) .wf-track')) {
      if (visible(t) && Math.abs(t.getBoundingClientRect().left - x) > 1) out.push('timeline track off the axis: ' + (t.closest('.wf-row').textContent.trim().slice(0, 30)));
    }
  }
  return [...new Set(out)].slice(0, 20);
})()`

// TestEveryPageLaysOut walks every page of the web UI on a seeded engine,
// on each store, at 1440×900 and 390×844: no page scrolls sideways, shows
// text under 10 px, cuts text off or draws labels over each other, and no
// page logs a console error. Screenshots: test/artifacts/ui-walk-*.png.
func TestEveryPageLaysOut(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			eng := enginetest.Start(t, d)
			c := seedCauses(t, eng)
			wave := seedPickWave(newRecorder(t, eng))
			for _, src := range []string{diffFlowV1, diffFlowV2} {
				if resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": src}); resp.StatusCode != http.StatusCreated {
					t.Fatalf("contract: %d %s", resp.StatusCode, body)
				}
			}
			r := newRecorder(t, eng)
			for v, steps := range map[int][]string{1: {"start", "ship"}, 2: {"start", "pack", "ship"}} {
				for i := 0; i < 2; i++ {
					id := r.start(threads.StartThreadInput{Contract: fmt.Sprintf("diff_flow:%d", v), Label: fmt.Sprintf("v%d #%d", v, i)})
					for _, s := range steps {
						r.step(id, s, s, "success", nil)
					}
				}
			}
			pages := []struct{ name, path, ready string }{
				{"threads", "threads", `#threads-count`},
				{"threads-filtered", "threads?health=FAILED,VIOLATED&when=24h", `#threads-count`},
				{"thread-pick-wave", "threads/" + wave, `#first-issue-link`},
				{"thread-contract", "threads/" + c.payFirst[0], `main h1`},
				{"thread-free-form", "threads/" + c.timeouts[0], `main h1`},
				{"overview", "overview", `#chart-24h`},
				{"problems", "problems", `#problems-total`},
				{"contracts", "contracts", `main table`},
				{"contract", "contracts/order_flow/1", `#process-map`},
				{"contract-diff", "contracts/diff_flow/2?compare=1", `main h1`},
				{"contract-editor", "contracts/diff_flow/edit", `main h1`},
				{"users", "users", `main table`},
				{"api-keys", "api-keys", `main h1`},
				{"settings", "settings/engine", `main h1`},
				{"audit", "audit", `#audit-filters`},
				{"webhooks", "webhooks", `main h1`},
			}
			signIn(t, ctx, eng)
			for _, w := range []int{1440, 390} {
				setWidth(t, ctx, w)
				for _, p := range pages {
					do(t, ctx, p.name, chromedp.Navigate(eng.URL+"/ui/"+p.path), chromedp.WaitVisible(css(p.ready)),
						void(chromedp.Poll[bool](`!document.querySelector('main .loading')`)),
						// A graph has fitted its viewport (one unit one pixel).
						void(chromedp.Poll[bool](`[...document.querySelectorAll('.graph-viewport svg')].every((s) => Math.abs(s.viewBox.baseVal.width - s.clientWidth) < 2)`)))
					bad := get(t, ctx, "layout of "+p.name, chromedp.Evaluate[[]string](layoutJS))
					shot(t, ctx, fmt.Sprintf("walk-%s-%d-%s", d, w, p.name))
					if len(bad) > 0 {
						t.Errorf("%s at %d px:\n  %s", p.name, w, strings.Join(bad, "\n  "))
					}
					noJunk(t, ctx, p.name)
				}
			}
			if e := errs(); len(e) > 0 {
				t.Fatalf("console errors: %v", e)
			}
		})
	}
}
