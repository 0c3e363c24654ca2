package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// TestLongSearchFiltersAreCoded is issue 25 item 7: a refValue or idPrefix
// over 50,000 bytes (SQLite's LIKE pattern limit) is a coded validation
// error on both stores and every transport, never an internal error; and
// GET /v1/contracts/%00 is answered the same on both stores.
func TestLongSearchFiltersAreCoded(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleViewer)
		long := strings.Repeat("x", 50001)
		for _, arg := range []string{"refValue", "idPrefix", "refKey", "tag"} {
			st, r, raw := gqlPost(t, e, key, `query($v: String) { threads(`+arg+`: $v) { totalCount threads { id } } }`, map[string]any{"v": long})
			if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "validation_failed" || r.Errors[0].Extensions["field"] != arg {
				t.Errorf("threads(%s: 50,001 bytes): %d %.300s", arg, st, raw)
			}
		}
		st, r, raw := gqlPost(t, e, key, `query($v: String!) { threadsByRef(refValue: $v) { threads { id } } }`, map[string]any{"v": long})
		if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "validation_failed" {
			t.Errorf("threadsByRef(refValue: 50,001 bytes): %d %.300s", st, raw)
		}
		// Just under the bound is a search like any other.
		st, r, raw = gqlPost(t, e, key, `query($v: String) { threads(refValue: $v) { totalCount } }`, map[string]any{"v": long[:4096]})
		if st != http.StatusOK || len(r.Errors) != 0 {
			t.Errorf("threads(refValue: 4,096 bytes): %d %.300s", st, raw)
		}

		cs := mustConnect(t, e, key)
		wantToolError(t, "search_threads", callTool(t, cs, "search_threads", map[string]any{"ref_value": long}), "validation_failed")
		cs.Close()

		resp, body := e.Do(t, http.MethodGet, "/v1/contracts/%00", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/%00/versions", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
	})
}
