package browser_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/test/enginetest"
)

const diffFlowV1 = `contract_name: diff_flow
version: 1
entry_points: [start]
steps:
  - id: start
  - id: ship
transitions:
  - {from: start, to: [ship]}
terminal_steps: [ship]
`

// diffFlowV2 adds one step, pack, between start and ship.
const diffFlowV2 = `contract_name: diff_flow
version: 2
entry_points: [start]
steps:
  - id: start
  - id: pack
  - id: ship
transitions:
  - {from: start, to: [pack]}
  - {from: pack, to: [ship]}
terminal_steps: [ship]
`

// TestVersionDiff: on v2's page, comparing with v1 shows pack as the one
// added step (its orders added, start → ship removed) and both versions'
// process-map counts side by side: 3 threads of v1, 2 of v2.
func TestVersionDiff(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			eng := enginetest.Start(t, d)
			for _, src := range []string{diffFlowV1, diffFlowV2} {
				if resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": src}); resp.StatusCode != http.StatusCreated {
					t.Fatalf("contract: %d %s", resp.StatusCode, body)
				}
			}
			r := newRecorder(t, eng)
			for i := 0; i < 3; i++ {
				id := r.start(threads.StartThreadInput{Contract: "diff_flow:1", Label: fmt.Sprintf("v1 #%d", i)})
				r.step(id, "start", "s", "success", nil)
				r.step(id, "ship", "h", "success", nil)
			}
			for i := 0; i < 2; i++ {
				id := r.start(threads.StartThreadInput{Contract: "diff_flow:2", Label: fmt.Sprintf("v2 #%d", i)})
				r.step(id, "start", "s", "success", nil)
				r.step(id, "pack", "p", "success", nil)
				r.step(id, "ship", "h", "success", nil)
			}

			signIn(t, ctx, eng)
			for _, w := range []int{1440, 390} {
				setWidth(t, ctx, w)
				do(t, ctx, "contract page", chromedp.Navigate(eng.URL+"/ui/contracts/diff_flow/2?compare=1"),
					chromedp.WaitVisible(css(`#diff-nodes table`)))
				steps := get(t, ctx, "step changes", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#diff-steps li')].map(l => [l.dataset.name, l.dataset.kind]))`))
				if fmt.Sprint(steps) != "map[pack:added]" {
					t.Fatalf("step changes %v", steps)
				}
				orders := get(t, ctx, "transition changes", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#diff-transitions li')].map(l => [l.dataset.name, l.dataset.kind]))`))
				if fmt.Sprint(orders) != "map[pack → ship:added start → pack:added start → ship:removed]" {
					t.Fatalf("transition changes %v", orders)
				}
				counts := get(t, ctx, "counts", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#diff-nodes tr[data-key]')].map(r => {
  const a = r.querySelector('[data-count-a]'), b = r.querySelector('[data-count-b]');
  return [r.dataset.key, (a ? a.dataset.countA : '-') + '/' + (b ? b.dataset.countB : '-')]; }))`))
				if fmt.Sprint(counts) != "map[pack:-/2 ship:3/2 start:3/2]" {
					t.Fatalf("side-by-side step counts (v1/v2) %v", counts)
				}
				if got := text(t, ctx, `#diff-started`); got != "Threads started in the window: v1 3, v2 2." {
					t.Fatalf("started %q", got)
				}
				if w == 390 {
					wideOK(t, ctx, "version diff")
				}
				do(t, ctx, "to the diff", void(chromedp.Evaluate[bool](`document.getElementById('version-diff-panel').scrollIntoView(), true`)))
				viewShot(t, ctx, fmt.Sprintf("35-version-diff-%s-%d", d, w))
				noJunk(t, ctx, "version diff")
			}
		})
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
}
