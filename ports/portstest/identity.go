// Package portstest holds in-memory fakes of the ports, so use cases can be
// tested without SQL. They follow the ports' documented behaviour (the same
// errors, the same revocation effects); the SQL stores are checked against
// the same rules by their contract suites.
package portstest

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Identity is an in-memory store for every identity port: users, service
// accounts, API keys, sessions, identity bindings, audit log, settings and
// the installation id. One mutex stands in for the SQL transaction, so
// UpdateUser sees the active-admin set and the user under one lock.
type Identity struct {
	mu           sync.Mutex
	users        map[string]domain.User
	accounts     map[string]domain.ServiceAccount
	keys         map[string]domain.APIKey
	sessions     map[string]domain.Session
	bindings     []ports.IdentityBinding
	audit        []ports.AuditEntry
	auditBatches int
	settings     map[string]string
	installation string
}

var (
	_ ports.Users            = (*Identity)(nil)
	_ ports.ServiceAccounts  = (*Identity)(nil)
	_ ports.APIKeys          = (*Identity)(nil)
	_ ports.Sessions         = (*Identity)(nil)
	_ ports.IdentityBindings = (*Identity)(nil)
	_ ports.Audit            = (*Identity)(nil)
	_ ports.AuditPruner      = (*Identity)(nil)
	_ ports.Settings         = (*Identity)(nil)
	_ ports.Installation     = (*Identity)(nil)
)

var errEmailTaken = domain.NewBase(domain.KindConflict, domain.CodeEmailTaken, "a user with this email already exists")

// NewIdentity returns an empty store.
func NewIdentity() *Identity {
	return &Identity{
		users: map[string]domain.User{}, accounts: map[string]domain.ServiceAccount{},
		keys: map[string]domain.APIKey{}, sessions: map[string]domain.Session{}, settings: map[string]string{},
	}
}

// stored is how a SQL store gives times back: UTC, microseconds.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func storedPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := stored(*t)
	return &u
}

func storedUser(u domain.User) domain.User {
	u.Email = strings.ToLower(u.Email)
	u.CreatedAt, u.UpdatedAt = stored(u.CreatedAt), stored(u.UpdatedAt)
	u.ActivatedAt, u.LastLoginAt, u.ErasedAt = storedPtr(u.ActivatedAt), storedPtr(u.LastLoginAt), storedPtr(u.ErasedAt)
	return u
}

func (s *Identity) emailTaken(email, exceptID string) bool {
	for _, u := range s.users {
		if u.ID != exceptID && strings.EqualFold(u.Email, email) {
			return true
		}
	}
	return false
}

// CreateUser implements ports.Users.
func (s *Identity) CreateUser(_ context.Context, u domain.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emailTaken(u.Email, "") {
		return errEmailTaken
	}
	s.users[u.ID] = storedUser(u)
	return nil
}

// GetUser implements ports.Users.
func (s *Identity) GetUser(_ context.Context, id string) (domain.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return domain.User{}, domain.NotFound("user")
	}
	return u, nil
}

// GetUserByEmail implements ports.Users (case-insensitive).
func (s *Identity) GetUserByEmail(_ context.Context, email string) (domain.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if strings.EqualFold(u.Email, email) {
			return u, nil
		}
	}
	return domain.User{}, domain.NotFound("user")
}

// ListUsers implements ports.Users.
func (s *Identity) ListUsers(context.Context) ([]domain.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]domain.User, 0, len(s.users))
	for _, u := range s.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Email < out[j].Email })
	return out, nil
}

// CountUsers implements ports.Users.
func (s *Identity) CountUsers(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.users), nil
}

// UpdateUser implements ports.Users: fn runs under the store's lock with the
// active human admins; nothing changes if it fails; the change's effects
// (domain.EffectsOf) revoke sessions and keys at once.
func (s *Identity) UpdateUser(_ context.Context, id string, fn ports.UserUpdateFn) (domain.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before, ok := s.users[id]
	if !ok {
		return domain.User{}, domain.NotFound("user")
	}
	var admins []string
	for _, u := range s.users {
		if u.IsActiveAdmin() {
			admins = append(admins, u.ID)
		}
	}
	sort.Strings(admins)
	after := before
	if err := fn(&after, admins); err != nil {
		return domain.User{}, err
	}
	after.ID, after.CreatedAt = before.ID, before.CreatedAt
	if s.emailTaken(after.Email, id) {
		return domain.User{}, errEmailTaken
	}
	after = storedUser(after)
	s.users[id] = after
	now := after.UpdatedAt
	fx := domain.EffectsOf(before, after)
	if fx.RevokePersonalKeys {
		for kid, k := range s.keys {
			if k.UserID == id {
				s.revokeSessionsLocked(func(se domain.Session) bool { return se.SourceKeyID == kid }, now)
				if k.RevokedAt == nil {
					k.Revoke(now)
					s.keys[kid] = k
				}
			}
		}
	}
	if fx.RevokeSessions {
		s.revokeSessionsLocked(func(se domain.Session) bool {
			return se.PrincipalKind == domain.PrincipalUser && se.PrincipalID == id
		}, now)
	}
	if fx.Erase != nil {
		s.eraseLocked(id, *fx.Erase)
	}
	return after, nil
}

