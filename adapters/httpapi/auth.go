package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/domain"
)

// Cookie names. Over https the __Host- prefix makes the browser enforce
// Secure, Path=/ and no Domain, so a sibling subdomain cannot plant one.
const (
	SecureSessionCookie = "__Host-threadengine_session"
	DevSessionCookie    = "threadengine_session"
)

// APIKeyHeader is the alternative to "Authorization: Bearer <key>".
const APIKeyHeader = "X-API-Key"

// Auth authenticates HTTP requests. Credentials, in order of precedence:
//
//  1. Authorization: Bearer <td_… API key | tes_… session token>
//  2. X-API-Key: <td_… API key>
//  3. the session cookie
//
// A header credential wins over the cookie: when both are sent the cookie is
// ignored (a header cannot be forged cross-site, so such a request needs no
// Origin check). Sending both Authorization and X-API-Key is refused as
// ambiguous. Cookie-authenticated requests with an unsafe method (anything
// but GET, HEAD, OPTIONS) must carry an Origin equal to the browser origin,
// else 403 origin_denied: together with SameSite=Strict this is the CSRF
// defence.
type Auth struct {
	Authn    identity.Authenticator
	Identity *identity.Module
	// App is the identity use cases as handlers (commands and queries).
	App identity.Application
	// Origin is the one browser origin allowed to send cookie-authenticated
	// unsafe requests: registry.browser_origin, else the origin of
	// server.public_url. When both are unset it is the request's own
	// scheme://Host (development on loopback).
	Origin string
	// Secure selects the __Host- cookie with the Secure flag (public URL is https).
	Secure bool
	// PublicURL is server.public_url; login_url and redirects derive from it.
	PublicURL string
	// ProviderLogoutURL, when set (by the OIDC adapter), returns the URL that
	// ends the provider's session for a signed-out session, or "".
	ProviderLogoutURL func(sess domain.Session) string

	// exchangeFailures throttles failed exchanges at /auth/*/exchange.
	exchangeFailures *failureLimiter
}

// SetExchangeThrottle sets how many failed exchanges per (client address,
// key prefix) are answered 401 in each window before further failures are
// answered 429 (limits.signin.*); refusals are counted on c.
func (a *Auth) SetExchangeThrottle(failures int, window time.Duration, c *limits.Counter) {
	a.exchangeFailures = newFailureLimiter(failures, window)
	a.exchangeFailures.refusals = c
}

// NewAuth builds the HTTP authentication for the given origins.
func NewAuth(id *identity.Module, publicURL, browserOrigin string) *Auth {
	origin := browserOrigin
	if origin == "" {
		origin = originOf(publicURL)
	}
	uc := id.Application()
	return &Auth{
		Authn: uc.Queries.Authenticator(), Identity: id, App: uc, Origin: origin, PublicURL: strings.TrimSuffix(publicURL, "/"),
		Secure:           strings.HasPrefix(publicURL, "https://"),
		exchangeFailures: newFailureLimiter(20, time.Minute),
	}
}

func originOf(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return ""
	}
	rest := raw[i+3:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	return raw[:i+3] + rest
}

// CookieName is the session cookie's name for this deployment.
func (a *Auth) CookieName() string {
	if a.Secure {
		return SecureSessionCookie
	}
	return DevSessionCookie
}

// SetSessionCookie stores a session token in the browser.
func (a *Auth) SetSessionCookie(c echo.Context, token string, expiresAt time.Time) {
	c.SetCookie(&http.Cookie{
		Name: a.CookieName(), Value: token, Path: "/", Expires: expiresAt.UTC(),
		MaxAge: int(time.Until(expiresAt).Seconds()), HttpOnly: true, Secure: a.Secure, SameSite: http.SameSiteStrictMode,
	})
}

// ClearSessionCookie removes the session cookie from the browser.
func (a *Auth) ClearSessionCookie(c echo.Context) {
	c.SetCookie(&http.Cookie{
		Name: a.CookieName(), Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: a.Secure, SameSite: http.SameSiteStrictMode,
	})
}

// credential is what a request presented.
type credential struct {
	value      string
	fromCookie bool
}

