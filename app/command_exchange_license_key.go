package app

// The ExchangeLicenseKey command: exchanges the license key for the owner's browser session (POST /auth/license/exchange).

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"

	"github.com/threadengine/engine/domain"
)

// ExchangeLicenseKeyHandler exchanges the license key for the owner's browser session (POST /auth/license/exchange); one of Identity's Commands.
type ExchangeLicenseKeyHandler struct{ s *Identity }

// Handle lets the operator sign in as the owner with the
// configured registry license key. The owner is the admin created by
// `threadengine bootstrap-owner`; it must still be active.
func (h ExchangeLicenseKeyHandler) Handle(ctx context.Context, licenseKey string) (string, domain.Session, domain.Principal, error) {
	s := h.s
	if s.d.LicenseKey == "" {
		return "", domain.Session{}, domain.Principal{}, domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated,
			"license key sign-in is not configured (registry.license_key is empty)")
	}
	got, want := sha256.Sum256([]byte(licenseKey)), sha256.Sum256([]byte(s.d.LicenseKey))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return "", domain.Session{}, domain.Principal{}, errLicenseDenied
	}
	ownerID := ""
	if s.d.Settings != nil {
		id, ok, err := s.d.Settings.GetSetting(ctx, OwnerSettingKey)
		if err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
		if ok {
			ownerID = id
		}
	}
	if ownerID == "" && s.d.LicenseOwner != nil {
		id, err := s.d.LicenseOwner(ctx)
		if err != nil {
			return "", domain.Session{}, domain.Principal{}, err
		}
		ownerID = id
	}
	if ownerID == "" {
		return "", domain.Session{}, domain.Principal{}, domain.E(domain.KindConflict, domain.CodeNotFound,
			"no owner exists yet: configure registry.url so the registry names the license owner, or run `threadengine bootstrap-owner --email you@example.com`")
	}
	u, err := s.d.Users.GetUser(ctx, ownerID)
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	if err := domain.CheckPrincipalActive(domain.PrincipalUser, domain.SessionSubject{User: &u}); err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	token, sess, err := s.createSession(ctx, domain.PrincipalUser, u.ID, domain.SessionFromLicense, "", "", "")
	if err != nil {
		return "", domain.Session{}, domain.Principal{}, err
	}
	p := domain.PrincipalOf(domain.SessionSubject{User: &u})
	p.Via, p.Session = domain.CredentialSession, sess.ID
	s.audit(ctx, p, "session.license_exchange", u.ID, nil)
	return token, sess, p, nil
}
