package signin

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// LicenseStatus is the result of the latest license check.
type LicenseStatus struct {
	Info      ports.LicenseInfo
	Err       error
	CheckedAt time.Time
}

// LicenseMonitor keeps the latest license check. It is refreshed at start,
// every interval, and on demand while the last result does not allow
// sign-in, so fixing the license on the registry takes effect at once while
// a good license is not re-fetched on every sign-in. A bad license only
// blocks browser sign-in; it never touches stored data.
type LicenseMonitor struct {
	lic      ports.License
	clock    ports.Clock
	interval time.Duration
	log      *slog.Logger

	mu   sync.Mutex
	last *LicenseStatus
}

// NewLicenseMonitor checks lic every interval (once Run is started).
func NewLicenseMonitor(lic ports.License, clock ports.Clock, interval time.Duration, log *slog.Logger) *LicenseMonitor {
	if log == nil {
		log = slog.Default()
	}
	return &LicenseMonitor{lic: lic, clock: clock, interval: interval, log: log}
}

// Refresh checks the license now and stores the result.
func (m *LicenseMonitor) Refresh(ctx context.Context) LicenseStatus {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	info, err := m.lic.Check(ctx)
	st := LicenseStatus{Info: info, Err: err, CheckedAt: m.clock.Now().UTC()}
	m.mu.Lock()
	prev := m.last
	m.last = &st
	m.mu.Unlock()
	if prevOK, nowOK := prev != nil && prev.Err == nil && !prev.Info.Suspended, err == nil && !info.Suspended; prev == nil || prevOK != nowOK {
		if nowOK {
			m.log.Info("registry license checked", "account", info.Account, "managed_identity", info.ManagedIdentity, "products", info.Products)
		} else {
			m.log.Warn("registry license not usable: browser sign-in is blocked", "err", err, "suspended", info.Suspended)
		}
	}
	return st
}

// Current returns the latest result, re-checking when there is none yet or
// when it did not allow sign-in for product.
func (m *LicenseMonitor) Current(ctx context.Context, product string) LicenseStatus {
	m.mu.Lock()
	last := m.last
	m.mu.Unlock()
	if last != nil && CheckLicenseForSignIn(*last, product) == nil {
		return *last
	}
	return m.Refresh(ctx)
}

// Run refreshes every interval until ctx ends.
func (m *LicenseMonitor) Run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Refresh(ctx)
		}
	}
}

// CheckLicenseForSignIn applies the license rules of browser sign-in: the
// license must be valid and not suspended, managed identity must be enabled
// and the license must include product.
func CheckLicenseForSignIn(st LicenseStatus, product string) error {
	if st.Err != nil {
		if domain.KindOf(st.Err) == domain.KindForbidden {
			return domain.E(domain.KindForbidden, domain.CodeLicenseInvalid,
				"browser sign-in is blocked: the identity registry does not accept this installation's license key")
		}
		e := domain.E(domain.KindUnavailable, domain.CodeLicenseUnavailable,
			"browser sign-in is unavailable: the identity registry cannot be reached to check the license")
		return e.WithCause(st.Err)
	}
	if st.Info.Suspended {
		return domain.E(domain.KindForbidden, domain.CodeLicenseSuspended,
			"browser sign-in is blocked: the license is suspended (your data is kept; contact the license owner)")
	}
	if !st.Info.ManagedIdentity {
		return domain.E(domain.KindForbidden, domain.CodeManagedIdentityDisabled,
			"browser sign-in with email or SSO is not enabled for this account on the identity registry")
	}
	if !slices.Contains(st.Info.Products, product) {
		return domain.E(domain.KindForbidden, domain.CodeProductNotLicensed,
			"the license does not include %s; browser sign-in is not available", product)
	}
	return nil
}
