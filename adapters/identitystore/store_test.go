package identitystore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/identitystore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// t0 has nanoseconds on purpose: the store keeps microseconds on both
// dialects, and the tests check that it does so identically.
var t0 = time.Date(2026, 11, 22, 1, 2, 3, 123456789, time.UTC)

var ctx = context.Background()

// eachDialect runs the same contract test against a fresh database of every
// dialect under test.
func eachDialect(t *testing.T, fn func(t *testing.T, s *identitystore.Store, db *sqldb.DB)) {
	t.Helper()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		fn(t, identitystore.New(db), db)
	})
}

func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func wantCode(t *testing.T, err error, kind domain.Kind, code domain.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %s/%s", kind, code)
	}
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("got %T %v, want *domain.Error %s/%s", err, err, kind, code)
	}
	if de.Kind != kind || de.Code != code {
		t.Fatalf("got %s/%s (%v), want %s/%s", de.Kind, de.Code, err, kind, code)
	}
}

func mustUser(t *testing.T, s *identitystore.Store, id, email string, role domain.Role, status domain.Status) domain.User {
	t.Helper()
	u := domain.User{ID: id, Email: email, FullName: "Name " + id, Role: role, Status: status, CreatedAt: t0, UpdatedAt: t0}
	if status == domain.StatusActive {
		u.EmailVerified = true
		at := t0
		u.ActivatedAt = &at
	}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatalf("CreateUser(%s): %v", id, err)
	}
	return u
}

func mustKey(t *testing.T, s *identitystore.Store, id, userID, saID string, created time.Time) domain.APIKey {
	t.Helper()
	k := domain.APIKey{ID: id, Name: "key " + id, Prefix: "td_" + id, Hash: "hash-" + id, UserID: userID, ServiceAccountID: saID, CreatedBy: "creator", CreatedAt: created}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey(%s): %v", id, err)
	}
	return k
}

func mustSession(t *testing.T, s *identitystore.Store, id string, kind domain.PrincipalKind, principal, sourceKey string) domain.Session {
	t.Helper()
	se := domain.Session{
		ID: id, TokenHash: "tok-" + id, PrincipalKind: kind, PrincipalID: principal,
		Source: domain.SessionFromOIDC, Identity: "sub-" + principal, IDTokenHint: "hint",
		CreatedAt: t0, ExpiresAt: t0.Add(domain.DefaultSessionTTL),
	}
	if sourceKey != "" {
		se.Source, se.SourceKeyID, se.Identity, se.IDTokenHint = domain.SessionFromAPIKey, sourceKey, "", ""
	}
	if err := s.CreateSession(ctx, se); err != nil {
		t.Fatalf("CreateSession(%s): %v", id, err)
	}
	return se
}

func sessionRevoked(t *testing.T, s *identitystore.Store, id string) bool {
	t.Helper()
	se, err := s.GetSessionByTokenHash(ctx, "tok-"+id)
	if err != nil {
		t.Fatalf("GetSessionByTokenHash(%s): %v", id, err)
	}
	return se.RevokedAt != nil
}

func keyRevoked(t *testing.T, s *identitystore.Store, id string) bool {
	t.Helper()
	k, err := s.GetAPIKey(ctx, id)
	if err != nil {
		t.Fatalf("GetAPIKey(%s): %v", id, err)
	}
	return k.RevokedAt != nil
}

func TestUsersCreateGetList(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		if n, err := s.CountUsers(ctx); err != nil || n != 0 {
			t.Fatalf("CountUsers on empty db = %d, %v; want 0", n, err)
		}
		zed := mustUser(t, s, "u1", "zed@example.com", domain.RoleAdmin, domain.StatusActive)
		mustUser(t, s, "u2", "amy@example.com", domain.RoleViewer, domain.StatusInvited)
		mustUser(t, s, "u3", "mia@example.com", domain.RoleMember, domain.StatusSuspended)

		got, err := s.GetUser(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		want := zed
		want.CreatedAt, want.UpdatedAt = micro(t0), micro(t0)
		at := micro(t0)
		want.ActivatedAt = &at
		if got.ID != want.ID || got.Email != want.Email || got.FullName != want.FullName || got.Role != want.Role ||
			got.Status != want.Status || got.EmailVerified != want.EmailVerified || !got.CreatedAt.Equal(want.CreatedAt) ||
			!got.UpdatedAt.Equal(want.UpdatedAt) || got.ActivatedAt == nil || !got.ActivatedAt.Equal(at) || got.LastLoginAt != nil {
			t.Fatalf("GetUser = %+v\nwant %+v", got, want)
		}
		if got.CreatedAt.Location() != time.UTC {
			t.Errorf("CreatedAt location = %v, want UTC", got.CreatedAt.Location())
		}

		byEmail, err := s.GetUserByEmail(ctx, "  ZED@Example.COM ")
		if err != nil || byEmail.ID != "u1" {
			t.Fatalf("GetUserByEmail(upper case) = %+v, %v; want u1", byEmail, err)
		}
		invited, err := s.GetUser(ctx, "u2")
		if err != nil || invited.EmailVerified || invited.ActivatedAt != nil {
			t.Fatalf("GetUser(u2) = %+v, %v; want unverified, never activated", invited, err)
		}

		list, err := s.ListUsers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var emails []string
		for _, u := range list {
			emails = append(emails, u.Email)
		}
		if fmt.Sprint(emails) != "[amy@example.com mia@example.com zed@example.com]" {
			t.Errorf("ListUsers order = %v, want sorted by email", emails)
		}
		if n, err := s.CountUsers(ctx); err != nil || n != 3 {
			t.Errorf("CountUsers = %d, %v; want 3", n, err)
		}

		_, err = s.GetUser(ctx, "nope")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
		_, err = s.GetUserByEmail(ctx, "nobody@example.com")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
	})
}

