package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/server"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

type view struct {
	PublicURL       string        `json:"public_url"`
	ConfigPublicURL string        `json:"config_public_url"`
	Source          string        `json:"source"`
	CanManage       bool          `json:"can_manage"`
	Endpoints       ops.Endpoints `json:"endpoints"`
	Code            string        `json:"code"`
	Field           string        `json:"field"`
}

func decode(t *testing.T, body []byte) view {
	t.Helper()
	var v view
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

func TestEngineSettingsAPI(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		eng := enginetest.Start(t, d)
		_, memberKey := eng.NewUser(t, domain.RoleMember)

		resp, body := eng.Do(t, http.MethodGet, "/v1/engine/settings", "", nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous GET: %d %s", resp.StatusCode, body)
		}
		resp, body = eng.Do(t, http.MethodGet, "/v1/engine/settings", memberKey, nil)
		v := decode(t, body)
		if resp.StatusCode != http.StatusOK || v.Source != "config" || v.PublicURL != eng.URL || v.CanManage {
			t.Fatalf("member GET: %d %+v", resp.StatusCode, v)
		}
		if v.Endpoints.WebSocket != "ws"+strings.TrimPrefix(eng.URL, "http")+"/threads" {
			t.Fatalf("endpoints %+v", v.Endpoints)
		}
		resp, body = eng.Do(t, http.MethodPut, "/v1/engine/settings", memberKey, map[string]string{"public_url": "https://x.example.com"})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("member PUT: %d %s", resp.StatusCode, body)
		}
		resp, body = eng.Do(t, http.MethodDelete, "/v1/engine/settings", memberKey, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("member DELETE: %d %s", resp.StatusCode, body)
		}

		for _, bad := range []string{"", "ftp://x", "https://u:p@x.example.com", "https://x.example.com/?a=1", "https://x.example.com/#f"} {
			resp, body = eng.Do(t, http.MethodPut, "/v1/engine/settings", eng.AdminKey, map[string]string{"public_url": bad})
			if v := decode(t, body); resp.StatusCode != http.StatusBadRequest || v.Field != "public_url" ||
				resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("PUT %q: %d %s", bad, resp.StatusCode, body)
			}
		}
		resp, body = eng.Do(t, http.MethodPut, "/v1/engine/settings", eng.AdminKey, map[string]any{"public_url": "https://x.example.com", "extra": 1})
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("unknown field: %d %s", resp.StatusCode, body)
		}

		resp, body = eng.Do(t, http.MethodPut, "/v1/engine/settings", eng.AdminKey, map[string]string{"public_url": "https://proxy.example.com/engine/"})
		v = decode(t, body)
		if resp.StatusCode != http.StatusOK || v.PublicURL != "https://proxy.example.com/engine" || v.Source != "ui" || !v.CanManage ||
			v.ConfigPublicURL != eng.URL || v.Endpoints.GraphQL != "https://proxy.example.com/engine/graphql" ||
			v.Endpoints.WebSocket != "wss://proxy.example.com/engine/threads" {
			t.Fatalf("admin PUT: %d %+v", resp.StatusCode, v)
		}
		// Applies at once for every reader.
		_, body = eng.Do(t, http.MethodGet, "/v1/engine/settings", memberKey, nil)
		if v := decode(t, body); v.PublicURL != "https://proxy.example.com/engine" || v.Source != "ui" {
			t.Fatalf("member sees %+v", v)
		}
		if got, src, err := eng.Server.EngineSettings.Effective(context.Background()); err != nil || got != "https://proxy.example.com/engine" || src != ops.EngineURLFromUI {
			t.Fatalf("Effective: %q %q %v", got, src, err)
		}

		// Persists across a restart: a new server on the same database.
		ctx := context.Background()
		if err := eng.Server.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		srv2, err := server.New(ctx, eng.Config, server.Options{Clock: eng.Clock, DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		defer srv2.Close()
		if got, src, err := srv2.EngineSettings.Effective(ctx); err != nil || got != "https://proxy.example.com/engine" || src != ops.EngineURLFromUI {
			t.Fatalf("after restart: %q %q %v", got, src, err)
		}
		if err := srv2.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEngineSettingsResetAndUnset(t *testing.T) {
	eng := enginetest.Start(t, "sqlite")
	resp, body := eng.Do(t, http.MethodPut, "/v1/engine/settings", eng.AdminKey, map[string]string{"public_url": "https://x.example.com"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	resp, body = eng.Do(t, http.MethodDelete, "/v1/engine/settings", eng.AdminKey, nil)
	if v := decode(t, body); resp.StatusCode != http.StatusOK || v.Source != "config" || v.PublicURL != eng.URL {
		t.Fatalf("DELETE: %d %+v", resp.StatusCode, v)
	}
	// Deleting twice is fine: "use config default" is idempotent.
	if resp, body = eng.Do(t, http.MethodDelete, "/v1/engine/settings", eng.AdminKey, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("second DELETE: %d %s", resp.StatusCode, body)
	}

	// Without server.public_url the source is "unset" and there are no endpoints.
	s := &ops.EngineSettings{Store: eng.Server.Store, Clock: eng.Clock}
	ctx := context.Background()
	if got, src, err := s.Effective(ctx); err != nil || got != "" || src != ops.EngineURLUnset {
		t.Fatalf("unset: %q %q %v", got, src, err)
	}
}

func TestCookieWritesNeedTheBrowserOrigin(t *testing.T) {
	eng := enginetest.Start(t, "sqlite")
	resp, body := eng.Do(t, http.MethodPost, "/auth/api-key/exchange", "", map[string]string{"api_key": eng.AdminKey})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exchange: %d %s", resp.StatusCode, body)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	put := func(origin string) int {
		r, _ := eng.DoWith(t, http.MethodPut, "/v1/engine/settings", map[string]string{"public_url": "https://x.example.com"}, func(r *http.Request) {
			r.AddCookie(cookie)
			if origin != "" {
				r.Header.Set("Origin", origin)
			}
		})
		return r.StatusCode
	}
	if st := put("https://evil.example.com"); st != http.StatusForbidden {
		t.Fatalf("foreign origin: %d", st)
	}
	if st := put(""); st != http.StatusForbidden {
		t.Fatalf("no origin: %d", st)
	}
	if st := put(eng.URL); st != http.StatusOK {
		t.Fatalf("browser origin: %d", st)
	}
}

func TestShellAndAssets(t *testing.T) {
	eng := enginetest.Start(t, "sqlite")
	get := func(path string, hdr map[string]string) (*http.Response, string) {
		resp, body := eng.DoWith(t, http.MethodGet, path, nil, func(r *http.Request) {
			for k, v := range hdr {
				r.Header.Set(k, v)
			}
		})
		return resp, string(body)
	}
	for _, p := range []string{"/", "/ui", "/ui/threads", "/ui/threads/some-id", "/ui/settings/engine"} {
		resp, body := get(p, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<base href="/">`) || !strings.Contains(body, "ui/assets/app.js") {
			t.Fatalf("GET %s: %d %.200s", p, resp.StatusCode, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Fatalf("GET %s: CSP %q", p, csp)
		}
	}
	resp, body := get("/ui/threads", map[string]string{"X-Forwarded-Prefix": "/engine"})
	if !strings.Contains(body, `<base href="/engine/">`) {
		t.Fatalf("prefix: %d %.300s", resp.StatusCode, body)
	}
	_, body = get("/ui/threads", map[string]string{"X-Forwarded-Prefix": `/x"><script>`})
	if !strings.Contains(body, `<base href="/">`) {
		t.Fatalf("hostile prefix must be ignored: %.300s", body)
	}
	if resp, _ = get("/ui/overview", nil); resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the shell must not be cached (Back after sign-out): %v", resp.Header)
	}
	resp, body = get("/ui/assets/app.css", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || !strings.Contains(body, "--accent") {
		t.Fatalf("css: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("css caching headers: %v", resp.Header)
	}
	if resp, _ = get("/ui/assets/app.css", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %d", resp.StatusCode)
	}
	if _, body = get("/ui/threads", map[string]string{"X-Forwarded-Prefix": "/a/../b"}); !strings.Contains(body, `<base href="/">`) {
		t.Fatalf("dot segments must be ignored: %.300s", body)
	}
	resp, _ = get("/ui/assets/app.js", nil)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.Contains(ct, "javascript") {
		t.Fatalf("js: %d %s", resp.StatusCode, ct)
	}
	for _, p := range []string{"/ui/assets/missing.js", "/ui/assets/", "/ui/assets/../index.html", "/v1/nope", "/auth/nope"} {
		resp, body = get(p, nil)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "<html") {
			t.Fatalf("GET %s must be a 404 problem, got %d %.100s", p, resp.StatusCode, body)
		}
	}
	// The UI never answers API or page routes owned by others.
	if resp, body = get("/login", nil); !strings.Contains(body, "api-key") {
		t.Fatalf("/login is not the sign-in page: %d %.200s", resp.StatusCode, body)
	}
	if resp, _ = get("/healthz", nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") == "text/html; charset=UTF-8" {
		t.Fatalf("/healthz shadowed: %d", resp.StatusCode)
	}
}
