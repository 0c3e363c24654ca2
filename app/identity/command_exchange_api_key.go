package identity

// The ExchangeAPIKey command: exchanges an API key for a browser session (POST /auth/api-key/exchange).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// ExchangeAPIKeyHandler exchanges an API key for a browser session (POST /auth/api-key/exchange); one of the Commands.
type ExchangeAPIKeyHandler struct {
	authenticate AuthenticateAPIKeyHandler
	sessions     *sessionMinter
}

// NewExchangeAPIKeyHandler builds ExchangeAPIKey.
func NewExchangeAPIKeyHandler(authenticate AuthenticateAPIKeyHandler, sessions *sessionMinter) ExchangeAPIKeyHandler {
	return ExchangeAPIKeyHandler{authenticate: authenticate, sessions: sessions}
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
	p.Via, p.Session = domain.CredentialSession, sess.ID
	return token, sess, p, nil
}
