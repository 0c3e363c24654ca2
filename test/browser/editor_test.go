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
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/test/enginetest"
)

const editorPayment = `Feature: payment
Version: 1
Description: Approve, then charge.

Rule: Approval
  When step "approval" is submitted
  Then owner must be "reviewer"
  And this step is an entry point

Rule: Charge
  When step "charge" is submitted
  Then owner must be "processor"
  And step "approval" must have succeeded
  And this step is terminal
`

// The charges of the seeded threads, oldest first: the draft refuses
// 0, -5, JPY and 0 (4 of 8).
var editorCharges = []struct{ amount, currency string }{
	{"12.50", "EUR"}, {"0", "EUR"}, {"40", "GBP"}, {"-5", "EUR"}, {"7", "JPY"}, {"0.01", "USD"}, {"99", "EUR"}, {"0", "EUR"},
}

func seedEditor(t *testing.T, eng *enginetest.Engine) []string {
	t.Helper()
	resp, body := eng.DoWith(t, http.MethodPost, "/v1/contracts", editorPayment, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+eng.AdminKey)
		r.Header.Set("Content-Type", "text/plain")
	})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %s", resp.StatusCode, body)
	}
	cmd := eng.Server.Threads.Application().Commands
	ctx := adminCtx(eng)
	var ids []string
	for i, c := range editorCharges {
		eng.Clock.Advance(time.Minute)
		th, err := cmd.StartThread.Handle(ctx, threads.StartThreadInput{Contract: "payment", Role: "reviewer", Label: fmt.Sprint("Payment ", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
		record := func(role, step string, c map[string]string) {
			eng.Clock.Advance(time.Second)
			if _, err := cmd.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: th.ID, Role: role, StepName: step, Status: "success",
				IdempotencyKey: step, Context: c}); err != nil {
				t.Fatal(err)
			}
		}
		record("reviewer", "approval", map[string]string{"reference": fmt.Sprint("R-", i)})
		if _, err := cmd.JoinThread.Handle(ctx, threads.JoinInput{ThreadID: th.ID, Role: "processor"}); err != nil {
			t.Fatal(err)
		}
		record("processor", "charge", map[string]string{"amount": c.amount, "currency": c.currency})
	}
	return ids
}