// eraseLocked removes an erased user's sessions and binding, and its email
// from the string details of the audit log (the SQL store also clears its
// email and full_name fields in the entries about it).
func (s *Identity) eraseLocked(id string, gone domain.ErasedIdentity) {
	for sid, se := range s.sessions {
		if se.PrincipalKind == domain.PrincipalUser && se.PrincipalID == id {
			delete(s.sessions, sid)
		}
	}
	kept := s.bindings[:0]
	for _, b := range s.bindings {
		if b.UserID != id {
			kept = append(kept, b)
		}
	}
	s.bindings = kept
	for i, e := range s.audit {
		for k, v := range e.Details {
			if str, ok := v.(string); ok && strings.EqualFold(str, gone.Email) {
				s.audit[i].Details[k] = domain.ErasedEmail(id)
			}
		}
	}
}

func (s *Identity) revokeSessionsLocked(match func(domain.Session) bool, now time.Time) {
	for sid, se := range s.sessions {
		if se.RevokedAt == nil && match(se) {
			t := now
			se.RevokedAt = &t
			s.sessions[sid] = se
		}
	}
}

// CreateServiceAccount implements ports.ServiceAccounts.
func (s *Identity) CreateServiceAccount(_ context.Context, sa domain.ServiceAccount) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sa.CreatedAt = stored(sa.CreatedAt)
	s.accounts[sa.ID] = sa
	return nil
}

// GetServiceAccount implements ports.ServiceAccounts.
func (s *Identity) GetServiceAccount(_ context.Context, id string) (domain.ServiceAccount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sa, ok := s.accounts[id]
	if !ok {
		return domain.ServiceAccount{}, domain.NotFound("service account")
	}
	return sa, nil
}

// ListServiceAccounts implements ports.ServiceAccounts.
func (s *Identity) ListServiceAccounts(context.Context) ([]domain.ServiceAccount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]domain.ServiceAccount, 0, len(s.accounts))
	for _, sa := range s.accounts {
		out = append(out, sa)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

var errKeyNotFound = domain.NewBase(domain.KindNotFound, domain.CodeNotFound, "API key not found")

// CreateAPIKey implements ports.APIKeys.
func (s *Identity) CreateAPIKey(_ context.Context, k domain.APIKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt, k.RevokedAt = stored(k.CreatedAt), storedPtr(k.ExpiresAt), storedPtr(k.LastUsedAt), storedPtr(k.RevokedAt)
	s.keys[k.ID] = k
	return nil
}

// GetAPIKey implements ports.APIKeys.
func (s *Identity) GetAPIKey(_ context.Context, id string) (domain.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return domain.APIKey{}, errKeyNotFound
	}
	return k, nil
}

// GetAPIKeyByHash implements ports.APIKeys.
func (s *Identity) GetAPIKeyByHash(_ context.Context, hash string) (domain.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys {
		if k.Hash == hash {
			return k, nil
		}
	}
	return domain.APIKey{}, errKeyNotFound
}

// ListAPIKeys implements ports.APIKeys, newest first.
func (s *Identity) ListAPIKeys(_ context.Context, f ports.APIKeyFilter) ([]domain.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []domain.APIKey
	for _, k := range s.keys {
		if (f.UserID == "" || k.UserID == f.UserID) && (f.IncludeRevoked || k.RevokedAt == nil) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// RevokeAPIKey implements ports.APIKeys: the first revocation time is kept
// and every session exchanged from the key ends.
func (s *Identity) RevokeAPIKey(_ context.Context, id string, now time.Time) (domain.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return domain.APIKey{}, errKeyNotFound
	}
	now = stored(now)
	if k.RevokedAt == nil {
		k.Revoke(now)
		s.keys[id] = k
	}
	s.revokeSessionsLocked(func(se domain.Session) bool { return se.SourceKeyID == id }, now)
	return k, nil
}

// TouchAPIKey implements ports.APIKeys (at most once a minute per key).
func (s *Identity) TouchAPIKey(_ context.Context, id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return nil
	}
	now = stored(now)
	if k.LastUsedAt == nil || k.LastUsedAt.Before(now.Add(-time.Minute)) {
		k.LastUsedAt = &now
		s.keys[id] = k
	}
	return nil
}

