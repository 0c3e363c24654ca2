package registry

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/app/signin"
	"github.com/threadengine/engine/domain"
)

// loginCookieTTL bounds how long a started sign-in may take on the registry.
const loginCookieTTL = 10 * time.Minute

// OIDCConfig configures the relying party.
type OIDCConfig struct {
	// Issuer is registry.url: the OpenID Provider's issuer.
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURI is server.public_url + "/auth/callback".
	RedirectURI string
	// PostLogoutURI is where the provider sends people after logout
	// (browser origin + "/login").
	PostLogoutURI string
	// AfterLoginURL is where a signed-in browser goes; default "/".
	AfterLoginURL string
	HTTP          *http.Client
	Log           *slog.Logger
}

// OIDC is the browser sign-in adapter: GET /auth/login starts an
// authorization code flow with PKCE and a nonce, GET /auth/callback finishes
// it and hands the verified identity to signin.SignIn.
type OIDC struct {
	cfg    OIDCConfig
	signIn *signin.SignIn
	auth   *httpapi.Auth

	mu sync.Mutex
	rp rp.RelyingParty
}

// NewOIDC builds the adapter. Provider discovery happens on first use, so
// the engine starts even while the registry is down.
func NewOIDC(cfg OIDCConfig, signIn *signin.SignIn, auth *httpapi.Auth) *OIDC {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.AfterLoginURL == "" {
		cfg.AfterLoginURL = "/"
	}
	return &OIDC{cfg: cfg, signIn: signIn, auth: auth}
}

// Mount registers the sign-in routes and the /login page.
func (o *OIDC) Mount(e *echo.Echo) {
	e.GET("/auth/login", o.start)
	e.GET("/auth/callback", o.callback)
	noRegistry := o.cfg.Issuer == "" || o.cfg.ClientID == ""
	e.GET("/login", func(c echo.Context) error { return loginPage(c, noRegistry) })
}

func (o *OIDC) relyingParty(ctx context.Context) (rp.RelyingParty, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rp != nil {
		return o.rp, nil
	}
	if o.cfg.Issuer == "" || o.cfg.ClientID == "" {
		return nil, domain.E(domain.KindUnavailable, domain.CodeRegistryUnavailable,
			"browser sign-in is not configured (set registry.url, registry.client_id and registry.client_secret)")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := rp.NewRelyingPartyOIDC(ctx, o.cfg.Issuer, o.cfg.ClientID, o.cfg.ClientSecret, o.cfg.RedirectURI,
		[]string{oidc.ScopeOpenID, oidc.ScopeEmail, oidc.ScopeProfile},
		rp.WithHTTPClient(o.cfg.HTTP),
		rp.WithVerifierOpts(rp.WithNonce(nonceFrom)))
	if err != nil {
		e := domain.E(domain.KindUnavailable, domain.CodeRegistryUnavailable, "the identity registry cannot be reached; try again later").WithCause(err)
		return nil, e
	}
	o.rp = r
	return r, nil
}

type nonceKey struct{}

// nonceFrom gives the ID token verifier the nonce of the sign-in being
// finished, so a token minted for another sign-in is refused.
func nonceFrom(ctx context.Context) string {
	n, _ := ctx.Value(nonceKey{}).(string)
	return n
}

// loginState travels in the short-lived HttpOnly login cookie between
// /auth/login and /auth/callback.
type loginState struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
	Expires  int64  `json:"e"`
	// Next is the checked ?next= of /auth/login: where the callback sends
	// the browser once signed in.
	Next string `json:"x,omitempty"`
}

func (o *OIDC) loginCookieName() string {
	if o.auth.Secure {
		return "__Host-threadengine_login"
	}
	return "threadengine_login"
}

// setLoginCookie uses SameSite=Lax, not Strict: the callback is a top-level
// navigation coming from the registry's site, and a Strict cookie would not
// be sent on it.
func (o *OIDC) setLoginCookie(c echo.Context, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: o.loginCookieName(), Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: o.auth.Secure, SameSite: http.SameSiteLaxMode,
	})
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (o *OIDC) start(c echo.Context) error {
	ctx := c.Request().Context()
	next := safeNext(c.QueryParam("next"))
	if err := o.signIn.Available(ctx); err != nil {
		return o.failNext(c, err, next)
	}
	r, err := o.relyingParty(ctx)
	if err != nil {
		return o.failNext(c, err, next)
	}
	st := loginState{Next: next}
	for _, p := range []*string{&st.State, &st.Verifier, &st.Nonce} {
		if *p, err = randomString(); err != nil {
			return o.failNext(c, domain.Internal(err, "could not start sign-in"), next)
		}
	}
	st.Expires = time.Now().Add(loginCookieTTL).Unix()
	raw, _ := json.Marshal(st)
	o.setLoginCookie(c, base64.RawURLEncoding.EncodeToString(raw), int(loginCookieTTL.Seconds()))
	target := rp.AuthURL(st.State, r,
		rp.WithCodeChallenge(oidc.NewSHACodeChallenge(st.Verifier)),
		rp.AuthURLOpt(rp.WithURLParam("nonce", st.Nonce)))
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusFound, target)
}

