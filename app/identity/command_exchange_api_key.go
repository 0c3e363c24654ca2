package identity

// The ExchangeAPIKey command: exchanges an API key for a browser session (POST /auth/api-key/exchange).

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ExchangeAPIKeyHandler exchanges an API key for a browser session (POST /auth/api-key/exchange); one of the Commands.
type ExchangeAPIKeyHandler struct {
	authenticate AuthenticateAPIKeyHandler
	sessions     *sessionMinter
	users        ports.Users // records a user's sign-in (nil: not recorded)
	clock        ports.Clock
}

// NewExchangeAPIKeyHandler builds ExchangeAPIKey.
func NewExchangeAPIKeyHandler(authenticate AuthenticateAPIKeyHandler, sessions *sessionMinter, users ports.Users, clock ports.Clock) ExchangeAPIKeyHandler {
	return ExchangeAPIKeyHandler{authenticate: authenticate, sessions: sessions, users: users, clock: clock}
}

// Handle turns a valid API key into a browser session. The
// session keeps the key's principal (a service key stays a service account)
// and dies with the key.
func (h ExchangeAPIKeyHandler) Handle(ctx context.Context, apiKey string) (string, domain.Session, domain.Principal, error) {
	p, err := h.authenticate.Handle(ctx, apiKey)
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	token, sess, err := h.sessions.createSession(ctx, p.Kind, p.ID, domain.SessionFromAPIKey, p.KeyID, "", "")
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	// A personal key signs its user in: "Last sign-in" says when.
	if p.Kind == domain.PrincipalUser && h.users != nil && h.clock != nil {
		now := h.clock.Now().UTC()
		if _, err := h.users.UpdateUser(ctx, p.ID, func(u *domain.User, _ []string) error { u.RecordSignIn(now); return nil }); err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
	}
	p.Via, p.Session = domain.CredentialSession, sess.ID
	return token, sess, p, nil
}
