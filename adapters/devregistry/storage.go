package devregistry

import (
	"context"
	"crypto/rsa"
	"errors"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequest is one pending or completed authorization request.
type authRequest struct {
	id            string
	clientID      string
	redirectURI   string
	state         string
	nonce         string
	scopes        []string
	responseType  oidc.ResponseType
	responseMode  oidc.ResponseMode
	codeChallenge *oidc.CodeChallenge
	createdAt     time.Time

	subject  string // set once the user has logged in
	authTime time.Time
}

func (a *authRequest) GetID() string         { return a.id }
func (a *authRequest) GetACR() string        { return "" }
func (a *authRequest) GetAudience() []string { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time {
	return a.authTime
}
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.codeChallenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.subject != "" }
func (a *authRequest) GetAMR() []string {
	if a.Done() {
		return []string{"pwd"}
	}
	return nil
}

// accessToken is an opaque bearer token for the userinfo endpoint.
type accessToken struct {
	id        string
	clientID  string
	subject   string
	scopes    []string
	expiresAt time.Time
}

// client adapts a configured Client to op.Client (a confidential web app).
type client struct{ c Client }

var _ op.HasRedirectGlobs = client{}

func (c client) GetID() string                    { return c.c.ID }
func (c client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c client) PostLogoutRedirectURIs() []string { return c.c.PostLogoutRedirectURIs }
func (c client) RedirectURIGlobs() []string       { return c.c.RedirectURIGlobs }
func (c client) PostLogoutRedirectURIGlobs() []string {
	return c.c.PostLogoutRedirectURIGlobs
}
func (c client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c client) GrantTypes() []oidc.GrantType { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c client) LoginURL(id string) string    { return loginPath + "?authRequestID=" + id }
func (c client) AccessTokenType() op.AccessTokenType {
	return op.AccessTokenTypeBearer
}
func (c client) IDTokenLifetime() time.Duration { return time.Hour }
func (c client) DevMode() bool                  { return false }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) IsScopeAllowed(string) bool { return false }

// IDTokenUserinfoClaimsAssertion puts email and email_verified into the ID
// token as well, so a relying party can decide without a userinfo call.
func (c client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c client) ClockSkew() time.Duration             { return 0 }

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

var errNotFound = errors.New("not found")

// storage is the in-memory op.Storage of the registry.
type storage struct {
	mu       sync.Mutex
	key      signingKey
	clients  map[string]Client
	users    map[string]User // by subject
	requests map[string]*authRequest
	codes    map[string]string // code -> request id
	tokens   map[string]accessToken
	// terminated counts end-session calls per subject, so tests can see
	// that provider logout reached the registry.
	terminated map[string]int
}

var _ op.Storage = (*storage)(nil)
var _ op.CanSetUserinfoFromRequest = (*storage)(nil)

func newStorage(key *rsa.PrivateKey) *storage {
	return &storage{
		key:        signingKey{id: uuid.NewString(), key: key},
		clients:    map[string]Client{},
		users:      map[string]User{},
		requests:   map[string]*authRequest{},
		codes:      map[string]string{},
		tokens:     map[string]accessToken{},
		terminated: map[string]int{},
	}
}

// checkPassword returns the user whose email and password match.
func (s *storage) checkPassword(email, password string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if strings.EqualFold(u.Email, strings.TrimSpace(email)) {
			return u, constantTimeEqual(u.Password, password)
		}
	}
	return User{}, false
}

// completeRequest marks an auth request as authenticated by subject.
func (s *storage) completeRequest(id, subject string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return errNotFound
	}
	r.subject, r.authTime = subject, now
	return nil
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	if len(req.Prompt) == 1 && req.Prompt[0] == oidc.PromptNone {
		return nil, oidc.ErrLoginRequired()
	}
	r := &authRequest{
		id: uuid.NewString(), clientID: req.ClientID, redirectURI: req.RedirectURI, state: req.State,
		nonce: req.Nonce, scopes: req.Scopes, responseType: req.ResponseType, responseMode: req.ResponseMode,
		createdAt: time.Now(),
	}
	if req.CodeChallenge != "" {
		r.codeChallenge = &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[r.id] = r
	return r, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return nil, errNotFound
	}
	return r, nil
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("code invalid or already used")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest runs after the code is exchanged, which makes codes
// single-use.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	clientID := ""
	if r, ok := req.(*authRequest); ok {
		clientID = r.clientID
	}
	t := accessToken{id: uuid.NewString(), clientID: clientID, subject: req.GetSubject(), scopes: req.GetScopes(),
		expiresAt: time.Now().Add(10 * time.Minute)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[t.id] = t
	return t.id, t.expiresAt, nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("refresh tokens are not supported")
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(_ context.Context, userID, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range s.tokens {
		if t.subject == userID && t.clientID == clientID {
			delete(s.tokens, id)
		}
	}
	s.terminated[userID]++
	return nil
}

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tokenOrID]; ok && t.clientID == clientID {
		delete(s.tokens, tokenOrID)
	}
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return s.key, nil }
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}
func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{s.key}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, errNotFound
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || !constantTimeEqual(c.Secret, secret) {
		return errors.New("invalid client credentials")
	}
	return nil
}

// SetUserinfoFromScopes is deprecated by the library; SetUserinfoFromRequest
// does the work.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.setUserinfo(info, req.GetSubject(), scopes)
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expiresAt) {
		return errors.New("token is invalid or has expired")
	}
	return s.setUserinfo(info, t.subject, t.scopes)
}

func (s *storage) setUserinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	s.mu.Lock()
	u, ok := s.users[subject]
	s.mu.Unlock()
	if !ok {
		return errors.New("user not found")
	}
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeOpenID:
			info.Subject = u.Subject
		case oidc.ScopeEmail:
			info.Email = u.Email
			info.EmailVerified = oidc.Bool(u.EmailVerified)
		case oidc.ScopeProfile:
			info.Name = u.Name
		}
	}
	return nil
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expiresAt) {
		return errors.New("token is invalid or has expired")
	}
	resp.Active = true
	resp.Subject = t.subject
	resp.ClientID = t.clientID
	resp.Scope = t.scopes
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("JWT profile client authentication is not supported")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("JWT profile grant is not supported")
}

func (s *storage) Health(context.Context) error { return nil }
