// Package webui serves the browser UI (package web, embedded) and the engine
// settings API it edits (/v1/engine/settings).
//
// The app shell answers "/" and every path under /ui/ (pages such as
// /ui/threads/<id> use history routing, so deep links work); static files live
// under /ui/assets/ (the /login page may link /ui/assets/app.css). Keeping the
// pages under /ui/ means the UI never shadows an API or WebSocket route
// (/v1, /auth, /graphql, /threads, /metrics, /healthz, /readyz, /mcp, /login).
package webui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io/fs"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/web"
)

// AssetsPrefix is where static UI files are served.
const AssetsPrefix = "/ui/assets/"

// StylesheetPath is the shared stylesheet (stable path for the /login page).
const StylesheetPath = AssetsPrefix + "app.css"

// Mount registers the UI, its assets and the engine settings API on e.
// auth authenticates API requests (httpapi.Auth middleware).
func Mount(e *echo.Echo, settings *ops.EngineSettings, auth echo.MiddlewareFunc) error {
	assets, err := fs.Sub(web.Files, "assets")
	if err != nil {
		return err
	}
	index, err := fs.ReadFile(web.Files, "index.html")
	if err != nil {
		return err
	}
	h := &handler{settings: settings, index: index}
	// Assets are not content-hashed in their names, so they are revalidated
	// on every load; a strong ETag per file makes that a 304.
	etags := map[string]string{}
	err = fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		etags[p] = `"` + hex.EncodeToString(sum[:12]) + `"`
		return nil
	})
	if err != nil {
		return err
	}

	g := e.Group("/v1/engine", auth)
	g.GET("/settings", h.getSettings)
	g.PUT("/settings", h.putSettings)
	g.DELETE("/settings", h.deleteSettings)

	fileServer := http.StripPrefix(AssetsPrefix, http.FileServer(http.FS(assets)))
	e.GET(AssetsPrefix+"*", func(c echo.Context) error {
		name := strings.TrimPrefix(c.Request().URL.Path, AssetsPrefix)
		if name == "" || strings.HasSuffix(name, "/") {
			return domain.NotFound("asset")
		}
		etag, ok := etags[name]
		if !ok {
			return domain.NotFound("asset")
		}
		hdr := c.Response().Header()
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("ETag", etag)
		hdr.Set("X-Content-Type-Options", "nosniff")
		fileServer.ServeHTTP(c.Response(), c.Request())
		return nil
	})
	e.GET("/", h.shell)
	e.GET("/ui", h.shell)
	e.GET("/ui/*", h.shell)
	return nil
}

type handler struct {
	settings *ops.EngineSettings
	index    []byte
}

var prefixRE = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)*/?$`)

// shell serves index.html for UI pages; the app routes on the client.
// Behind a reverse proxy that strips a path prefix, X-Forwarded-Prefix sets
// <base href> so assets and links
// resolve under the prefix.
func (h *handler) shell(c echo.Context) error {
	base := "/"
	if fp := c.Request().Header.Get("X-Forwarded-Prefix"); fp != "" && prefixRE.MatchString(fp) && !hasDotSegment(fp) {
		base = strings.TrimSuffix(fp, "/") + "/"
	}
	body := bytes.Replace(h.index, []byte(`<base href="/">`), []byte(`<base href="`+html.EscapeString(base)+`">`), 1)
	hdr := c.Response().Header()
	// no-store: after sign-out, Back must not show a page from the cache
	// (nor the back/forward cache) with the previous session's data.
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("X-Frame-Options", "DENY")
	// Inline style attributes are used for small layout tweaks; scripts are
	// only the embedded modules.
	hdr.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'")
	return c.HTMLBlob(http.StatusOK, body)
}

func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

type putSettingsRequest struct {
	PublicURL string `json:"public_url"`
}

func (h *handler) getSettings(c echo.Context) error {
	v, err := h.settings.Get(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, v)
}

func (h *handler) putSettings(c echo.Context) error {
	var req putSettingsRequest
	if err := httpapi.DecodeJSON(c, &req); err != nil {
		return err
	}
	v, err := h.settings.Set(c.Request().Context(), req.PublicURL)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, v)
}

func (h *handler) deleteSettings(c echo.Context) error {
	v, err := h.settings.Reset(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, v)
}
