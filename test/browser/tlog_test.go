package browser_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// The thread page says which signed checkpoint includes the thread and
// offers the export with proofs; the overview shows the log's size.
func TestTransparencyLogInTheUI(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	eng := enginetest.Start(t, sqldb.SQLite)
	actx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: eng.Admin.ID, Role: domain.RoleAdmin})
	cmds := eng.Server.Threads.Application().Commands
	th, err := cmds.StartThread.Handle(actx, threadsapp.StartThreadInput{Label: "Logged order"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reserve", "pay", "ship"} {
		if _, err := cmds.RecordStep.Handle(actx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: name, Status: "success",
			IdempotencyKey: name, Context: map[string]string{"order": "O-27"}}); err != nil {
			t.Fatal(err)
		}
	}
	base := eng.URL
	do(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/threads"),
		chromedp.WaitVisible(css(`#api-key`)),
		chromedp.SendKeys(css(`#api-key`), eng.AdminKey),
		chromedp.Click(css(`#apikey-submit`)),
		chromedp.WaitVisible(css(`#threads-count`)))
	do(t, ctx, "thread page", chromedp.Navigate(base+"/ui/threads/"+th.ID), chromedp.WaitVisible(css(`#log-inclusion`)))
	origin := strings.Split(eng.Server.TLog.Queries.Keys.Handle(context.Background()).Origin, "\n")[0]
	inc := text(t, ctx, `#log-inclusion`)
	if !strings.Contains(inc, "Included in checkpoint") || !strings.Contains(inc, "signed by "+origin) || !strings.Contains(inc, "export with proofs") {
		t.Fatalf("log card %q (origin %s)", inc, origin)
	}
	if href := get(t, ctx, "export link", chromedp.Evaluate[string](`document.querySelector('#export-proofs').getAttribute('href')`)); !strings.HasSuffix(href, "/v1/threads/"+th.ID+"/export") {
		t.Fatalf("export link %q", href)
	}
	noJunk(t, ctx, "thread-log")
	shot(t, ctx, "40-thread-transparency-log")
	do(t, ctx, "overview", chromedp.Navigate(base+"/ui/overview"), chromedp.WaitVisible(css(`#log-size`)))
	if size := text(t, ctx, `#log-size`); size != "3 entries" {
		t.Fatalf("log size %q", size)
	}
	shot(t, ctx, "41-overview-transparency-log")
}
