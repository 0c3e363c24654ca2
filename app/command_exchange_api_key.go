package app

// The ExchangeAPIKey command: exchanges an API key for a browser session (POST /auth/api-key/exchange).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// ExchangeAPIKeyHandler exchanges an API key for a browser session (POST /auth/api-key/exchange); one of Identity's Commands.
type ExchangeAPIKeyHandler struct{ s *Identity }

// Handle turns a valid API key into a browser session. The
// session keeps the key's principal (a service key stays a service account)
// and dies with the key.
func (h ExchangeAPIKeyHandler) Handle(ctx context.Context, apiKey string) (string, domain.Session, domain.Principal, error) {
	s := h.s
	p, err := AuthenticateAPIKeyHandler{s}.Handle(ctx, apiKey)
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	token, sess, err := s.createSession(ctx, p.Kind, p.ID, domain.SessionFromAPIKey, p.KeyID, "", "")
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	p.Via, p.Session = domain.CredentialSession, sess.ID
	return token, sess, p, nil
}
