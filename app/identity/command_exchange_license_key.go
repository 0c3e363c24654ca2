package identity

// The ExchangeLicenseKey command: exchanges the license key for the owner's browser session (POST /auth/license/exchange).

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ExchangeLicenseKeyHandler exchanges the license key for the owner's browser session (POST /auth/license/exchange); one of the Commands.
type ExchangeLicenseKeyHandler struct {
	licenseKey   string
	settings     ports.Settings // nil: no owner recorded
	licenseOwner func(ctx context.Context) (string, error)
	users        ports.Users
	sessions     *sessionMinter
	audit        auditTrail
}

// NewExchangeLicenseKeyHandler builds ExchangeLicenseKey: licenseKey is
// registry.license_key ("" disables it); licenseOwner names the owner when
// settings records none ("" when it cannot).
func NewExchangeLicenseKeyHandler(licenseKey string, settings ports.Settings, licenseOwner func(ctx context.Context) (string, error),
	users ports.Users, sessions *sessionMinter, audit auditTrail) ExchangeLicenseKeyHandler {
	return ExchangeLicenseKeyHandler{licenseKey: licenseKey, settings: settings, licenseOwner: licenseOwner, users: users, sessions: sessions, audit: audit}
}

// Handle lets the operator sign in as the owner with the
// configured registry license key. The owner is the admin created by
// `threadengine bootstrap-owner`; it must still be active.
func (h ExchangeLicenseKeyHandler) Handle(ctx context.Context, licenseKey string) (string, domain.Session, domain.Principal, error) {
	if h.licenseKey == "" {
		return "", domain.Session{}, domain.Principal{}, domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated,
			"license key sign-in is not configured (registry.license_key is empty)")
	}
	got, want := sha256.Sum256([]byte(licenseKey)), sha256.Sum256([]byte(h.licenseKey))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return "", domain.Session{}, domain.Principal{}, errLicenseDenied
	}
	ownerID := ""
	if h.settings != nil {
		id, ok, err := h.settings.GetSetting(ctx, OwnerSettingKey)
		if err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
		if ok {
			ownerID = id
		}
	}
	if ownerID == "" && h.licenseOwner != nil {
		id, err := h.licenseOwner(ctx)
		if err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
		ownerID = id
	}
	if ownerID == "" {
		return "", domain.Session{}, domain.Principal{}, domain.E(domain.KindConflict, domain.CodeNotFound,
			"no owner exists yet: configure registry.url so the registry names the license owner, or run `threadengine bootstrap-owner --email you@example.com`")
	}
	u, err := h.users.GetUser(ctx, ownerID)
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	if err := domain.CheckPrincipalActive(domain.PrincipalUser, domain.SessionSubject{User: &u}); err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	token, sess, err := h.sessions.createSession(ctx, domain.PrincipalUser, u.ID, domain.SessionFromLicense, "", "", "")
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	p := domain.PrincipalOf(domain.SessionSubject{User: &u})
	p.Via, p.Session = domain.CredentialSession, sess.ID
	h.audit.record(ctx, p, "session.license_exchange", u.ID, nil)
	return token, sess, p, nil
}