// CreateSession implements ports.Sessions; a session from a missing key is
// refused as the SQL store's foreign key refuses it.
func (s *Identity) CreateSession(_ context.Context, se domain.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se.SourceKeyID != "" {
		if _, ok := s.keys[se.SourceKeyID]; !ok {
			return errKeyNotFound
		}
	}
	se.CreatedAt, se.ExpiresAt, se.RevokedAt = stored(se.CreatedAt), stored(se.ExpiresAt), storedPtr(se.RevokedAt)
	s.sessions[se.ID] = se
	return nil
}

// GetSessionByTokenHash implements ports.Sessions.
func (s *Identity) GetSessionByTokenHash(_ context.Context, hash string) (domain.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, se := range s.sessions {
		if se.TokenHash == hash {
			return se, nil
		}
	}
	return domain.Session{}, domain.NotFound("session")
}

// RevokeSession implements ports.Sessions, keeping the first revocation time.
func (s *Identity) RevokeSession(_ context.Context, id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[id]
	if !ok {
		return domain.NotFound("session")
	}
	if se.RevokedAt == nil {
		t := stored(now)
		se.RevokedAt = &t
		s.sessions[id] = se
	}
	return nil
}

// DeleteExpiredSessions implements ports.Sessions.
func (s *Identity) DeleteExpiredSessions(_ context.Context, cutoff time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, se := range s.sessions {
		if se.ExpiresAt.Before(cutoff) {
			delete(s.sessions, id)
			n++
		}
	}
	return n, nil
}

// GetBinding implements ports.IdentityBindings.
func (s *Identity) GetBinding(_ context.Context, issuer, subject string) (ports.IdentityBinding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bindings {
		if b.Issuer == issuer && b.Subject == subject {
			return b, nil
		}
	}
	return ports.IdentityBinding{}, domain.NotFound("identity binding")
}

// GetBindingByUser implements ports.IdentityBindings.
func (s *Identity) GetBindingByUser(_ context.Context, userID string) (ports.IdentityBinding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bindings {
		if b.UserID == userID {
			return b, nil
		}
	}
	return ports.IdentityBinding{}, domain.NotFound("identity binding")
}

// CreateBinding implements ports.IdentityBindings: one identity per user and
// one user per identity.
func (s *Identity) CreateBinding(_ context.Context, b ports.IdentityBinding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[b.UserID]; !ok {
		return domain.NotFound("user")
	}
	for _, o := range s.bindings {
		if o.Issuer == b.Issuer && o.Subject == b.Subject {
			return domain.E(domain.KindConflict, domain.CodeIdentityAlreadyBound, "this sign-in identity is already bound to a user")
		}
	}
	for _, o := range s.bindings {
		if o.UserID == b.UserID {
			return domain.E(domain.KindConflict, domain.CodeUserAlreadyBound, "this user is already bound to another sign-in identity")
		}
	}
	b.CreatedAt = stored(b.CreatedAt)
	s.bindings = append(s.bindings, b)
	return nil
}

// RecordAudit implements ports.Audit.
func (s *Identity) RecordAudit(_ context.Context, e ports.AuditEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.At = stored(e.At)
	s.audit = append(s.audit, e)
	return nil
}

// RecordAudits writes the entries in one call, as the identity store does
// in one statement (app/ops.RetentionAuditLog); AuditBatches counts them.
func (s *Identity) RecordAudits(_ context.Context, es []ports.AuditEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auditBatches++
	for _, e := range es {
		e.At = stored(e.At)
		s.audit = append(s.audit, e)
	}
	return nil
}

// AuditBatches is how many RecordAudits calls there were.
func (s *Identity) AuditBatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auditBatches
}

// PruneAudit implements ports.AuditPruner.
func (s *Identity) PruneAudit(_ context.Context, before time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sort.SliceStable(s.audit, func(i, j int) bool { return s.audit[i].At.Before(s.audit[j].At) })
	n := 0
	for n < len(s.audit) && n < limit && s.audit[n].At.Before(before) {
		n++
	}
	s.audit = append(s.audit[:0], s.audit[n:]...)
	return n, nil
}

// AuditLog returns the recorded entries, oldest first.
func (s *Identity) AuditLog() []ports.AuditEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ports.AuditEntry(nil), s.audit...)
}

// GetSetting implements ports.Settings.
func (s *Identity) GetSetting(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.settings[key]
	return v, ok, nil
}

// PutSetting implements ports.Settings.
func (s *Identity) PutSetting(_ context.Context, key, value, _ string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings[key] = value
	return nil
}

// DeleteSetting implements ports.Settings (a no-op for an unset key).
func (s *Identity) DeleteSetting(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.settings, key)
	return nil
}

// InstallationID implements ports.Installation.
func (s *Identity) InstallationID(_ context.Context, newID string, _ time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installation == "" {
		s.installation = newID
	}
	return s.installation, nil
}
