package sdk_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// The unmodified Node SDK's documented reads at their documented sizes
// (issue 29): steps() on 100 distinct steps, getThreadsByRef({limit: 100})
// on 100 matching threads, history({limit: 1000}) on 1,000 attempts — each
// returns every row (the engine prices the SDK's documents by the rows they
// return, docs/integrators/graphql.md), subSteps() of a step state without
// an idempotency key on the 100-step thread — and a 30-day invitation.
func TestNodeSDKDocumentedReads(t *testing.T) {
	dir, node := nodeSDK(t)
	script := repoFile(t, "node/reads.mjs")
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		e := enginetest.Start(t, d)
		_, key := e.NewUser(t, domain.RoleMember)
		_, key2 := e.NewUser(t, domain.RoleMember)
		// 1,300 steps sent one after the other: generous for a busy machine.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script)
		cmd.Env = append(os.Environ(), nodeSDKEnv+"="+dir, "ENGINE_WS_URL="+wsURL(e), "ENGINE_API_KEY="+key,
			"ENGINE_API_KEY_2="+key2)
		out := runJSON(t, cmd)

		if s := out["steps"]; dig(s, "count") != float64(100) || dig(s, "first") != "s000" || dig(s, "last") != "s099" {
			t.Errorf("steps() on 100 distinct steps = %v, want all 100 in first-seen order", s)
		}
		if subs, _ := out["subSteps"].([]any); len(subs) != 1 || subs[0] != "inner" {
			t.Errorf("subSteps() of the 100th step = %v", out["subSteps"])
		}
		if subs, _ := out["subStepsWithoutKey"].([]any); len(subs) != 1 || subs[0] != "inner" {
			t.Errorf("subSteps() without an idempotency key on the 100-step thread = %v", out["subStepsWithoutKey"])
		}
		if m := toString(out["refusal"]); !strings.Contains(m, "422") || !strings.Contains(m, "exceeds the limit of 1000") {
			t.Errorf("a refused read through the Node SDK: %q, want the engine's message", m)
		}
		if r := out["threadsByRef"]; dig(r, "count") != float64(100) || dig(r, "distinct") != float64(100) {
			t.Errorf("getThreadsByRef({limit: 100}) = %v, want 100 distinct threads", r)
		}
		if h := out["history"]; dig(h, "count") != float64(1000) || dig(h, "newest") != float64(1000) ||
			dig(h, "oldest") != float64(1) || dig(h, "newestStatus") != "success" || dig(h, "retryCount") != float64(999) {
			t.Errorf("history({limit: 1000}) = %v, want attempts 1000..1 newest first", h)
		}
		inv := out["invite"]
		if dig(inv, "joinedThread") != true || dig(inv, "accessLevel") != "participant" || dig(inv, "guestSteps") != float64(1) {
			t.Errorf("30-day invitation = %v", inv)
		}
		expires, err := time.Parse(time.RFC3339, toString(dig(inv, "expiresAt")))
		if want := e.Clock.Now().Add(30 * 24 * time.Hour); err != nil || expires.Sub(want).Abs() > time.Minute {
			t.Errorf("invitation expiresAt = %v (%v), want %v", dig(inv, "expiresAt"), err, want)
		}
	})
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}