func TestCreateUserEmailTaken(t *testing.T) {
	cases := []struct{ name, email string }{
		{"same", "taken@example.com"},
		{"different case", "Taken@EXAMPLE.com"},
	}
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "first", "taken@example.com", domain.RoleMember, domain.StatusActive)
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				err := s.CreateUser(ctx, domain.User{ID: fmt.Sprint("dup", i), Email: c.email, Role: domain.RoleMember, Status: domain.StatusInvited, CreatedAt: t0, UpdatedAt: t0})
				wantCode(t, err, domain.KindConflict, domain.CodeEmailTaken)
				if de := domain.AsError(err); de.Message != "a user with this email already exists" {
					t.Errorf("message = %q", de.Message)
				}
			})
		}
		if n, _ := s.CountUsers(ctx); n != 1 {
			t.Errorf("CountUsers = %d after refused duplicates, want 1", n)
		}
	})
}

// TestUpdateUserEffects checks that UpdateUser persists the change and applies
// domain.EffectsOf in the same transaction.
func TestUpdateUserEffects(t *testing.T) {
	later := t0.Add(time.Hour)
	cases := []struct {
		name                  string
		change                func(u *domain.User) error
		wantRole              domain.Role
		wantStatus            domain.Status
		wantName              string
		wantSessionsRevoked   bool
		wantKeyRevoked        bool
		wantKeySessionRevoked bool
	}{
		{"rename has no effects", func(u *domain.User) error { return u.Rename("New Name", later) },
			domain.RoleMember, domain.StatusActive, "New Name", false, false, false},
		{"role change revokes sessions, keeps keys", func(u *domain.User) error { return u.ChangeRole(domain.RoleViewer, later) },
			domain.RoleViewer, domain.StatusActive, "Name target", true, false, true},
		{"suspension revokes sessions, keeps keys", func(u *domain.User) error { return u.ChangeStatusByAdmin(domain.StatusSuspended, later) },
			domain.RoleMember, domain.StatusSuspended, "Name target", true, false, true},
		{"archive revokes sessions and personal keys", func(u *domain.User) error { return u.ChangeStatusByAdmin(domain.StatusArchived, later) },
			domain.RoleMember, domain.StatusArchived, "Name target", true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
				mustUser(t, s, "admin", "admin@example.com", domain.RoleAdmin, domain.StatusActive)
				mustUser(t, s, "target", "target@example.com", domain.RoleMember, domain.StatusActive)
				mustKey(t, s, "k-target", "target", "", t0)
				mustKey(t, s, "k-admin", "admin", "", t0)
				mustSession(t, s, "s-oidc", domain.PrincipalUser, "target", "")
				mustSession(t, s, "s-key", domain.PrincipalUser, "target", "k-target")
				mustSession(t, s, "s-other", domain.PrincipalUser, "admin", "")
				mustSession(t, s, "s-other-key", domain.PrincipalUser, "admin", "k-admin")

				got, err := s.UpdateUser(ctx, "target", func(u *domain.User, _ []string) error { return c.change(u) })
				if err != nil {
					t.Fatalf("UpdateUser: %v", err)
				}
				stored, err := s.GetUser(ctx, "target")
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range []domain.User{got, stored} {
					if u.Role != c.wantRole || u.Status != c.wantStatus || u.FullName != c.wantName {
						t.Errorf("user = %s/%s/%q, want %s/%s/%q", u.Role, u.Status, u.FullName, c.wantRole, c.wantStatus, c.wantName)
					}
				}
				if !stored.UpdatedAt.Equal(micro(later)) || !got.UpdatedAt.Equal(stored.UpdatedAt) {
					t.Errorf("UpdatedAt returned %v stored %v, want %v", got.UpdatedAt, stored.UpdatedAt, micro(later))
				}
				if r := sessionRevoked(t, s, "s-oidc"); r != c.wantSessionsRevoked {
					t.Errorf("OIDC session revoked = %v, want %v", r, c.wantSessionsRevoked)
				}
				if r := sessionRevoked(t, s, "s-key"); r != c.wantKeySessionRevoked {
					t.Errorf("key-sourced session revoked = %v, want %v", r, c.wantKeySessionRevoked)
				}
				if r := keyRevoked(t, s, "k-target"); r != c.wantKeyRevoked {
					t.Errorf("personal key revoked = %v, want %v", r, c.wantKeyRevoked)
				}
				if c.wantSessionsRevoked {
					se, _ := s.GetSessionByTokenHash(ctx, "tok-s-oidc")
					if se.RevokedAt == nil || !se.RevokedAt.Equal(micro(later)) {
						t.Errorf("session revoked_at = %v, want the change time %v", se.RevokedAt, micro(later))
					}
				}
				// Nobody else is touched.
				if sessionRevoked(t, s, "s-other") || sessionRevoked(t, s, "s-other-key") || keyRevoked(t, s, "k-admin") {
					t.Error("another user's sessions or keys were revoked")
				}
			})
		})
	}
}

