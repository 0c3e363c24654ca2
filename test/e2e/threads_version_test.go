package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// GET /v1/threads/version: a strong ETag, 304 while nothing changed, a new
// version after a thread starts, after a step and after it ends; readers
// only.
func TestThreadsVersion(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		version := func(etag string) (int, string) {
			t.Helper()
			resp, body := e.DoWith(t, http.MethodGet, "/v1/threads/version", nil, func(r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+viewerKey)
				if etag != "" {
					r.Header.Set("If-None-Match", etag)
				}
			})
			if resp.StatusCode == http.StatusOK {
				v := decode[struct{ Version string }](t, body)
				if want := `"` + v.Version + `"`; v.Version == "" || resp.Header.Get("ETag") != want {
					t.Fatalf("version %q with ETag %q", v.Version, resp.Header.Get("ETag"))
				}
			} else if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Fatalf("version: %d %s", resp.StatusCode, body)
			}
			return resp.StatusCode, resp.Header.Get("ETag")
		}
		status, empty := version("")
		if status != http.StatusOK {
			t.Fatalf("first read %d", status)
		}
		if status, _ := version(empty); status != http.StatusNotModified {
			t.Fatalf("unchanged: %d, want 304", status)
		}
		ws := connectWS(t, e, e.AdminKey)
		tid := ws.ok(map[string]any{"action": "startThread", "label": "versioned"})["threadId"].(string)
		seen := map[string]bool{empty: true}
		changed := func(what string) {
			t.Helper()
			prev := ""
			for k := range seen {
				prev = k // any earlier version must not match
			}
			status, etag := version(prev)
			if status != http.StatusOK || seen[etag] {
				t.Fatalf("after %s: %d %s (seen %v)", what, status, etag, seen)
			}
			seen[etag] = true
			if status, _ := version(etag); status != http.StatusNotModified {
				t.Fatalf("after %s, unchanged: %d", what, status)
			}
		}
		changed("a new thread")
		e.Clock.Advance(time.Second)
		ws.ok(step(tid, "pay", "success", "k1", nil))
		changed("a step")
		e.Clock.Advance(time.Second)
		ws.ok(map[string]any{"action": "threadEnd", "threadId": tid, "status": "completed"})
		changed("the end")

		resp, body := e.Do(t, http.MethodGet, "/v1/threads/version", "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
	})
}
