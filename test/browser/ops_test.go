package browser_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// The operator tools in the UI: thread download and deletion (confirmed),
// the NDJSON export link, the retention setting and the Audit page.
func TestOperatorTools(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	eng := enginetest.Start(t, sqldb.SQLite)
	okID, failedID, _ := seedThreads(t, eng)
	base := eng.URL
	do(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/threads"), chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey), chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`a[data-thread-id]`)))

	// The list's export link carries the filters and downloads NDJSON.
	do(t, ctx, "filtered list", chromedp.Navigate(base+"/ui/threads?status=completed"), chromedp.WaitVisible(css(`#export-threads`)))
	href := get(t, ctx, "export href", chromedp.Evaluate[string](`document.querySelector('#export-threads').href`))
	if !strings.Contains(href, "/v1/threads/export?status=completed") {
		t.Fatalf("export link %q", href)
	}
	lines := get(t, ctx, "fetch ndjson", chromedp.Evaluate[string](`fetch(document.querySelector('#export-threads').href).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	if n := strings.Count(strings.TrimSpace(lines), "\n") + 1; n != 1 || !strings.Contains(lines, okID) {
		t.Fatalf("ndjson of completed threads: %d lines %q", n, lines)
	}

	// Thread page: download, then delete with confirmation.
	do(t, ctx, "thread page", chromedp.Navigate(base+"/ui/threads/"+failedID), chromedp.WaitVisible(css(`#delete-thread`)))
	got := get(t, ctx, "fetch export", chromedp.Evaluate[string](`fetch(document.querySelector('#export-thread').href).then(r => r.json()).then(j => j.thread.id + ' ' + j.attempts.length + ' ' + j.chain.verified)`,
		chromedp.EvalAwaitPromise))
	if got != failedID+" 1 true" {
		t.Fatalf("thread export %q", got)
	}
	shot(t, ctx, "ops-01-thread-actions")
	do(t, ctx, "cancel delete", chromedp.Click(css(`#delete-thread`)), chromedp.WaitVisible(css(`dialog .btn-danger.solid`)))
	if msg := text(t, ctx, `dialog`); !strings.Contains(msg, "for good") {
		t.Fatalf("delete dialog %q", msg)
	}
	shot(t, ctx, "ops-02-delete-dialog")
	do(t, ctx, "cancel", chromedp.Click(css(`dialog .dialog-foot button:first-child`)), chromedp.WaitNotPresent(css(`dialog`)))
	if resp, _ := eng.Do(t, http.MethodGet, "/v1/threads/"+failedID+"/export", eng.AdminKey, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel deleted the thread: %d", resp.StatusCode)
	}
	do(t, ctx, "delete", chromedp.Click(css(`#delete-thread`)), chromedp.WaitVisible(css(`dialog .btn-danger.solid`)),
		chromedp.Click(css(`dialog .btn-danger.solid`)), chromedp.WaitVisible(css(`#thread-filters`)))
	if resp, _ := eng.Do(t, http.MethodGet, "/v1/threads/"+failedID+"/export", eng.AdminKey, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after delete: %d", resp.StatusCode)
	}

	// Settings → Engine → Data retention.
	do(t, ctx, "retention", chromedp.Navigate(base+"/ui/settings/engine"), chromedp.WaitVisible(css(`#retention-days`)))
	do(t, ctx, "set retention",
		chromedp.SetValue(css(`#retention-days`), "45"), chromedp.Click(css(`#save-retention`)),
		chromedp.WaitVisible(css(`dialog .btn-danger.solid`)), chromedp.Click(css(`dialog .btn-danger.solid`)),
		chromedp.WaitEnabled(css(`#reset-retention`)))
	shot(t, ctx, "ops-03-retention")
	if v, err := eng.Server.Retention.Get.Handle(adminCtx(eng)); err != nil || v.ThreadsDays != 45 || v.Source != ops.RetentionFromUI {
		t.Fatalf("retention after save: %+v %v", v, err)
	}

	// Audit page lists the deletion and the retention change.
	do(t, ctx, "audit", chromedp.Navigate(base+"/ui/audit"), chromedp.WaitVisible(css(`#audit-list table`)))
	page := text(t, ctx, `#audit-list`)
	actor := eng.Admin.FullName
	if actor == "" {
		actor = eng.Admin.Email
	}
	// The actor is shown by name; the UUID is only its tooltip.
	for _, want := range []string{"thread.delete", "retention.set", failedID, actor} {
		if !strings.Contains(page, want) {
			t.Fatalf("audit page lacks %q: %s", want, page)
		}
	}
	for _, line := range strings.Split(page, "\n") {
		if strings.Contains(line, "thread.delete") && strings.Contains(line, eng.Admin.ID) {
			t.Fatalf("audit page shows the actor's UUID: %s", line)
		}
	}
	do(t, ctx, "audit filter", chromedp.SetValue(css(`#audit-filters input[name=action]`), "retention."),
		chromedp.Submit(css(`#audit-filters`)), chromedp.WaitVisible(css(`#audit-list table`)))
	if page := text(t, ctx, `#audit-list`); strings.Contains(page, "thread.delete") || !strings.Contains(page, "retention.set") {
		t.Fatalf("filtered audit page: %s", page)
	}
	shot(t, ctx, "ops-04-audit")
	noJunk(t, ctx, "audit")
}

func adminCtx(eng *enginetest.Engine) context.Context {
	return authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
}