// Archiving after a key was revoked keeps the key's first revocation time.
func TestArchiveKeepsEarlierKeyRevocation(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "admin", "admin@example.com", domain.RoleAdmin, domain.StatusActive)
		mustUser(t, s, "u", "u@example.com", domain.RoleMember, domain.StatusActive)
		mustKey(t, s, "old", "u", "", t0)
		if _, err := s.RevokeAPIKey(ctx, "old", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateUser(ctx, "u", func(u *domain.User, _ []string) error {
			return u.ChangeStatusByAdmin(domain.StatusArchived, t0.Add(time.Hour))
		}); err != nil {
			t.Fatal(err)
		}
		k, _ := s.GetAPIKey(ctx, "old")
		if k.RevokedAt == nil || !k.RevokedAt.Equal(micro(t0.Add(time.Minute))) {
			t.Errorf("revoked_at = %v, want the first revocation %v", k.RevokedAt, micro(t0.Add(time.Minute)))
		}
	})
}

func TestUpdateUserFnErrorRollsBack(t *testing.T) {
	sentinel := errors.New("refused by the closure")
	domainErr := domain.Invalid("full_name", "bad")
	for _, fnErr := range []error{sentinel, domainErr} {
		t.Run(fnErr.Error(), func(t *testing.T) {
			eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
				mustUser(t, s, "admin", "admin@example.com", domain.RoleAdmin, domain.StatusActive)
				mustUser(t, s, "u", "u@example.com", domain.RoleMember, domain.StatusActive)
				mustKey(t, s, "k", "u", "", t0)
				mustSession(t, s, "s", domain.PrincipalUser, "u", "")
				_, err := s.UpdateUser(ctx, "u", func(u *domain.User, _ []string) error {
					_ = u.ChangeStatusByAdmin(domain.StatusArchived, t0.Add(time.Hour))
					_ = u.Rename("Changed", t0.Add(time.Hour))
					return fnErr
				})
				if err != fnErr {
					t.Fatalf("UpdateUser error = %v (%T), want the closure's error unchanged", err, err)
				}
				u, _ := s.GetUser(ctx, "u")
				if u.Status != domain.StatusActive || u.FullName != "Name u" || !u.UpdatedAt.Equal(micro(t0)) {
					t.Errorf("user changed despite closure error: %+v", u)
				}
				if sessionRevoked(t, s, "s") || keyRevoked(t, s, "k") {
					t.Error("effects applied despite closure error")
				}
			})
		})
	}
}

func TestUpdateUserLockedAdminSetAndErrors(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "b-admin", "b@example.com", domain.RoleAdmin, domain.StatusActive)
		mustUser(t, s, "a-admin", "a@example.com", domain.RoleAdmin, domain.StatusActive)
		mustUser(t, s, "c-suspended-admin", "c@example.com", domain.RoleAdmin, domain.StatusSuspended)
		mustUser(t, s, "d-invited-admin", "d@example.com", domain.RoleAdmin, domain.StatusInvited)
		mustUser(t, s, "m", "m@example.com", domain.RoleMember, domain.StatusActive)

		var seen []string
		if _, err := s.UpdateUser(ctx, "m", func(u *domain.User, admins []string) error {
			seen = admins
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(seen) != "[a-admin b-admin]" {
			t.Errorf("activeAdminIDs = %v, want only active admins in id order", seen)
		}

		_, err := s.UpdateUser(ctx, "missing", func(*domain.User, []string) error {
			t.Error("closure called for a missing user")
			return nil
		})
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)

		_, err = s.UpdateUser(ctx, "m", func(u *domain.User, _ []string) error {
			u.Email = "a@example.com"
			return nil
		})
		wantCode(t, err, domain.KindConflict, domain.CodeEmailTaken)

		// The last-admin rule as the app layer will apply it.
		if _, err := s.UpdateUser(ctx, "a-admin", func(u *domain.User, admins []string) error {
			if err := u.ChangeStatusByAdmin(domain.StatusSuspended, t0); err != nil {
				return err
			}
			return domain.RequireActiveAdminRemains(admins, *u)
		}); err != nil {
			t.Fatalf("suspending one of two admins: %v", err)
		}
		_, err = s.UpdateUser(ctx, "b-admin", func(u *domain.User, admins []string) error {
			if err := u.ChangeStatusByAdmin(domain.StatusArchived, t0); err != nil {
				return err
			}
			return domain.RequireActiveAdminRemains(admins, *u)
		})
		wantCode(t, err, domain.KindConflict, domain.CodeLastActiveAdminRequired)
		if b, _ := s.GetUser(ctx, "b-admin"); !b.IsActiveAdmin() {
			t.Errorf("last admin is now %s/%s", b.Role, b.Status)
		}
	})
}

