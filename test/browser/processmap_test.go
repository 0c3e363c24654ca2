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

// pickFlowYAML: a wave is started, items are picked (any number of
// pick_item identities), packed and handed over.
const pickFlowYAML = `contract_name: pick_flow
version: 1
entry_points: [start_wave]
steps:
  - id: start_wave
  - id: pick_item
  - id: pack
  - id: handover
transitions:
  - {from: start_wave, to: [pick_item]}
  - {from: pick_item, to: [pick_item, pack]}
  - {from: pack, to: [handover]}
terminal_steps: [handover]
`

// TestLongContractThreadAndProcessMap: a completed 61-step thread draws
// every step it ran as done (none "not reached"), and the contract's process
// map counts each step order exactly as often as the threads took it (the
// SQL count over the step states), forbidden orders in red.
func TestLongContractThreadAndProcessMap(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			eng := enginetest.Start(t, d)
			if resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": pickFlowYAML}); resp.StatusCode != http.StatusCreated {
				t.Fatalf("contract: %d %s", resp.StatusCode, body)
			}
			r := newRecorder(t, eng)
			wave := func(picks int, skipPicks bool) string {
				id := r.start(threads.StartThreadInput{Contract: "pick_flow", Label: fmt.Sprintf("wave of %d", picks)})
				r.step(id, "start_wave", "w", "success", nil)
				if !skipPicks {
					for i := 1; i <= picks; i++ {
						r.step(id, "pick_item", fmt.Sprintf("pick-%02d", i), "success", nil)
					}
				}
				r.step(id, "pack", "p", "success", nil)
				if !skipPicks { // a forbidden order fails the thread: it ends there
					r.step(id, "handover", "h", "success", nil)
				}
				return id
			}
			long := wave(58, false) // 61 steps
			for _, n := range []int{3, 5, 1} {
				wave(n, false)
			}
			wave(0, true) // start_wave → pack: not allowed
			wave(0, true)

			signIn(t, ctx, eng)
			for _, w := range []int{1280, 390} {
				setWidth(t, ctx, w)
				do(t, ctx, "long thread", chromedp.Navigate(eng.URL+"/ui/threads/"+long), chromedp.WaitVisible(css(`#contract-graph .g-node[data-step="handover"]`)))
				if got := text(t, ctx, `#step-counts`); got != "61 steps · 61 attempts" {
					t.Fatalf("step counts %q", got)
				}
				classes := get(t, ctx, "node classes", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#contract-graph .g-node')].map(n => [n.dataset.step, n.getAttribute('class')]))`))
				for _, s := range []string{"start_wave", "pick_item", "pack", "handover"} {
					if !strings.Contains(classes[s], "s-ok") {
						t.Fatalf("step %s drawn as %q, want done (s-ok)", s, classes[s])
					}
				}
				viewShot(t, ctx, fmt.Sprintf("33-long-contract-thread-%s-%d", d, w))

				do(t, ctx, "contract page", chromedp.Navigate(eng.URL+"/ui/contracts/pick_flow/1"), chromedp.WaitVisible(css(`#process-map table`)))
				got := get(t, ctx, "edges", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#process-map tr[data-edge]')].map(r => [r.dataset.edge + (r.dataset.allowed === 'true' ? '' : ' ✕'), r.querySelector('[data-count]').dataset.count]))`))
				var rows []struct {
					From string `db:"f"`
					To   string `db:"t"`
					N    int    `db:"n"`
				}
				if err := eng.Server.DB.Select(&rows, `SELECT COALESCE(s.previous_step, '') AS f, s.step_name AS t, COUNT(*) AS n FROM thread_step_states s
 JOIN threads th ON th.id = s.thread_id WHERE th.contract_name = 'pick_flow' AND th.contract_version = 1 GROUP BY COALESCE(s.previous_step, ''), s.step_name`); err != nil {
					t.Fatal(err)
				}
				want := map[string]string{}
				for _, x := range rows {
					k := x.From + "→" + x.To
					if x.From == "start_wave" && x.To == "pack" {
						k += " ✕"
					}
					want[k] = fmt.Sprint(x.N)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || want["start_wave→pack ✕"] != "2" || want["pick_item→pick_item"] != "63" {
					t.Fatalf("process map edges %v, SQL %v", got, want)
				}
				if n := get(t, ctx, "red edge", chromedp.Evaluate[int](`document.querySelectorAll('#process-map .g-link[data-forbidden="start_wave→pack"]').length`)); n != 1 {
					t.Fatalf("forbidden edge drawn %d times", n)
				}
				if w == 390 {
					wideOK(t, ctx, "contract page")
				}
				do(t, ctx, "to the map", void(chromedp.Evaluate[bool](`document.getElementById('process-map-panel').scrollIntoView(), true`)))
				viewShot(t, ctx, fmt.Sprintf("34-process-map-%s-%d", d, w))
				noJunk(t, ctx, "process map")
			}
		})
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
}
