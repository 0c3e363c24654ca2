package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/test/enginetest"
)

// The explorer page runs in a real browser: it loads the schema by
// introspection and runs the editor's query with the key typed in.
func TestGraphQLExplorerInBrowser(t *testing.T) {
	t.Parallel()
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("chromium is not installed at " + chromium)
	}
	e := enginetest.Start(t, "sqlite")
	if _, err := graphqltest.SeedThread(adminCtx(e), e.Server.Threads, "ui", 2); err != nil {
		t.Fatal(err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	key, _ := json.Marshal(e.AdminKey)
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.URL+"/graphql"),
		chromedp.WaitVisible("#run"),
		chromedp.Evaluate[chromedp.Void](`(() => { const k = document.getElementById("key"); k.value = `+string(key)+`; k.dispatchEvent(new Event("change")); })()`),
		chromedp.Poll[chromedp.Void](`document.getElementById("schema").textContent.includes("type Query")`, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Click("#run"),
		chromedp.Poll[chromedp.Void](`document.getElementById("out").textContent.includes("totalCount")`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("explorer: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Text("#out"))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := chromedp.Run(ctx, chromedp.Text("#schema"))
	if err != nil {
		t.Fatal(err)
	}
	cost, _ := chromedp.Run(ctx, chromedp.Text("#cost"))
	if !strings.HasPrefix(out, "HTTP 200") || !strings.Contains(out, `"totalCount": 1`) || !strings.Contains(schema, "threadsByRef(") || !strings.Contains(cost, "cost") {
		t.Fatalf("explorer output %q, cost %q, schema %.300q", out, cost, schema)
	}
}