// TestLastAdminConcurrency races demotions of the only two active admins. The
// locked admin set must serialise them: one wins, the rest see the survivor as
// the last admin, and no other error (deadlock, busy, serialization) escapes.
func TestLastAdminConcurrency(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, db *sqldb.DB) {
		mustUser(t, s, "admin-a", "a@example.com", domain.RoleAdmin, domain.StatusActive)
		mustUser(t, s, "admin-b", "b@example.com", domain.RoleAdmin, domain.StatusActive)
		const n = 20
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			succeeded = map[string]int{}
			errs      []error
		)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			id := "admin-a"
			if i%2 == 1 {
				id = "admin-b"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := s.UpdateUser(ctx, id, func(u *domain.User, admins []string) error {
					if err := u.ChangeRole(domain.RoleMember, t0); err != nil {
						return err
					}
					return domain.RequireActiveAdminRemains(admins, *u)
				})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else {
					succeeded[id]++
				}
			}()
		}
		close(start)
		wg.Wait()

		for _, err := range errs {
			if domain.CodeOf(err) != domain.CodeLastActiveAdminRequired {
				t.Errorf("unexpected error %v (%s); want only %s", err, domain.CodeOf(err), domain.CodeLastActiveAdminRequired)
			}
		}
		if len(succeeded) == 0 {
			t.Fatal("no demotion succeeded")
		}
		// Demoting an already demoted admin again is a no-op success, so only
		// one of the two ids may ever succeed.
		if len(succeeded) != 1 {
			t.Errorf("both admins were demoted: %v", succeeded)
		}
		var active int
		if err := db.GetContext(ctx, &active, `SELECT COUNT(*) FROM users WHERE role = 'admin' AND status = 'active'`); err != nil {
			t.Fatal(err)
		}
		if active != 1 {
			t.Errorf("%d active admins remain, want exactly 1", active)
		}
		t.Logf("%s: %d succeeded (%v), %d refused as last admin", db.Dialect, n-len(errs), succeeded, len(errs))
	})
}

func TestServiceAccounts(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		for _, sa := range []domain.ServiceAccount{
			{ID: "sa2", Name: "zeta-bot", Role: domain.RoleViewer, Scope: domain.ScopeParty, Active: false, CreatedBy: "admin", CreatedAt: t0},
			{ID: "sa1", Name: "alpha-bot", Role: domain.RoleMember, Active: true, CreatedBy: "admin", CreatedAt: t0}, // no scope: company
		} {
			if err := s.CreateServiceAccount(ctx, sa); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.GetServiceAccount(ctx, "sa2")
		if err != nil || got.Name != "zeta-bot" || got.Role != domain.RoleViewer || got.Scope != domain.ScopeParty || got.Active ||
			got.CreatedBy != "admin" || !got.CreatedAt.Equal(micro(t0)) {
			t.Fatalf("GetServiceAccount = %+v, %v", got, err)
		}
		list, err := s.ListServiceAccounts(ctx)
		if err != nil || len(list) != 2 || list[0].ID != "sa1" || !list[0].Active || list[0].Scope != domain.ScopeCompany || list[1].Scope != domain.ScopeParty {
			t.Fatalf("ListServiceAccounts = %+v, %v; want sorted by name", list, err)
		}
		_, err = s.GetServiceAccount(ctx, "nope")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
	})
}

