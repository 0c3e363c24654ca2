package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/test/enginetest"
)

type causes struct {
	payFirst, timeouts, bin, ok []string
	payFirstEU                  []string
	rule                        string // the rule a contract thread that starts at pay breaks
}

// seedCauses records a mix of unhealthy threads: three order_flow threads
// that start at pay (not an entry point; two tagged eu), three free-form
// threads whose charge timed out after different times (one tagged eu), one
// whose pick found an empty bin, and two healthy threads.
func seedCauses(t *testing.T, eng *enginetest.Engine) causes {
	t.Helper()
	if resp, body := eng.Do(t, http.MethodPost, "/v1/contracts", eng.AdminKey, map[string]string{"source": enginetest.OrderFlowYAML}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("contract: %d %s", resp.StatusCode, body)
	}
	r := newRecorder(t, eng)
	var c causes
	for i := 0; i < 3; i++ {
		tags := []string{"us"}
		if i < 2 {
			tags = []string{"eu"}
		}
		id := r.start(threads.StartThreadInput{Contract: "order_flow", Role: "checkout", Label: fmt.Sprintf("Order PF-%d", i), Tags: tags,
			Refs: map[string]string{"orderId": fmt.Sprintf("PF-%d", i)}})
		r.step(id, "pay", "p", "success", nil)
		c.payFirst = append(c.payFirst, id)
		if i < 2 {
			c.payFirstEU = append(c.payFirstEU, id)
		}
	}
	for i, ms := range []int{1200, 950, 30} {
		tags := []string{"us"}
		if i == 0 {
			tags = []string{"eu"}
		}
		id := r.start(threads.StartThreadInput{Label: fmt.Sprintf("Charge %d", i), Tags: tags})
		r.step(id, "charge", "c", "failed", map[string]any{"error": fmt.Sprintf("timeout after %d ms calling psp-%d", ms, i+1)})
		c.timeouts = append(c.timeouts, id)
	}
	id := r.start(threads.StartThreadInput{Label: "Pick 1"})
	r.step(id, "pick", "k", "failed", map[string]any{"error": "bin B-7 empty"})
	c.bin = append(c.bin, id)
	for i := 0; i < 2; i++ {
		id := r.start(threads.StartThreadInput{Label: fmt.Sprintf("Fine %d", i), Tags: []string{"eu"}})
		r.step(id, "work", "w", "success", nil)
		c.ok = append(c.ok, id)
	}
	if err := eng.Server.DB.Get(&c.rule, eng.Server.DB.Rebind(`SELECT first_issue_type FROM threads WHERE id = ?`), c.payFirst[0]); err != nil || c.rule == "" {
		t.Fatalf("rule of the pay-first thread: %q %v", c.rule, err)
	}
	return c
}

// exportedIDs downloads the list's export link in the page (its session
// cookie) and returns the thread ids of the NDJSON lines.
func exportedIDs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	body := get(t, ctx, "export", chromedp.Evaluate[string](`fetch(document.getElementById('export-threads').href, { credentials: 'same-origin' }).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if line == "" {
			continue
		}
		var x struct {
			Thread struct {
				ID string `json:"id"`
			} `json:"thread"`
		}
		if err := json.Unmarshal([]byte(line), &x); err != nil || x.Thread.ID == "" {
			t.Fatalf("export line %q: %v", line, err)
		}
		ids = append(ids, x.Thread.ID)
	}
	sort.Strings(ids)
	return ids
}

func listedIDs(t *testing.T, ctx context.Context) []string {
	ids := get(t, ctx, "listed", chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-row]')].map(r => r.dataset.row)`))
	sort.Strings(ids)
	return ids
}

func sorted(s []string) []string { c := append([]string{}, s...); sort.Strings(c); return c }