var errAmbiguous = domain.NewBase(domain.KindUnauthenticated, domain.CodeUnauthenticated,
	"send one credential: Authorization or X-API-Key, not both")

// credentialOf extracts the request's credential; ok is false when none was sent.
func (a *Auth) credentialOf(r *http.Request) (credential, bool, error) {
	authz := r.Header.Get(echo.HeaderAuthorization)
	key := r.Header.Get(APIKeyHeader)
	if authz != "" && key != "" {
		return credential{}, false, errAmbiguous
	}
	if authz != "" {
		scheme, tok, ok := strings.Cut(authz, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return credential{}, false, domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated, "Authorization must be \"Bearer <key or session token>\"")
		}
		return credential{value: strings.TrimSpace(tok)}, true, nil
	}
	if key != "" {
		return credential{value: strings.TrimSpace(key)}, true, nil
	}
	if ck, err := r.Cookie(a.CookieName()); err == nil && ck.Value != "" {
		return credential{value: ck.Value, fromCookie: true}, true, nil
	}
	return credential{}, false, nil
}

func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

var errOriginDenied = domain.NewBase(domain.KindForbidden, domain.CodeOriginDenied,
	"cookie-authenticated requests that change state must come from the engine's browser origin")

// OriginFor is the browser origin that r must come from.
func (a *Auth) OriginFor(r *http.Request) string {
	if a.Origin != "" {
		return a.Origin
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// CheckOrigin refuses an unsafe request whose Origin is not the browser origin.
func (a *Auth) CheckOrigin(r *http.Request) error {
	if isSafeMethod(r.Method) {
		return nil
	}
	if o := r.Header.Get(echo.HeaderOrigin); o == "" || o != a.OriginFor(r) {
		return errOriginDenied
	}
	return nil
}

// authenticate resolves the request's principal; ok is false when no
// credential was sent.
func (a *Auth) authenticate(c echo.Context) (domain.Principal, bool, error) {
	r := c.Request()
	cred, ok, err := a.credentialOf(r)
	if err != nil || !ok {
		return domain.Principal{}, false, err
	}
	if cred.fromCookie {
		if err := a.CheckOrigin(r); err != nil {
			return domain.Principal{}, true, err
		}
	}
	var p domain.Principal
	switch {
	case strings.HasPrefix(cred.value, domain.SessionTokenPrefix):
		p, err = a.Authn.AuthenticateSession(r.Context(), cred.value)
	case cred.fromCookie:
		err = domain.ErrUnauthenticated
	default:
		p, err = a.Authn.AuthenticateAPIKey(r.Context(), cred.value)
	}
	if err != nil {
		if cred.fromCookie && domain.KindOf(err) == domain.KindUnauthenticated {
			a.ClearSessionCookie(c)
		}
		return domain.Principal{}, true, err
	}
	return p, true, nil
}

// Middleware requires a valid credential and stores the principal in the
// request context (authz.PrincipalFrom).
func (a *Auth) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok, err := a.authenticate(c)
			if err != nil {
				return err
			}
			if !ok {
				return domain.ErrUnauthenticated
			}
			setPrincipal(c, p)
			return next(c)
		}
	}
}

// Optional authenticates when a credential is sent and lets anonymous
// requests through; a bad credential is still refused.
func (a *Auth) Optional() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok, err := a.authenticate(c)
			if err != nil {
				return err
			}
			if ok {
				setPrincipal(c, p)
			}
			return next(c)
		}
	}
}

// Authenticate resolves a request's principal for transports that are not
// echo handlers (e.g. a WebSocket upgrade): same rules as Middleware.
func (a *Auth) Authenticate(c echo.Context) (domain.Principal, error) {
	p, ok, err := a.authenticate(c)
	if err != nil {
		return domain.Principal{}, err
	}
	if !ok {
		return domain.Principal{}, domain.ErrUnauthenticated
	}
	return p, nil
}

func setPrincipal(c echo.Context, p domain.Principal) {
	r := c.Request()
	c.SetRequest(r.WithContext(authz.WithPrincipal(r.Context(), p)))
}

// ctx is the request context (carrying the principal).
func ctx(c echo.Context) context.Context { return c.Request().Context() }