func TestAPIKeys(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "u1", "u1@example.com", domain.RoleMember, domain.StatusActive)
		mustUser(t, s, "u2", "u2@example.com", domain.RoleMember, domain.StatusActive)
		if err := s.CreateServiceAccount(ctx, domain.ServiceAccount{ID: "sa", Name: "bot", Role: domain.RoleMember, Active: true, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		exp := t0.Add(24 * time.Hour)
		k1 := domain.APIKey{ID: "k1", Name: "laptop", Prefix: "td_abcdefg", Hash: "h1", UserID: "u1", CreatedBy: "u1", CreatedAt: t0, ExpiresAt: &exp}
		if err := s.CreateAPIKey(ctx, k1); err != nil {
			t.Fatal(err)
		}
		mustKey(t, s, "k2", "u1", "", t0.Add(time.Minute))
		mustKey(t, s, "k3", "u2", "", t0.Add(2*time.Minute))
		mustKey(t, s, "k4", "", "sa", t0.Add(3*time.Minute))

		got, err := s.GetAPIKeyByHash(ctx, "h1")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "k1" || got.Name != "laptop" || got.Prefix != "td_abcdefg" || got.UserID != "u1" || got.ServiceAccountID != "" ||
			got.CreatedBy != "u1" || !got.CreatedAt.Equal(micro(t0)) || got.ExpiresAt == nil || !got.ExpiresAt.Equal(micro(exp)) ||
			got.RevokedAt != nil || got.LastUsedAt != nil || !got.Personal() {
			t.Fatalf("GetAPIKeyByHash = %+v", got)
		}
		if sa, err := s.GetAPIKey(ctx, "k4"); err != nil || sa.ServiceAccountID != "sa" || sa.UserID != "" || sa.Personal() {
			t.Fatalf("GetAPIKey(k4) = %+v, %v; want a service-account key", sa, err)
		}
		_, err = s.GetAPIKeyByHash(ctx, "unknown")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
		_, err = s.GetAPIKey(ctx, "unknown")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
		err = s.CreateAPIKey(ctx, domain.APIKey{ID: "k5", Name: "x", Prefix: "p", Hash: "h5", UserID: "ghost", CreatedAt: t0})
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)

		mustSession(t, s, "from-k1", domain.PrincipalUser, "u1", "k1")
		mustSession(t, s, "from-k2", domain.PrincipalUser, "u1", "k2")
		mustSession(t, s, "oidc-u1", domain.PrincipalUser, "u1", "")

		revokedAt := t0.Add(time.Hour)
		rk, err := s.RevokeAPIKey(ctx, "k1", revokedAt)
		if err != nil || rk.RevokedAt == nil || !rk.RevokedAt.Equal(micro(revokedAt)) {
			t.Fatalf("RevokeAPIKey = %+v, %v", rk, err)
		}
		if !sessionRevoked(t, s, "from-k1") {
			t.Error("session exchanged from the revoked key is still live")
		}
		if sessionRevoked(t, s, "from-k2") || sessionRevoked(t, s, "oidc-u1") {
			t.Error("revoking k1 revoked unrelated sessions")
		}
		again, err := s.RevokeAPIKey(ctx, "k1", revokedAt.Add(time.Hour))
		if err != nil || !again.RevokedAt.Equal(micro(revokedAt)) {
			t.Errorf("second revoke = %v, %v; want first revocation time kept", again.RevokedAt, err)
		}
		_, err = s.RevokeAPIKey(ctx, "unknown", revokedAt)
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
		if de := domain.AsError(err); de.Message != "API key not found" {
			t.Errorf("message = %q", de.Message)
		}

		ids := func(f ports.APIKeyFilter) string {
			t.Helper()
			ks, err := s.ListAPIKeys(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, k := range ks {
				out = append(out, k.ID)
			}
			return fmt.Sprint(out)
		}
		for _, c := range []struct {
			f    ports.APIKeyFilter
			want string
		}{
			{ports.APIKeyFilter{}, "[k4 k3 k2]"},
			{ports.APIKeyFilter{IncludeRevoked: true}, "[k4 k3 k2 k1]"},
			{ports.APIKeyFilter{UserID: "u1"}, "[k2]"},
			{ports.APIKeyFilter{UserID: "u1", IncludeRevoked: true}, "[k2 k1]"},
			{ports.APIKeyFilter{UserID: "nobody"}, "[]"},
		} {
			if got := ids(c.f); got != c.want {
				t.Errorf("ListAPIKeys(%+v) = %s, want %s", c.f, got, c.want)
			}
		}
	})
}

func TestTouchAPIKey(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "u", "u@example.com", domain.RoleMember, domain.StatusActive)
		mustKey(t, s, "k", "u", "", t0)
		steps := []struct {
			at, want time.Time
		}{
			{t0.Add(time.Second), t0.Add(time.Second)},         // first use is recorded
			{t0.Add(30 * time.Second), t0.Add(time.Second)},    // within a minute: skipped
			{t0.Add(2 * time.Minute), t0.Add(2 * time.Minute)}, // a minute later: recorded
			{t0.Add(2*time.Minute + 59*time.Second), t0.Add(2 * time.Minute)},
		}
		for i, st := range steps {
			if err := s.TouchAPIKey(ctx, "k", st.at); err != nil {
				t.Fatal(err)
			}
			k, _ := s.GetAPIKey(ctx, "k")
			if k.LastUsedAt == nil || !k.LastUsedAt.Equal(micro(st.want)) {
				t.Errorf("step %d: last_used_at = %v, want %v", i, k.LastUsedAt, micro(st.want))
			}
		}
		if err := s.TouchAPIKey(ctx, "gone", t0); err != nil {
			t.Errorf("TouchAPIKey(missing) = %v, want nil (advisory)", err)
		}
	})
}