func (o *OIDC) readLoginCookie(c echo.Context) (loginState, bool) {
	ck, err := c.Cookie(o.loginCookieName())
	if err != nil {
		return loginState{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return loginState{}, false
	}
	var st loginState
	if json.Unmarshal(raw, &st) != nil || st.State == "" || st.Verifier == "" || time.Now().Unix() > st.Expires {
		return loginState{}, false
	}
	return st, true
}

func (o *OIDC) callback(c echo.Context) error {
	ctx := c.Request().Context()
	st, ok := o.readLoginCookie(c)
	// The login cookie is single-use whatever happens next.
	o.setLoginCookie(c, "", -1)
	q := c.QueryParams()
	if ok && q.Get("state") != st.State {
		ok = false
	}
	if !ok {
		return o.fail(c, domain.E(domain.KindUnauthenticated, domain.CodeLoginExpired,
			"this sign-in attempt has expired or was started in another browser; start again"))
	}
	if q.Get("error") != "" {
		e := domain.E(domain.KindForbidden, domain.CodeRegistryDenied, "the identity registry did not sign you in").WithCause(errors.New(q.Get("error") + ": " + q.Get("error_description")))
		return o.failNext(c, e, st.Next)
	}
	r, err := o.relyingParty(ctx)
	if err != nil {
		return o.failNext(c, err, st.Next)
	}
	tokens, err := rp.CodeExchange[*oidc.IDTokenClaims](context.WithValue(ctx, nonceKey{}, st.Nonce), q.Get("code"), r,
		rp.WithCodeVerifier(st.Verifier))
	if err != nil {
		e := domain.E(domain.KindUnauthenticated, domain.CodeSignInFailed, "the identity registry's answer could not be verified; start again").WithCause(err)
		return o.failNext(c, e, st.Next)
	}
	claims := tokens.IDTokenClaims
	id := signin.RegistryIdentity{
		Issuer: claims.Issuer, Subject: claims.Subject,
		Email: claims.Email, EmailVerified: bool(claims.EmailVerified), Name: claims.Name,
	}
	// userinfo is authoritative for email and email_verified when the
	// provider leaves them out of the ID token.
	if info, err := rp.Userinfo[*oidc.UserInfo](ctx, tokens.AccessToken, tokens.TokenType, claims.Subject, r); err == nil {
		id.Email, id.EmailVerified = info.Email, bool(info.EmailVerified)
		if info.Name != "" {
			id.Name = info.Name
		}
	} else if id.Email == "" {
		e := domain.E(domain.KindUnavailable, domain.CodeRegistryUnavailable, "the identity registry did not return your email; try again later").WithCause(err)
		return o.failNext(c, e, st.Next)
	}
	res, err := o.signIn.Complete(ctx, id, tokens.IDToken)
	if err != nil {
		return o.failNext(c, err, st.Next)
	}
	o.auth.SetSessionCookie(c, res.Token, res.Session.ExpiresAt)
	c.Response().Header().Set("Cache-Control", "no-store")
	// The cookie is ours and HttpOnly, but next is checked again so a
	// cookie set by anything else on the site cannot redirect off it.
	target := o.cfg.AfterLoginURL
	if next := safeNext(st.Next); next != "" {
		target = next
	}
	return c.Redirect(http.StatusFound, target)
}

// fail answers a refused or failed sign-in: JSON clients get a problem
// document, browsers go back to /login with the error code to display.
func (o *OIDC) fail(c echo.Context, err error) error {
	return o.failNext(c, err, "")
}

// failNext is fail that keeps next on the /login link, so signing in from
// there (say with an API key) still ends where the person was going.
func (o *OIDC) failNext(c echo.Context, err error, next string) error {
	de := domain.AsError(err)
	if de.Kind == domain.KindInternal || de.Kind == domain.KindUnavailable {
		o.cfg.Log.Warn("browser sign-in failed", "code", de.Code, "err", err)
	}
	if wantsJSON(c.Request()) {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	target := "/login?error=" + url.QueryEscape(string(de.Code))
	if next = safeNext(next); next != "" {
		target += "&next=" + url.QueryEscape(next)
	}
	return c.Redirect(http.StatusSeeOther, target)
}

func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "text/html")
}

// ProviderLogoutURL is httpapi.Auth's hook: for sessions opened through the
// registry it returns the provider's end-session URL with the ID token as a
// hint, so signing out of the engine also ends the registry session.
func (o *OIDC) ProviderLogoutURL(sess domain.Session) string {
	if sess.Source != domain.SessionFromOIDC || sess.IDTokenHint == "" {
		return ""
	}
	r, err := o.relyingParty(context.Background())
	if err != nil || r.GetEndSessionEndpoint() == "" {
		return ""
	}
	u, err := url.Parse(r.GetEndSessionEndpoint())
	if err != nil {
		return ""
	}
	v := u.Query()
	v.Set("id_token_hint", sess.IDTokenHint)
	v.Set("client_id", o.cfg.ClientID)
	if o.cfg.PostLogoutURI != "" {
		v.Set("post_logout_redirect_uri", o.cfg.PostLogoutURI)
	}
	u.RawQuery = v.Encode()
	return u.String()
}
