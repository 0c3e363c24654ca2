package registry

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestSafeNext(t *testing.T) {
	long := "/" + strings.Repeat("a", maxNextLen)
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"/", "/"},
		{"/ui/threads", "/ui/threads"},
		{"/ui/threads?ref=ORD-1&status=active#top", "/ui/threads?ref=ORD-1&status=active#top"},
		{"/engine/ui/users", "/engine/ui/users"},
		{"/ui/a%2F%2Fb", "/ui/a%2F%2Fb"},
		// Other sites, in every spelling a browser accepts.
		{"//evil.example", ""},
		{"//evil.example/ui", ""},
		{`/\evil.example`, ""},
		{`/ui\..\..\evil`, ""},
		{"/\t/evil.example", ""},
		{"/\n/evil.example", ""},
		{"https://evil.example/", ""},
		{"http:/evil.example", ""},
		{"javascript:alert(1)", ""},
		{"evil.example", ""},
		{"ui/threads", ""},
		{" /ui", ""},
		{long, ""},
		// Back to sign-in would only loop.
		{"/login", ""},
		{"/login?error=x", ""},
		{"/auth/logout", ""},
	}
	for _, tc := range tests {
		if got := safeNext(tc.in); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func getLogin(t *testing.T, query string) (*http.Response, string) {
	t.Helper()
	e := echo.New()
	e.GET("/login", LoginPage)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login"+query, nil))
	return rec.Result(), rec.Body.String()
}

var nonceRE = regexp.MustCompile(`script-src 'nonce-([^']+)'`)

func TestLoginPage(t *testing.T) {
	resp, body := getLogin(t, "?next="+url.QueryEscape("/ui/threads?ref=a b&x=1"))
	csp := resp.Header.Get("Content-Security-Policy")
	m := nonceRE.FindStringSubmatch(csp)
	if m == nil {
		t.Fatalf("CSP without a script nonce: %q", csp)
	}
	for _, want := range []string{"default-src 'none'", "style-src 'self' 'nonce-" + m[1] + "'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP allows inline code: %q", csp)
	}
	// A fresh nonce per response.
	if resp2, _ := getLogin(t, ""); resp2.Header.Get("Content-Security-Policy") == csp {
		t.Error("two responses share a nonce")
	}
	for _, want := range []string{
		// Relative URLs, so the page works under a proxy path prefix.
		`<link rel="stylesheet" href="ui/assets/app.css">`,
		`<main class="auth-page">`,
		`<div class="auth-card">`,
		`<label for="api-key">`,
		`action="auth/api-key/exchange"`,
		`data-next="/ui/threads?ref=a b&amp;x=1"`,
		`href="auth/login?next=%2fui%2fthreads%3fref%3da%20b%26x%3d1"`,
		`<script nonce="` + m[1] + `">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, `"/auth/`) || strings.Contains(body, `"/ui/assets`) {
		t.Error("page uses a root-relative URL, which breaks under a path prefix")
	}
}

func TestLoginPageRefusesOffSiteNext(t *testing.T) {
	for _, next := range []string{"//evil.example/x", `/\evil.example`, "https://evil.example/", "/\t/evil.example"} {
		_, body := getLogin(t, "?next="+url.QueryEscape(next))
		if strings.Contains(body, "evil") {
			t.Errorf("next=%q reached the page", next)
		}
		if !strings.Contains(body, `data-next=""`) || !strings.Contains(body, `href="auth/login"`) {
			t.Errorf("next=%q: page does not fall back to the home page", next)
		}
	}
}