func TestSessions(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "u", "u@example.com", domain.RoleMember, domain.StatusActive)
		mustKey(t, s, "k", "u", "", t0)
		want := mustSession(t, s, "s1", domain.PrincipalUser, "u", "")
		got, err := s.GetSessionByTokenHash(ctx, "tok-s1")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "s1" || got.PrincipalKind != domain.PrincipalUser || got.PrincipalID != "u" || got.Source != domain.SessionFromOIDC ||
			got.SourceKeyID != "" || got.Identity != want.Identity || got.IDTokenHint != "hint" ||
			!got.CreatedAt.Equal(micro(t0)) || !got.ExpiresAt.Equal(micro(want.ExpiresAt)) || got.RevokedAt != nil {
			t.Fatalf("GetSessionByTokenHash = %+v\nwant %+v", got, want)
		}
		if ks := mustSession(t, s, "s2", domain.PrincipalUser, "u", "k"); ks.SourceKeyID != "k" {
			t.Fatal("setup")
		}
		if got, _ := s.GetSessionByTokenHash(ctx, "tok-s2"); got.SourceKeyID != "k" || got.Source != domain.SessionFromAPIKey {
			t.Errorf("key session = %+v", got)
		}
		_, err = s.GetSessionByTokenHash(ctx, "nope")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
		err = s.CreateSession(ctx, domain.Session{ID: "bad", TokenHash: "tok-bad", PrincipalKind: domain.PrincipalUser, PrincipalID: "u",
			Source: domain.SessionFromAPIKey, SourceKeyID: "ghost", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)

		if err := s.RevokeSession(ctx, "s1", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetSessionByTokenHash(ctx, "tok-s1"); got.RevokedAt == nil || !got.RevokedAt.Equal(micro(t0.Add(time.Minute))) {
			t.Errorf("revoked_at = %v, want first revocation kept", got.RevokedAt)
		}
		wantCode(t, s.RevokeSession(ctx, "nope", t0), domain.KindNotFound, domain.CodeNotFound)

		// s1 and s2 expire at t0+8h; s3 later.
		long := domain.Session{ID: "s3", TokenHash: "tok-s3", PrincipalKind: domain.PrincipalUser, PrincipalID: "u", Source: domain.SessionFromOIDC,
			CreatedAt: t0, ExpiresAt: t0.Add(48 * time.Hour)}
		if err := s.CreateSession(ctx, long); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			cutoff time.Time
			want   int
		}{
			{t0.Add(domain.DefaultSessionTTL), 0}, // expiry equal to cutoff is kept
			{t0.Add(domain.DefaultSessionTTL + time.Microsecond), 2},
			{t0.Add(domain.DefaultSessionTTL + time.Hour), 0},
			{t0.Add(49 * time.Hour), 1},
		} {
			n, err := s.DeleteExpiredSessions(ctx, c.cutoff)
			if err != nil || n != c.want {
				t.Errorf("DeleteExpiredSessions(%v) = %d, %v; want %d", c.cutoff, n, err, c.want)
			}
		}
	})
}

func TestIdentityBindings(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		mustUser(t, s, "u1", "u1@example.com", domain.RoleMember, domain.StatusActive)
		mustUser(t, s, "u2", "u2@example.com", domain.RoleMember, domain.StatusActive)
		b := ports.IdentityBinding{Issuer: "https://id.example.com", Subject: "sub-1", UserID: "u1", Email: "u1@example.com", Active: true, CreatedAt: t0}
		if err := s.CreateBinding(ctx, b); err != nil {
			t.Fatal(err)
		}
		for _, get := range []func() (ports.IdentityBinding, error){
			func() (ports.IdentityBinding, error) { return s.GetBinding(ctx, b.Issuer, b.Subject) },
			func() (ports.IdentityBinding, error) { return s.GetBindingByUser(ctx, "u1") },
		} {
			got, err := get()
			if err != nil || got.Issuer != b.Issuer || got.Subject != b.Subject || got.UserID != "u1" || got.Email != b.Email || !got.Active || !got.CreatedAt.Equal(micro(t0)) {
				t.Errorf("binding = %+v, %v; want %+v", got, err, b)
			}
		}
		cases := []struct {
			name string
			b    ports.IdentityBinding
			kind domain.Kind
			code domain.Code
		}{
			{"identity bound to another user", ports.IdentityBinding{Issuer: b.Issuer, Subject: "sub-1", UserID: "u2", Email: "u2@example.com", CreatedAt: t0},
				domain.KindConflict, "identity_already_bound"},
			{"user bound to another identity", ports.IdentityBinding{Issuer: b.Issuer, Subject: "sub-2", UserID: "u1", Email: "u1@example.com", CreatedAt: t0},
				domain.KindConflict, "user_already_bound"},
			{"unknown user", ports.IdentityBinding{Issuer: b.Issuer, Subject: "sub-3", UserID: "ghost", Email: "g@example.com", CreatedAt: t0},
				domain.KindNotFound, domain.CodeNotFound},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { wantCode(t, s.CreateBinding(ctx, c.b), c.kind, c.code) })
		}
		// The same subject at another issuer is a different identity.
		if err := s.CreateBinding(ctx, ports.IdentityBinding{Issuer: "https://other.example.com", Subject: "sub-1", UserID: "u2", Email: "u2@example.com", CreatedAt: t0}); err != nil {
			t.Errorf("same subject, other issuer: %v", err)
		}
		_, err := s.GetBinding(ctx, b.Issuer, "nope")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
		_, err = s.GetBindingByUser(ctx, "nope")
		wantCode(t, err, domain.KindNotFound, domain.CodeNotFound)
	})
}