// TestProblemsAndExport: the Problems view groups a seeded mix by cause with
// the right counts, each count opens exactly its threads, and the list's
// export holds exactly the threads the filtered list shows.
func TestProblemsAndExport(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			eng := enginetest.Start(t, d)
			c := seedCauses(t, eng)
			signIn(t, ctx, eng)
			for _, w := range []int{1280, 390} {
				setWidth(t, ctx, w)
				do(t, ctx, "problems", chromedp.Navigate(eng.URL+"/ui/problems"), chromedp.WaitVisible(css(`#problems-total`)))
				if got := text(t, ctx, `#problems-total`); !strings.HasPrefix(got, "7 threads need attention, in 3 causes") {
					t.Fatalf("problems total %q", got)
				}
				counts := get(t, ctx, "causes", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('a.cause-link')].map(a => [a.dataset.cause, a.textContent]))`))
				want := map[string]string{
					"order_flow|1|" + c.rule + "|pay|":                          "3",
					"||step_failed|charge|timeout after <n> ms calling psp-<n>": "3",
					"||step_failed|pick|bin B-<n> empty":                        "1",
				}
				if fmt.Sprint(counts) != fmt.Sprint(want) {
					t.Fatalf("causes %v, want %v", counts, want)
				}
				if w == 390 {
					wideOK(t, ctx, "problems")
				}
				viewShot(t, ctx, fmt.Sprintf("31-problems-%s-%d", d, w))
				noJunk(t, ctx, "problems")

				// A cause's count opens exactly its threads, and exports them.
				do(t, ctx, "open a cause", chromedp.Click(css(`a.cause-link[data-cause^="order_flow|1|"]`)), waitText(`#threads-count`, "1–3 of 3"))
				loc := location(t, ctx)
				for _, p := range []string{"rule=" + c.rule, "step=pay", "contract=order_flow", "version=1", "health=FAILED%2CVIOLATED"} {
					if !strings.Contains(loc, p) {
						t.Fatalf("cause link %s lacks %s", loc, p)
					}
				}
				if got := listedIDs(t, ctx); fmt.Sprint(got) != fmt.Sprint(sorted(c.payFirst)) {
					t.Fatalf("cause lists %v, want %v", got, sorted(c.payFirst))
				}
				if got := exportedIDs(t, ctx); fmt.Sprint(got) != fmt.Sprint(sorted(c.payFirst)) {
					t.Fatalf("export of the cause %v, want %v", got, sorted(c.payFirst))
				}
				// Narrowed by a tag, a ref, an id prefix and a time preset: the export follows.
				do(t, ctx, "tag eu", chromedp.Navigate(eng.URL+"/ui/threads?health=FAILED,VIOLATED&tag=eu&when=24h"), waitText(`#threads-count`, "1–3 of 3"))
				wantEU := sorted(append(append([]string{}, c.payFirstEU...), c.timeouts[0]))
				if got := listedIDs(t, ctx); fmt.Sprint(got) != fmt.Sprint(wantEU) {
					t.Fatalf("tag eu lists %v, want %v", got, wantEU)
				}
				if got := exportedIDs(t, ctx); fmt.Sprint(got) != fmt.Sprint(wantEU) {
					t.Fatalf("export of tag eu %v, want %v", got, wantEU)
				}
				do(t, ctx, "ref and id", chromedp.Navigate(eng.URL+"/ui/threads?refKey=orderId&ref=pf-1&id="+c.payFirst[1][:6]), waitText(`#threads-count`, "1–1 of 1"))
				if got := exportedIDs(t, ctx); fmt.Sprint(got) != fmt.Sprint([]string{c.payFirst[1]}) {
					t.Fatalf("export by ref and id %v", got)
				}
				if w == 390 {
					if open := get(t, ctx, "filters folded", chromedp.Evaluate[bool](`document.getElementById('filter-box').open`)); open {
						t.Fatal("the filter form is open on a phone")
					}
					wideOK(t, ctx, "threads")
				}
				viewShot(t, ctx, fmt.Sprintf("32-threads-filtered-%s-%d", d, w))
			}
		})
	}
	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
}
