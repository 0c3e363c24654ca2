package registry

import (
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"

	"github.com/labstack/echo/v4"
)

//go:embed login.html
var loginFS embed.FS

var loginTmpl = template.Must(template.ParseFS(loginFS, "login.html"))

// loginMessages explains each /login?error=<code>. Unknown codes get a
// generic message, so a crafted link cannot put arbitrary text on the page.
var loginMessages = map[string]string{
	"not_invited":               "There is no invitation for your email address. Ask an administrator of this installation to invite you, then sign in again.",
	"email_not_verified":        "The identity registry has not verified your email address. Verify it there, then sign in again.",
	"identity_mismatch":         "Your account is linked to a different sign-in identity. Sign in with the one you used before.",
	"binding_inactive":          "This sign-in identity has been disabled for this installation. Ask an administrator.",
	"user_not_active":           "Your account is suspended or archived. Ask an administrator to reactivate it.",
	"license_suspended":         "Browser sign-in is blocked because the license is suspended. Your data is kept; contact the license owner.",
	"license_invalid":           "Browser sign-in is blocked because the identity registry does not accept this installation's license.",
	"license_unavailable":       "The identity registry cannot be reached to check the license. Try again later, or sign in with an API key.",
	"managed_identity_disabled": "Sign-in with email or SSO is not enabled for this account on the identity registry. Sign in with an API key instead.",
	"product_not_licensed":      "The license does not include this product, so browser sign-in is not available.",
	"registry_unavailable":      "The identity registry cannot be reached. Try again later, or sign in with an API key.",
	"registry_denied":           "The identity registry did not sign you in.",
	"login_expired":             "The sign-in attempt expired or was started in another browser. Start again.",
	"sign_in_failed":            "The answer from the identity registry could not be verified. Start again.",
	"signed_out":                "You are signed out.",
}

type loginView struct {
	Error string
	Nonce string
	// Next is where to go after signing in: a same-site path (see
	// safeNext) or "" for the UI's home.
	Next string
	// NoRegistry: browser sign-in through the registry is not configured;
	// the page says what to set instead of offering a button that fails.
	NoRegistry bool
}

// LoginPage serves /login: continue with email or SSO (the registry), or
// exchange an API key for a browser session. Its URLs are relative to the
// page, so it works unchanged behind a proxy that serves the engine under a
// path prefix; ?next= (set by the UI) is honoured only for same-site paths.
func LoginPage(c echo.Context) error { return loginPage(c, false) }

func loginPage(c echo.Context, noRegistry bool) error {
	v := loginView{Next: safeNext(c.QueryParam("next")), NoRegistry: noRegistry}
	if code := c.QueryParam("error"); code != "" {
		msg, ok := loginMessages[code]
		if !ok {
			msg = "Sign-in failed. Start again."
		}
		v.Error = msg
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	v.Nonce = base64.RawURLEncoding.EncodeToString(b) // no "+": html/template would write it as &#43; in the attribute
	h := c.Response().Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	// The shared UI stylesheet and icon are same-origin files; the only
	// inline script and style carry this response's nonce.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+v.Nonce+"'; style-src 'self' 'nonce-"+v.Nonce+
		"'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Response().WriteHeader(http.StatusOK)
	return loginTmpl.Execute(c.Response(), v)
}
