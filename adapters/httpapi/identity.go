package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
)

// UserJSON is a user as the API shows it.
type UserJSON struct {
	ID          string     `json:"id"`
	Email       string     `json:"email"`
	FullName    string     `json:"full_name"`
	Role        string     `json:"role"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	ActivatedAt *time.Time `json:"activated_at"`
	LastLoginAt *time.Time `json:"last_login_at"`
}

// UserToJSON converts a domain user.
func UserToJSON(u domain.User) UserJSON {
	return UserJSON{
		ID: u.ID, Email: u.Email, FullName: u.FullName, Role: string(u.Role), Status: string(u.Status),
		CreatedAt: utc(u.CreatedAt), UpdatedAt: utc(u.UpdatedAt), ActivatedAt: utcPtr(u.ActivatedAt), LastLoginAt: utcPtr(u.LastLoginAt),
	}
}

// APIKeyJSON is an API key as the API shows it (never the secret).
type APIKeyJSON struct {
	ID               string     `json:"id"`
	Name             string     `json:"name"`
	KeyPrefix        string     `json:"key_prefix"`
	Kind             string     `json:"kind"`
	UserID           *string    `json:"user_id"`
	ServiceAccountID *string    `json:"service_account_id"`
	CreatedAt        time.Time  `json:"created_at"`
	LastUsedAt       *time.Time `json:"last_used_at"`
	ExpiresAt        *time.Time `json:"expires_at"`
	RevokedAt        *time.Time `json:"revoked_at"`
}

// APIKeyToJSON converts a domain key.
func APIKeyToJSON(k domain.APIKey) APIKeyJSON {
	j := APIKeyJSON{
		ID: k.ID, Name: k.Name, KeyPrefix: k.Prefix, Kind: "service_account", CreatedAt: utc(k.CreatedAt),
		LastUsedAt: utcPtr(k.LastUsedAt), ExpiresAt: utcPtr(k.ExpiresAt), RevokedAt: utcPtr(k.RevokedAt),
	}
	if k.Personal() {
		j.Kind = "personal"
		j.UserID = strPtr(k.UserID)
	} else {
		j.ServiceAccountID = strPtr(k.ServiceAccountID)
	}
	return j
}

// PrincipalJSON describes the caller (GET /auth/session, exchange).
type PrincipalJSON struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Email    string `json:"email,omitempty"`
	FullName string `json:"full_name"`
	Role     string `json:"role"`
	Via      string `json:"via"`
}

// PrincipalToJSON converts a principal.
func PrincipalToJSON(p domain.Principal) PrincipalJSON {
	return PrincipalJSON{ID: p.ID, Kind: string(p.Kind), Email: p.Email, FullName: p.Name, Role: string(p.Role), Via: string(p.Via)}
}

// utc is the JSON form of a stored time: UTC, microseconds (what both
// databases keep), so a value reads the same when created and when listed.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

func strPtr(s string) *string { return &s }

// MountIdentity registers /v1/users, /v1/api-keys and /auth/* on e.
func (a *Auth) MountIdentity(e *echo.Echo) {
	// Per-route middleware rather than a group: an echo group with
	// middleware answers 404 instead of 405 for a known path and wrong method.
	mw := a.Middleware()
	e.GET("/v1/users", a.listUsers, mw)
	e.POST("/v1/users", a.inviteUser, mw)
	e.PATCH("/v1/users/:id", a.updateUser, mw)
	e.GET("/v1/api-keys", a.listAPIKeys, mw)
	e.POST("/v1/api-keys", a.createAPIKey, mw)
	e.DELETE("/v1/api-keys/:id", a.revokeAPIKey, mw)

	e.POST("/auth/api-key/exchange", a.exchange)
	e.POST("/auth/license/exchange", a.exchange)
	e.GET("/auth/session", a.session)
	e.POST("/auth/logout", a.logout)
}

// LoginURL is where people sign in: the UI's /login on the configured
// browser origin (relative when no origin is configured).
func (a *Auth) LoginURL() string {
	return a.Origin + "/login"
}

// LoginURLFor is LoginURL, falling back to the request's own origin.
func (a *Auth) LoginURLFor(r *http.Request) string {
	return a.OriginFor(r) + "/login"
}

func (a *Auth) listUsers(c echo.Context) error {
	us, err := a.Identity.ListUsers(ctx(c))
	if err != nil {
		return WriteProblem(c, err)
	}
	out := make([]UserJSON, 0, len(us))
	for _, u := range us {
		out = append(out, UserToJSON(u))
	}
	p, _ := app.PrincipalFrom(ctx(c))
	return c.JSON(http.StatusOK, map[string]any{"users": out, "can_manage": p.Can(domain.PermUsersManage), "login_url": a.LoginURLFor(c.Request())})
}

type inviteRequest struct {
	Email    *string `json:"email"`
	FullName string  `json:"full_name"`
	Role     *string `json:"role"`
}

func (a *Auth) inviteUser(c echo.Context) error {
	// Permission first: a viewer learns nothing from validation errors.
	if _, err := app.Require(ctx(c), domain.PermUsersManage); err != nil {
		return WriteProblem(c, err)
	}
	var req inviteRequest
	if err := DecodeJSON(c, &req); err != nil {
		return WriteProblem(c, err)
	}
	if req.Email == nil {
		return WriteProblem(c, domain.Invalid("email", "email is required"))
	}
	if req.Role == nil {
		return WriteProblem(c, domain.Invalid("role", "role is required"))
	}
	role, err := domain.ParseRole(*req.Role)
	if err != nil {
		return WriteProblem(c, err)
	}
	u, created, err := a.Identity.InviteUser(ctx(c), *req.Email, req.FullName, role)
	if err != nil {
		return WriteProblem(c, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, map[string]any{"user": UserToJSON(u), "created": created, "login_url": a.LoginURLFor(c.Request())})
}

type patchUserRequest struct {
	FullName *string `json:"full_name"`
	Role     *string `json:"role"`
	Status   *string `json:"status"`
}

func (a *Auth) updateUser(c echo.Context) error {
	if _, err := app.Require(ctx(c), domain.PermUsersManage); err != nil {
		return WriteProblem(c, err)
	}
	var req patchUserRequest
	if err := DecodeJSON(c, &req); err != nil {
		return WriteProblem(c, err)
	}
	if req.FullName == nil && req.Role == nil && req.Status == nil {
		return WriteProblem(c, domain.Invalid("", "give at least one of full_name, role, status"))
	}
	u, err := a.Identity.UpdateUser(ctx(c), c.Param("id"), app.UserPatch{FullName: req.FullName, Role: req.Role, Status: req.Status})
	if err != nil {
		return WriteProblem(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"user": UserToJSON(u)})
}

func (a *Auth) listAPIKeys(c echo.Context) error {
	ks, err := a.Identity.ListAPIKeys(ctx(c))
	if err != nil {
		return WriteProblem(c, err)
	}
	out := make([]APIKeyJSON, 0, len(ks))
	for _, k := range ks {
		out = append(out, APIKeyToJSON(k))
	}
	return c.JSON(http.StatusOK, map[string]any{"api_keys": out})
}

type createServiceAccountRequest struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

type createKeyRequest struct {
	Name                 string                       `json:"name"`
	ExpiresInDays        *int                         `json:"expires_in_days"`
	ExpiresAt            *string                      `json:"expires_at"`
	ServiceAccountID     string                       `json:"service_account_id"`
	CreateServiceAccount *createServiceAccountRequest `json:"create_service_account"`
}

func (a *Auth) createAPIKey(c echo.Context) error {
	var req createKeyRequest
	if err := DecodeJSON(c, &req); err != nil {
		return WriteProblem(c, err)
	}
	in := app.CreateAPIKeyInput{Name: req.Name, ExpiresInDays: req.ExpiresInDays, ServiceAccountID: req.ServiceAccountID}
	if req.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *req.ExpiresAt)
		if err != nil {
			return WriteProblem(c, domain.Invalid("expires_at", "expires_at must be an RFC 3339 time, e.g. 2030-01-02T15:04:05Z"))
		}
		in.ExpiresAt = &t
	}
	if req.CreateServiceAccount != nil {
		in.CreateServiceAccount = &app.NewServiceAccountInput{Name: req.CreateServiceAccount.Name, Role: req.CreateServiceAccount.Role}
	}
	secret, k, err := a.Identity.CreateAPIKey(ctx(c), in)
	if err != nil {
		return WriteProblem(c, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, map[string]any{"key": secret, "api_key": APIKeyToJSON(k)})
}

func (a *Auth) revokeAPIKey(c echo.Context) error {
	k, err := a.Identity.RevokeAPIKey(ctx(c), c.Param("id"))
	if err != nil {
		return WriteProblem(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"api_key": APIKeyToJSON(k)})
}

type exchangeRequest struct {
	APIKey     string `json:"api_key"`
	LicenseKey string `json:"license_key"`
}

// exchange turns an API key (or the license key) into a browser session.
// An Origin header, when present, must be the browser origin: that stops a
// foreign page from signing the browser in to an attacker's account.
func (a *Auth) exchange(c echo.Context) error {
	if o := c.Request().Header.Get(echo.HeaderOrigin); o != "" && o != a.OriginFor(c.Request()) {
		return WriteProblem(c, errOriginDenied)
	}
	if limited, err := a.exchangeFailures.rejectIfLimited(c); limited {
		return err
	}
	var req exchangeRequest
	if err := DecodeJSON(c, &req); err != nil {
		return WriteProblem(c, err)
	}
	var (
		token string
		sess  domain.Session
		p     domain.Principal
		err   error
	)
	switch {
	case req.APIKey != "" && req.LicenseKey != "":
		return WriteProblem(c, domain.Invalid("license_key", "send api_key or license_key, not both"))
	case req.APIKey != "":
		token, sess, p, err = a.Identity.ExchangeAPIKeyForSession(ctx(c), req.APIKey)
	case req.LicenseKey != "":
		token, sess, p, err = a.Identity.ExchangeLicenseKey(ctx(c), req.LicenseKey)
	default:
		return WriteProblem(c, domain.Invalid("api_key", "api_key or license_key is required"))
	}
	if err != nil {
		if domain.KindOf(err) == domain.KindUnauthenticated {
			a.exchangeFailures.fail(peerIP(c.Request()), time.Now())
		}
		return WriteProblem(c, err)
	}
	a.SetSessionCookie(c, token, sess.ExpiresAt)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]any{
		"authenticated": true, "subject_kind": string(p.Kind), "user": PrincipalToJSON(p), "expires_at": utc(sess.ExpiresAt),
	})
}

// session reports who the caller is; it never fails for a bad credential,
// it says authenticated=false (and clears a dead cookie).
func (a *Auth) session(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	p, ok, err := a.authenticate(c)
	if err != nil || !ok {
		return c.JSON(http.StatusOK, map[string]any{"authenticated": false})
	}
	out := map[string]any{"authenticated": true, "subject_kind": string(p.Kind), "user": PrincipalToJSON(p)}
	return c.JSON(http.StatusOK, out)
}

// logout revokes the session (from the cookie or a Bearer session token)
// and clears the cookie. Browsers posting an HTML form get a 303 redirect to
// the provider's logout URL, or to /login.
func (a *Auth) logout(c echo.Context) error {
	r := c.Request()
	cred, ok, err := a.credentialOf(r)
	if err != nil {
		return WriteProblem(c, err)
	}
	if ok && cred.fromCookie {
		if err := a.CheckOrigin(r); err != nil {
			return WriteProblem(c, err)
		}
	}
	logoutURL := ""
	if ok && strings.HasPrefix(cred.value, domain.SessionTokenPrefix) {
		sess, err := a.Identity.SignOut(ctx(c), cred.value)
		if err != nil && domain.KindOf(err) != domain.KindUnauthenticated {
			return WriteProblem(c, err)
		}
		if err == nil && a.ProviderLogoutURL != nil {
			logoutURL = a.ProviderLogoutURL(sess)
		}
	}
	a.ClearSessionCookie(c)
	c.Response().Header().Set("Cache-Control", "no-store")
	if isFormPost(r) {
		target := logoutURL
		if target == "" {
			target = a.LoginURLFor(r)
		}
		return c.Redirect(http.StatusSeeOther, target)
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "logged_out", "logout_url": logoutURL})
}

func isFormPost(r *http.Request) bool {
	ct := r.Header.Get(echo.HeaderContentType)
	return strings.HasPrefix(ct, echo.MIMEApplicationForm) || strings.HasPrefix(ct, echo.MIMEMultipartForm)
}