func TestSettings(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, db *sqldb.DB) {
		if v, ok, err := s.GetSetting(ctx, "engine.url"); err != nil || ok || v != "" {
			t.Fatalf("unset setting = %q, %v, %v", v, ok, err)
		}
		steps := []struct{ value, by string }{{"https://a.example.com", "admin1"}, {"https://b.example.com", "admin2"}}
		for i, st := range steps {
			if err := s.PutSetting(ctx, "engine.url", st.value, st.by, t0.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
			v, ok, err := s.GetSetting(ctx, "engine.url")
			if err != nil || !ok || v != st.value {
				t.Fatalf("after put %d: %q, %v, %v", i, v, ok, err)
			}
		}
		var by string
		if err := db.GetContext(ctx, &by, `SELECT updated_by FROM settings`); err != nil || by != "admin2" {
			t.Errorf("updated_by = %q, %v; want admin2 (upsert replaces)", by, err)
		}
		for i := 0; i < 2; i++ { // deleting twice is a no-op
			if err := s.DeleteSetting(ctx, "engine.url"); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, _ := s.GetSetting(ctx, "engine.url"); ok {
			t.Error("setting still present after delete")
		}
	})
}

func TestInstallationIDStable(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, _ *sqldb.DB) {
		for i, newID := range []string{"first-id", "second-id", "third-id"} {
			id, err := s.InstallationID(ctx, newID, t0.Add(time.Duration(i)*time.Hour))
			if err != nil || id != "first-id" {
				t.Fatalf("InstallationID(%q) = %q, %v; want first-id", newID, id, err)
			}
		}
	})
}

func TestRecordAudit(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, db *sqldb.DB) {
		entries := []ports.AuditEntry{
			{ID: "a1", At: t0, ActorKind: domain.PrincipalUser, ActorID: "admin", Action: "user.role_changed", Target: "u1",
				Details: map[string]any{"from": "member", "to": "viewer", "n": 2}},
			{At: t0, ActorKind: domain.PrincipalServiceAccount, ActorID: "sa", Action: "api_key.created", Target: "k1"},
		}
		for _, e := range entries {
			if err := s.RecordAudit(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		var rows []struct {
			ID      string `db:"id"`
			Action  string `db:"action"`
			Details string `db:"details"`
		}
		if err := db.SelectContext(ctx, &rows, `SELECT id, action, CAST(details AS TEXT) AS details FROM audit_log ORDER BY action DESC`); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].ID != "a1" || rows[1].ID == "" {
			t.Fatalf("audit rows = %+v", rows)
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(rows[0].Details), &d); err != nil || d["from"] != "member" || d["to"] != "viewer" || d["n"] != float64(2) {
			t.Errorf("details = %s (%v)", rows[0].Details, err)
		}
		if rows[1].Details != "{}" {
			t.Errorf("empty details stored as %q, want {}", rows[1].Details)
		}
	})
}