// selectLine selects line n (1-based) of the editor, or puts the caret at
// its end, so the next keys replace or extend it.
func selectLine(n int, whole bool) chromedp.Action[chromedp.Void] {
	return void(chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
  const ta = document.getElementById('contract-editor');
  const lines = ta.value.split('\n');
  let start = 0;
  for (let i = 0; i < %d - 1; i++) start += lines[i].length + 1;
  const end = start + lines[%d - 1].length;
  ta.focus();
  ta.setSelectionRange(%t ? start : end, end);
  return true;
})()`, n, n, whole)))
}

func waitJS(cond string) chromedp.Action[chromedp.Void] { return void(chromedp.Poll[bool](cond)) }

// The editor: an error typed in shows on its line, its problem moves the
// caret there, the fix compiles (graph, diff), the replay counts the
// seeded threads the draft refuses with links to them, a refused publish
// shows its code, and the publish lands; at 1440 and 390 px, with no
// console error.
func TestContractEditor(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	errs := consoleErrors(ctx)
	eng := enginetest.Start(t, sqldb.SQLite)
	ids := seedEditor(t, eng)
	base := eng.URL
	do(t, ctx, "desktop", chromedp.EmulateViewport(1440, 900))
	do(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/contracts"), chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey), chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`#new-contract`)), chromedp.WaitVisible(css(`a[data-contract=payment]`)))
	// The line diff the editor shows, on its own.
	diff := get(t, ctx, "diff", chromedp.Evaluate[string](`import('/ui/assets/views/linediff.js').then(m => m.diffLines("a\nb\nc\nd\n", "a\nx\nc\nd\ne\n").map(d => d.op + d.text + d.a + d.b).join(','))`, chromedp.EvalAwaitPromise))
	if diff != " a11,-b20,+x02, c33, d44,+e05" {
		t.Fatalf("diffLines: %s", diff)
	}
	do(t, ctx, "open the contract", chromedp.Click(css(`a[data-contract=payment]`)), chromedp.WaitVisible(css(`#edit-contract`)))
	if h := text(t, ctx, `#contract-source`); !strings.HasPrefix(h, "Feature: payment") {
		t.Fatalf("source panel %q", h)
	}
	do(t, ctx, "open the editor", chromedp.Click(css(`#edit-contract`)),
		chromedp.WaitVisible(css(`#contract-editor`)), waitText(`#diff-summary`, "no changes"),
		waitJS(`document.getElementById('editor-status').textContent.includes('payment v1')`))
	if n := get(t, ctx, "gutter", chromedp.Evaluate[int](`document.querySelectorAll('.code-gutter .ln').length`)); n != 15 {
		t.Fatalf("gutter has %d lines, want 15", n)
	}

	// An unknown sentence after the owner clause of the charge (line 12).
	do(t, ctx, "type an error", selectLine(12, false), chromedp.KeyEvent("\n  And the amount should be sensible"),
		waitJS(`!!document.querySelector('#problem-items button[data-line="13"]')`))
	problem := text(t, ctx, `#problem-items li`)
	if !strings.Contains(problem, "Line 13") || !strings.Contains(problem, "unsupported step constraint: the amount should be sensible") {
		t.Fatalf("problem %q", problem)
	}
	if marked := get(t, ctx, "gutter marks", chromedp.Evaluate[string](`[...document.querySelectorAll('.code-gutter .ln.err')].map(e => e.dataset.line).join(',')`)); marked != "13" {
		t.Fatalf("gutter marks lines %q, want 13", marked)
	}
	if st := text(t, ctx, `#editor-status`); !strings.Contains(st, "1 problem") {
		t.Fatalf("status %q", st)
	}
	if !get(t, ctx, "publish disabled", chromedp.Evaluate[bool](`document.getElementById('publish').disabled && document.getElementById('replay').disabled`)) {
		t.Fatal("publish and replay are enabled on an invalid draft")
	}
	do(t, ctx, "caret away", selectLine(2, false))
	shot(t, ctx, "editor-01-problem-1440")
	// The problem takes the caret to its line, which says what is wrong.
	do(t, ctx, "go to the problem", chromedp.Click(css(`#problem-items button[data-line="13"]`)),
		waitJS(`document.activeElement.id === 'contract-editor'`))
	if line := get(t, ctx, "caret line", chromedp.Evaluate[int](`(() => { const ta = document.getElementById('contract-editor'); return ta.value.slice(0, ta.selectionStart).split('\n').length; })()`)); line != 13 {
		t.Fatalf("caret on line %d, want 13", line)
	}
	if msg := text(t, ctx, `#editor-line-msg`); !strings.HasPrefix(msg, "Line 13: unsupported step constraint") {
		t.Fatalf("line message %q", msg)
	}

	// The fix: two content rules instead.
	do(t, ctx, "fix", selectLine(13, true),
		chromedp.KeyEvent(`  And content "amount" must be a number greater than 0`+"\n"+`  And content "currency" must be one of "GBP", "USD", "EUR"`),
		waitJS(`document.getElementById('editor-status').textContent.includes('valid')`),
		waitJS(`!document.querySelector('#problem-items') && !document.querySelector('.code-gutter .ln.err')`),
		waitText(`#diff-summary`, "+2 −0 lines"))
	if n := get(t, ctx, "graph", chromedp.Evaluate[string](`[...document.querySelectorAll('#editor-graph g[data-step]')].map(g => g.dataset.step).join(',')`)); n != "approval,charge" {
		t.Fatalf("graph nodes %q", n)
	}
	if added := get(t, ctx, "diff lines", chromedp.Evaluate[string](`[...document.querySelectorAll('#editor-diff .d-line.add code')].map(c => c.textContent.trim()).join('|')`)); added != `And content "amount" must be a number greater than 0|And content "currency" must be one of "GBP", "USD", "EUR"` {
		t.Fatalf("added lines %q", added)
	}

	// Publishing with the published version number is refused, with its code.
	do(t, ctx, "publish v1", chromedp.Click(css(`#publish`)), chromedp.WaitVisible(css(`dialog[open] .btn-primary`)),
		chromedp.Click(css(`dialog[open] .btn-primary`)), chromedp.WaitVisible(css(`#publish-msg .alert.bad`)))
	if msg := text(t, ctx, `#publish-msg`); !strings.Contains(msg, "contract_version_conflict") {
		t.Fatalf("refused publish shows %q", msg)
	}

	// Replay over the seeded threads: 4 of 8 refused, on two rules.
	do(t, ctx, "replay", chromedp.Click(css(`#replay`)), chromedp.WaitVisible(css(`#replay-headline`)))
	if hl := text(t, ctx, `#replay-headline`); hl != "This draft would have refused 4 of 8 threads." {
		t.Fatalf("replay headline %q", hl)
	}
	amount := `tr[data-rule="refused:content_rule_failed:charge:amount"]`
	currency := `tr[data-rule="refused:content_rule_failed:charge:currency"]`
	examples := get(t, ctx, "examples", chromedp.Evaluate[string](`[...document.querySelectorAll('`+amount+` a[data-example]')].map(a => a.dataset.example).join(',')`))
	if examples != strings.Join([]string{ids[7], ids[3], ids[1]}, ",") {
		t.Fatalf("amount examples %s, want the threads charging 0, -5, 0 (newest first)", examples)
	}
	if row := text(t, ctx, currency); !strings.Contains(row, "1 (13 %)") {
		t.Fatalf("currency row %q", row)
	}
	if nf := text(t, ctx, `#replay-newly`); nf != "4 (50 %)" {
		t.Fatalf("newly failing %q", nf)
	}
	noJunk(t, ctx, "editor")
	shot(t, ctx, "editor-02-replay-1440")

	// The version hint sets Version: 2; then the publish lands.
	do(t, ctx, "use version 2", chromedp.Click(css(`#bump-version`)), waitText(`#publish`, "Publish v2"))
	if !get(t, ctx, "replay stale", chromedp.Evaluate[bool](`!document.getElementById('replay-result').classList.contains('stale')`)) {
		t.Fatal("a version change (same content) marked the replay stale")
	}
	shot(t, ctx, "editor-03-ready-1440")
	do(t, ctx, "publish v2", chromedp.Click(css(`#publish`)), chromedp.WaitVisible(css(`dialog[open] .btn-primary`)))
	if msg := text(t, ctx, `dialog[open]`); !strings.Contains(msg, "would refuse 4 and violate 0 of the latest 8 threads") {
		t.Fatalf("publish dialog %q", msg)
	}
	do(t, ctx, "confirm", chromedp.Click(css(`dialog[open] .btn-primary`)),
		waitJS(`location.pathname.endsWith('/ui/contracts/payment/2')`), chromedp.WaitVisible(css(`#contract-source`)))
	if src := text(t, ctx, `#contract-source`); !strings.Contains(src, `content "currency" must be one of`) {
		t.Fatalf("published source %q", src)
	}
	resp, body := eng.Do(t, http.MethodGet, "/v1/contracts/payment", eng.AdminKey, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"version":2`) || !strings.Contains(string(body), `"operator":"gt"`) {
		t.Fatalf("stored: %d %s", resp.StatusCode, body)
	}
	// Published: the browser no longer keeps the draft.
	do(t, ctx, "editor again", chromedp.Navigate(base+"/ui/contracts/payment/edit"), waitText(`#diff-summary`, "no changes"))
	if n := get(t, ctx, "draft note", chromedp.Evaluate[int](`document.querySelectorAll('#draft-note .alert').length`)); n != 0 {
		t.Fatal("the published draft is still offered for restore")
	}

	// 390 px: a new contract, an error in it, and a replay of the new version.
	do(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(base+"/ui/contracts/new"), chromedp.WaitVisible(css(`#contract-editor`)),
		waitJS(`document.getElementById('editor-status').textContent.includes('my_contract v1')`))
	noOverflow(t, ctx, "new contract")
	shot(t, ctx, "editor-04-new-390")
	do(t, ctx, "phone error", selectLine(1, true), chromedp.KeyEvent("Feature: payment"),
		selectLine(2, true), chromedp.KeyEvent("Version: 3"),
		selectLine(8, false), chromedp.KeyEvent(" please"),
		waitJS(`!!document.querySelector('#problem-items button[data-line="8"]')`))
	noOverflow(t, ctx, "editor with a problem")
	shot(t, ctx, "editor-05-problem-390")
	do(t, ctx, "phone fix", selectLine(8, false), chromedp.KeyEvent(strings.Repeat("\b", len(" please"))),
		waitJS(`document.getElementById('editor-status').textContent.includes('payment v3')`),
		waitJS(`document.getElementById('diff-h').textContent === 'Changes against payment v2'`),
		waitJS(`!document.getElementById('replay').disabled`),
		chromedp.Click(css(`#replay`)), chromedp.WaitVisible(css(`#replay-headline`)))
	if hl := text(t, ctx, `#replay-headline`); !strings.HasSuffix(hl, "of 8 threads.") {
		t.Fatalf("phone replay headline %q", hl)
	}
	noOverflow(t, ctx, "replay")
	shot(t, ctx, "editor-06-replay-390")
	do(t, ctx, "scroll to replay", void(chromedp.Evaluate[bool](`document.getElementById('replay-headline').scrollIntoView(), true`)))
	viewShot(t, ctx, "editor-06b-replay-390-viewport")
	noJunk(t, ctx, "editor phone")

	// A viewer sees the source read-only, can replay, cannot publish.
	do(t, ctx, "desktop again", chromedp.EmulateViewport(1440, 900))
	_, viewerKey := eng.NewUser(t, "viewer")
	do(t, ctx, "sign out", chromedp.Click(css(`#sign-out`)), chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), viewerKey), chromedp.Click(css(`#apikey-submit`)), chromedp.WaitVisible(css(`#whoami`)),
		chromedp.Navigate(base+"/ui/contracts/payment"), chromedp.WaitVisible(css(`#edit-contract`)))
	if txt := text(t, ctx, `#edit-contract`); txt != "Open in editor" {
		t.Fatalf("viewer's editor link %q", txt)
	}
	do(t, ctx, "viewer editor", chromedp.Click(css(`#edit-contract`)), chromedp.WaitVisible(css(`#contract-editor`)),
		waitJS(`!document.getElementById('replay').disabled`))
	if get(t, ctx, "viewer", chromedp.Evaluate[string](`[document.getElementById('contract-editor').readOnly, !!document.getElementById('publish'), !!document.getElementById('new-contract')].join(',')`)) != "true,false,false" {
		t.Fatal("a viewer can edit or publish")
	}
	shot(t, ctx, "editor-07-viewer-1440")
	if e := errs(); len(e) > 0 {
		t.Fatalf("console errors: %v", e)
	}
}

func noOverflow(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	if get(t, ctx, "overflow "+what, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
		shot(t, ctx, "FAILED-overflow-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s scrolls horizontally at 390 px", what)
	}
}
