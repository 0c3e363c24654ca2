package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app/identity"
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
	// ErasedAt: the user's personal data was erased (DELETE /v1/users/:id).
	ErasedAt *time.Time `json:"erased_at"`
}

// UserToJSON converts a domain user.
func UserToJSON(u domain.User) UserJSON {
	return UserJSON{
		ID: u.ID, Email: u.Email, FullName: u.FullName, Role: string(u.Role), Status: string(u.Status),
		CreatedAt: utc(u.CreatedAt), UpdatedAt: utc(u.UpdatedAt), ActivatedAt: utcPtr(u.ActivatedAt), LastLoginAt: utcPtr(u.LastLoginAt),
		ErasedAt: utcPtr(u.ErasedAt),
	}
}

// APIKeyJSON is an API key as the API shows it (never the secret).
type APIKeyJSON struct {
	ID               string  `json:"id"`
	Name             string  `json:"name"`
	KeyPrefix        string  `json:"key_prefix"`
	Kind             string  `json:"kind"`
	UserID           *string `json:"user_id"`
	ServiceAccountID *string `json:"service_account_id"`
	// ServiceAccount is the key's account (service-account keys, listed by
	// a caller who manages all keys).
	ServiceAccount *ServiceAccountJSON `json:"service_account,omitempty"`
	CreatedAt      time.Time           `json:"created_at"`
	LastUsedAt     *time.Time          `json:"last_used_at"`
	ExpiresAt      *time.Time          `json:"expires_at"`
	RevokedAt      *time.Time          `json:"revoked_at"`
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

// ServiceAccountJSON is a service account as the API shows it. Scope is
// company (reads every thread) or party (reads only its own threads).
type ServiceAccountJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Scope     string    `json:"scope"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
}

// ServiceAccountToJSON converts a domain service account.
func ServiceAccountToJSON(sa domain.ServiceAccount) ServiceAccountJSON {
	scope := sa.Scope
	if scope == "" {
		scope = domain.ScopeCompany
	}
	return ServiceAccountJSON{ID: sa.ID, Name: sa.Name, Role: string(sa.Role), Scope: string(scope), Active: sa.Active,
		CreatedAt: utc(sa.CreatedAt)}
}

// withServiceAccounts adds each service-account key's account, when the
// caller may list them (others see their personal keys only).
func (a *Auth) withServiceAccounts(c echo.Context, keys []APIKeyJSON) error {
	if !identity.CanManageAllKeys(ctx(c)) {
		return nil
	}
	sas, err := a.App.Queries.ListServiceAccounts.Handle(ctx(c))
	if err != nil {
		return err
	}
	byID := make(map[string]domain.ServiceAccount, len(sas))
	for _, sa := range sas {
		byID[sa.ID] = sa
	}
	for i := range keys {
		if id := keys[i].ServiceAccountID; id != nil {
			if sa, ok := byID[*id]; ok {
				j := ServiceAccountToJSON(sa)
				keys[i].ServiceAccount = &j
			}
		}
	}
	return nil
}

// PrincipalJSON describes the caller (GET /auth/session, exchange).
type PrincipalJSON struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Email    string `json:"email,omitempty"`
	FullName string `json:"full_name"`
	Role     string `json:"role"`
	// Scope is which threads the caller reads: company, or party (a
	// party-scoped service account sees only its own threads).
	Scope string `json:"scope"`
	Via   string `json:"via"`
}

// PrincipalToJSON converts a principal.
func PrincipalToJSON(p domain.Principal) PrincipalJSON {
	scope := domain.ScopeCompany
	if p.PartyScoped() {
		scope = domain.ScopeParty
	}
	return PrincipalJSON{ID: p.ID, Kind: string(p.Kind), Email: p.Email, FullName: p.Name, Role: string(p.Role),
		Scope: string(scope), Via: string(p.Via)}
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
	e.DELETE("/v1/users/:id", a.eraseUser, mw)
	e.GET("/v1/api-keys", a.listAPIKeys, mw)
	e.POST("/v1/api-keys", a.createAPIKey, mw)
	e.DELETE("/v1/api-keys/:id", a.revokeAPIKey, mw)
	e.GET("/v1/service-accounts", a.listServiceAccounts, mw)

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
	list, err := a.App.Queries.ListUsers.Handle(ctx(c))
	if err != nil {
		return err
	}
	out := make([]UserJSON, 0, len(list.Users))
	for _, u := range list.Users {
		out = append(out, UserToJSON(u))
	}
	return c.JSON(http.StatusOK, map[string]any{"users": out, "can_manage": list.CanManage, "login_url": a.LoginURLFor(c.Request())})
}

type inviteRequest struct {
	Email    *string `json:"email"`
	FullName string  `json:"full_name"`
	Role     *string `json:"role"`
}

func (a *Auth) inviteUser(c echo.Context) error {
	var req inviteRequest
	if err := DecodeJSON(c, &req); err != nil {
		return err
	}
	u, created, err := a.App.Commands.InviteUser.Handle(ctx(c), identity.InviteRequest{Email: req.Email, FullName: req.FullName, Role: req.Role})
	if err != nil {
		return err
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
	var req patchUserRequest
	if err := DecodeJSON(c, &req); err != nil {
		return err
	}
	u, err := a.App.Commands.UpdateUser.Handle(ctx(c), c.Param("id"), identity.UserPatch{FullName: req.FullName, Role: req.Role, Status: req.Status})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"user": UserToJSON(u)})
}

// eraseUser erases an archived user's personal data; the user stays,
// pseudonymous, under its id.
func (a *Auth) eraseUser(c echo.Context) error {
	u, err := a.App.Commands.EraseUser.Handle(ctx(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"user": UserToJSON(u)})
}

func (a *Auth) listAPIKeys(c echo.Context) error {
	ks, err := a.App.Queries.ListAPIKeys.Handle(ctx(c))
	if err != nil {
		return err
	}
	out := make([]APIKeyJSON, 0, len(ks))
	for _, k := range ks {
		out = append(out, APIKeyToJSON(k))
	}
	if err := a.withServiceAccounts(c, out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"api_keys": out})
}

func (a *Auth) listServiceAccounts(c echo.Context) error {
	sas, err := a.App.Queries.ListServiceAccounts.Handle(ctx(c))
	if err != nil {
		return err
	}
	out := make([]ServiceAccountJSON, 0, len(sas))
	for _, sa := range sas {
		out = append(out, ServiceAccountToJSON(sa))
	}
	return c.JSON(http.StatusOK, map[string]any{"service_accounts": out})
}

type createServiceAccountRequest struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	Scope string `json:"scope"`
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
		return err
	}
	in := identity.CreateAPIKeyInput{Name: req.Name, ExpiresInDays: req.ExpiresInDays, ServiceAccountID: req.ServiceAccountID}
	if req.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *req.ExpiresAt)
		if err != nil {
			return domain.Invalid("expires_at", "expires_at must be an RFC 3339 time, e.g. 2030-01-02T15:04:05Z")
		}
		in.ExpiresAt = &t
	}
	if req.CreateServiceAccount != nil {
		in.CreateServiceAccount = &identity.NewServiceAccountInput{Name: req.CreateServiceAccount.Name, Role: req.CreateServiceAccount.Role,
			Scope: req.CreateServiceAccount.Scope}
	}
	secret, k, err := a.App.Commands.CreateAPIKey.Handle(ctx(c), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	keys := []APIKeyJSON{APIKeyToJSON(k)}
	if err := a.withServiceAccounts(c, keys); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"key": secret, "api_key": keys[0]})
}

func (a *Auth) revokeAPIKey(c echo.Context) error {
	k, err := a.App.Commands.RevokeAPIKey.Handle(ctx(c), c.Param("id"))
	if err != nil {
		return err
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
		return errOriginDenied
	}
	var req exchangeRequest
	if err := DecodeJSON(c, &req); err != nil {
		return err
	}
	var (
		token string
		sess  domain.Session
		p     domain.Principal
		err   error
	)
	switch {
	case req.APIKey != "" && req.LicenseKey != "":
		return domain.Invalid("license_key", "send api_key or license_key, not both")
	case req.APIKey != "":
		token, sess, p, err = a.App.Commands.ExchangeAPIKey.Handle(ctx(c), req.APIKey)
	case req.LicenseKey != "":
		token, sess, p, err = a.App.Commands.ExchangeLicenseKey.Handle(ctx(c), req.LicenseKey)
	default:
		return domain.Invalid("api_key", "api_key or license_key is required")
	}
	if err != nil {
		if domain.KindOf(err) == domain.KindUnauthenticated {
			if wait := a.exchangeFailures.fail(bucket(c.RealIP(), req.APIKey), time.Now()); wait > 0 {
				return a.exchangeFailures.refuse(c, wait)
			}
		}
		return err
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
		return err
	}
	if ok && cred.fromCookie {
		if err := a.CheckOrigin(r); err != nil {
			return err
		}
	}
	logoutURL := ""
	if ok && strings.HasPrefix(cred.value, domain.SessionTokenPrefix) {
		sess, err := a.App.Commands.SignOut.Handle(ctx(c), cred.value)
		if err != nil && domain.KindOf(err) != domain.KindUnauthenticated {
			return err
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
