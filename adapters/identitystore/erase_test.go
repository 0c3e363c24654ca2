package identitystore_test

import (
	"encoding/json"
	"testing"

	"github.com/threadengine/engine/adapters/identitystore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Erasing an archived user removes its email and name from the users row,
// its sessions, its sign-in binding and the audit log (every occurrence of
// the email, and its fields in the entries about or by the user), in one
// transaction; other users' rows and entries are untouched; the user keeps
// its id.
func TestEraseUserRemovesPersonalData(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *identitystore.Store, db *sqldb.DB) {
		mustUser(t, s, "admin", "admin@example.com", domain.RoleAdmin, domain.StatusActive)
		mustUser(t, s, "u1", "Ann.Lee@Example.com", domain.RoleMember, domain.StatusActive)
		mustUser(t, s, "u2", "bob@example.com", domain.RoleMember, domain.StatusActive)
		mustKey(t, s, "k1", "u1", "", t0)
		mustSession(t, s, "s1", domain.PrincipalUser, "u1", "")
		mustSession(t, s, "s2", domain.PrincipalUser, "u2", "")
		for _, b := range []ports.IdentityBinding{
			{Issuer: "https://idp.example.com", Subject: "sub-u1", UserID: "u1", Email: "ann.lee@example.com", Active: true, CreatedAt: t0},
			{Issuer: "https://idp.example.com", Subject: "sub-u2", UserID: "u2", Email: "bob@example.com", Active: true, CreatedAt: t0},
		} {
			if err := s.CreateBinding(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		entries := []ports.AuditEntry{
			{ID: "a1", At: t0, ActorKind: domain.PrincipalUser, ActorID: "admin", Action: "user.invited", Target: "u1",
				Details: map[string]any{"email": "ann.lee@example.com", "role": "member"}},
			{ID: "a2", At: t0, ActorKind: domain.PrincipalUser, ActorID: "u1", Action: "user.activated", Target: "u1",
				Details: map[string]any{"email": "ann.lee@example.com", "via": "registry"}},
			{ID: "a3", At: t0, ActorKind: domain.PrincipalUser, ActorID: "admin", Action: "user.updated", Target: "u1",
				Details: map[string]any{"full_name": "Ann Lee"}},
			{ID: "a4", At: t0, ActorKind: domain.PrincipalUser, ActorID: "admin", Action: "note", Target: "x",
				Details: map[string]any{"list": []any{"cc: ANN.LEE@example.com", 3}}},
			{ID: "a5", At: t0, ActorKind: domain.PrincipalUser, ActorID: "admin", Action: "user.invited", Target: "u2",
				Details: map[string]any{"email": "bob@example.com", "full_name": "Ann Lee"}},
		}
		for _, e := range entries {
			if err := s.RecordAudit(ctx, e); err != nil {
				t.Fatal(err)
			}
		}

		// Not archived: refused, nothing changes.
		_, err := s.UpdateUser(ctx, "u1", func(u *domain.User, _ []string) error { return u.Erase(t0) })
		wantCode(t, err, domain.KindConflict, domain.CodeUserNotArchived)

		if _, err := s.UpdateUser(ctx, "u1", func(u *domain.User, _ []string) error {
			return u.ChangeStatusByAdmin(domain.StatusArchived, t0)
		}); err != nil {
			t.Fatal(err)
		}
		u, err := s.UpdateUser(ctx, "u1", func(u *domain.User, _ []string) error { return u.Erase(t0) })
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUser(ctx, "u1")
		if err != nil || got.Email != "erased-u1@erased.invalid" || got.FullName != "" || got.ErasedAt == nil ||
			!got.ErasedAt.Equal(micro(t0)) || got.Status != domain.StatusArchived || u.Email != got.Email {
			t.Fatalf("erased user %+v, %v", got, err)
		}
		if _, err := s.GetUserByEmail(ctx, "ann.lee@example.com"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("the old email still finds a user: %v", err)
		}
		// The address is free again: the person can be invited anew (a new id).
		mustUser(t, s, "u1-again", "ann.lee@example.com", domain.RoleViewer, domain.StatusInvited)

		if _, err := s.GetSessionByTokenHash(ctx, "tok-s1"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("session of the erased user: %v", err)
		}
		if _, err := s.GetSessionByTokenHash(ctx, "tok-s2"); err != nil {
			t.Fatalf("another user's session: %v", err)
		}
		if _, err := s.GetBindingByUser(ctx, "u1"); domain.KindOf(err) != domain.KindNotFound {
			t.Fatalf("binding of the erased user: %v", err)
		}
		if _, err := s.GetBindingByUser(ctx, "u2"); err != nil {
			t.Fatalf("another user's binding: %v", err)
		}

		log, err := s.ListAudit(ctx, ports.AuditFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]ports.AuditEntry{}
		for _, e := range log {
			byID[e.ID] = e
		}
		want := map[string]map[string]any{
			"a1": {"email": "erased-u1@erased.invalid", "role": "member"},
			"a2": {"email": "erased-u1@erased.invalid", "via": "registry"},
			"a3": {"full_name": ""},
			"a4": {"list": []any{"cc: erased-u1@erased.invalid", float64(3)}},
			"a5": {"email": "bob@example.com", "full_name": "Ann Lee"}, // another user's entry: the name is not the email
		}
		for id, w := range want {
			e, ok := byID[id]
			if !ok {
				t.Fatalf("audit entry %s is gone", id)
			}
			if g := jsonText(t, e.Details); g != jsonText(t, w) {
				t.Errorf("audit %s details %s, want %s", id, g, jsonText(t, w))
			}
		}
		if byID["a2"].ActorID != "u1" || byID["a1"].Target != "u1" {
			t.Errorf("entries lost their pseudonymous ids: %+v %+v", byID["a1"], byID["a2"])
		}

		// Erasing again changes nothing; an erased user cannot be changed.
		again, err := s.UpdateUser(ctx, "u1", func(u *domain.User, _ []string) error { return u.Erase(t0.Add(1)) })
		if err != nil || !again.ErasedAt.Equal(*got.ErasedAt) {
			t.Fatalf("again: %+v %v", again, err)
		}
		_, err = s.UpdateUser(ctx, "u1", func(u *domain.User, _ []string) error { return u.Rename("Ann", t0) })
		wantCode(t, err, domain.KindConflict, domain.CodeInvalidStatusTransition)
	})
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