// The authentication hot path: one key lookup and one (usually skipped)
// touch per API-key request.
func BenchmarkAPIKeyAuthPath(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			s := identitystore.New(sqldbtest.Open(b, d))
			if err := s.CreateUser(ctx, domain.User{ID: "u", Email: "u@example.com", Role: domain.RoleMember, Status: domain.StatusActive, CreatedAt: t0, UpdatedAt: t0}); err != nil {
				b.Fatal(err)
			}
			if err := s.CreateAPIKey(ctx, domain.APIKey{ID: "k", Name: "k", Prefix: "td_", Hash: "h", UserID: "u", CreatedAt: t0}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k, err := s.GetAPIKeyByHash(ctx, "h")
				if err != nil {
					b.Fatal(err)
				}
				if err := s.TouchAPIKey(ctx, k.ID, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One UpdateUser transaction: lock admin set and user, write, apply effects.
func BenchmarkUpdateUser(b *testing.B) {
	for _, d := range sqldbtest.Dialects(b) {
		b.Run(string(d), func(b *testing.B) {
			s := identitystore.New(sqldbtest.Open(b, d))
			for _, id := range []string{"a", "b"} {
				if err := s.CreateUser(ctx, domain.User{ID: id, Email: id + "@example.com", Role: domain.RoleAdmin, Status: domain.StatusActive, CreatedAt: t0, UpdatedAt: t0}); err != nil {
					b.Fatal(err)
				}
			}
			roles := []domain.Role{domain.RoleMember, domain.RoleAdmin}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.UpdateUser(ctx, "a", func(u *domain.User, admins []string) error {
					if err := u.ChangeRole(roles[i%2], t0); err != nil {
						return err
					}
					return domain.RequireActiveAdminRemains(admins, *u)
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUpdateUserRetriesDeadlock makes PostgreSQL pick UpdateUser's transaction
// as a deadlock victim: another transaction holds the target row and then asks
// for the admin rows UpdateUser has locked. UpdateUser must retry and succeed
// rather than surface the deadlock.
func TestUpdateUserRetriesDeadlock(t *testing.T) {
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		t.Skipf("postgres: skipped (%s not set); SQLite has no row locks to deadlock on", sqldbtest.PostgresEnv)
	}
	db := sqldbtest.Open(t, sqldb.Postgres)
	s := identitystore.New(db)
	mustUser(t, s, "admin", "admin@example.com", domain.RoleAdmin, domain.StatusActive)
	mustUser(t, s, "m", "m@example.com", domain.RoleMember, domain.StatusActive)

	other, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(ctx, `SELECT id FROM users WHERE id = 'm' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var otherPID int
	if err := other.GetContext(ctx, &otherPID, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.UpdateUser(ctx, "m", func(u *domain.User, _ []string) error { return u.Rename("Renamed", t0) })
		done <- err
	}()
	// Wait until UpdateUser holds the admin row and waits for "m".
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting int
		if err := db.GetContext(ctx, &waiting, `SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, otherPID); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("UpdateUser never blocked on the locked row")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// UpdateUser has waited longest, so its deadlock check fires first and
	// aborts its own transaction; this statement then gets the lock.
	if _, err := other.ExecContext(ctx, `SELECT id FROM users WHERE role = 'admin' FOR UPDATE`); err != nil {
		t.Skipf("postgres aborted the other transaction instead of UpdateUser's (%v); retry not exercised", err)
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("UpdateUser surfaced a retryable failure: %v", err)
	}
	if u, _ := s.GetUser(ctx, "m"); u.FullName != "Renamed" {
		t.Errorf("full name = %q after retried update", u.FullName)
	}
}

// TestAdminStorm is issue 14 point 7's storm at the store: 4 active admins,
// rounds of 62 concurrent conflicting changes (demote, promote, suspend,
// reactivate) of the admins and of members, each checking the
// last-admin rule. No deadlock may occur (retried or not), nothing may fail
// as unavailable, and one active admin always remains.
func TestAdminStorm(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, db *sqldb.DB) {
		ids := []string{}
		for i := 0; i < 4; i++ {
			id := fmt.Sprintf("admin-%d", i)
			mustUser(t, s, id, id+"@example.com", domain.RoleAdmin, domain.StatusActive)
			ids = append(ids, id)
		}
		for i := 0; i < 4; i++ {
			id := fmt.Sprintf("member-%d", i)
			mustUser(t, s, id, id+"@example.com", domain.RoleMember, domain.StatusActive)
			ids = append(ids, id)
		}
		rounds, perRound := 5, 62
		var unexpected []error
		var mu sync.Mutex
		for r := 0; r < rounds; r++ {
			var wg sync.WaitGroup
			for i := 0; i < perRound; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					id := ids[(i*7+r)%len(ids)]
					_, err := s.UpdateUser(ctx, id, func(u *domain.User, admins []string) error {
						wasAdmin := u.IsActiveAdmin()
						switch (i + r) % 4 {
						case 0:
							u.Role = domain.RoleMember
						case 1:
							u.Role = domain.RoleAdmin
						case 2:
							u.Status = domain.StatusSuspended
						case 3:
							u.Status = domain.StatusActive
						}
						u.UpdatedAt = t0
						if wasAdmin && !u.IsActiveAdmin() {
							return domain.RequireActiveAdminRemains(admins, *u)
						}
						return nil
					})
					if err != nil && domain.CodeOf(err) != domain.CodeLastActiveAdminRequired {
						mu.Lock()
						unexpected = append(unexpected, err)
						mu.Unlock()
					}
				}(i)
			}
			wg.Wait()
		}
		deadlocks, other := db.ConcurrencyFailures()
		t.Logf("%s: %d changes, %d deadlocks, %d other retried races, %d failures", db.Dialect, rounds*perRound, deadlocks, other, len(unexpected))
		if deadlocks != 0 || len(unexpected) != 0 {
			t.Errorf("%d deadlocks; %d failures (first: %v)", deadlocks, len(unexpected), first(unexpected))
		}
		var active int
		if err := db.GetContext(ctx, &active, `SELECT COUNT(*) FROM users WHERE role = 'admin' AND status = 'active'`); err != nil || active < 1 {
			t.Errorf("%d active admins remain (%v)", active, err)
		}
	})
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
