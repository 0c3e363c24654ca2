package domain

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"
)

func TestSessionToken(t *testing.T) {
	t.Parallel()
	tok, hash, err := NewSessionToken(rand.Reader)
	if err != nil || !LooksLikeSessionToken(tok) || hash != HashSecret(tok) {
		t.Fatalf("NewSessionToken = %q %q %v", tok, hash, err)
	}
	for _, bad := range []string{"", "tes_", tok + "x", "td_" + tok[4:]} {
		if LooksLikeSessionToken(bad) {
			t.Errorf("LooksLikeSessionToken(%q) = true", bad)
		}
	}
}

func TestCheckSession(t *testing.T) {
	t.Parallel()
	now := idT0.Add(time.Hour)
	revokedAt := idT0
	past := idT0
	active := &User{ID: "u", Role: RoleMember, Status: StatusActive}
	suspended := &User{ID: "u", Role: RoleMember, Status: StatusSuspended}
	invited := &User{ID: "u", Role: RoleMember, Status: StatusInvited}
	sa := &ServiceAccount{ID: "s", Role: RoleMember, Active: true}
	saOff := &ServiceAccount{ID: "s", Role: RoleMember, Active: false}
	goodKey := &APIKey{ID: "k"}
	revokedKey := &APIKey{ID: "k", RevokedAt: &revokedAt}
	expiredKey := &APIKey{ID: "k", ExpiresAt: &past}

	userSess := Session{ID: "s1", PrincipalKind: PrincipalUser, PrincipalID: "u", Source: SessionFromOIDC, CreatedAt: idT0, ExpiresAt: idT0.Add(DefaultSessionTTL)}
	keySess := userSess
	keySess.Source, keySess.SourceKeyID = SessionFromAPIKey, "k"
	saSess := keySess
	saSess.PrincipalKind, saSess.PrincipalID = PrincipalServiceAccount, "s"
	revoked := userSess
	revoked.RevokedAt = &revokedAt

	cases := []struct {
		name string
		s    Session
		subj SessionSubject
		at   time.Time
		want error
	}{
		{"valid user session", userSess, SessionSubject{User: active}, now, nil},
		{"revoked", revoked, SessionSubject{User: active}, now, ErrSessionRevoked},
		{"expired at 8h", userSess, SessionSubject{User: active}, idT0.Add(8 * time.Hour), ErrSessionExpired},
		{"just before expiry", userSess, SessionSubject{User: active}, idT0.Add(8*time.Hour - time.Nanosecond), nil},
		{"suspended user", userSess, SessionSubject{User: suspended}, now, ErrUserNotActive},
		{"invited user", userSess, SessionSubject{User: invited}, now, ErrUserNotActive},
		{"user gone", userSess, SessionSubject{}, now, ErrUserNotActive},
		{"from key", keySess, SessionSubject{User: active, SourceKey: goodKey}, now, nil},
		{"source key revoked", keySess, SessionSubject{User: active, SourceKey: revokedKey}, now, ErrAPIKeyRevoked},
		{"source key expired", keySess, SessionSubject{User: active, SourceKey: expiredKey}, now, ErrAPIKeyExpired},
		{"source key gone", keySess, SessionSubject{User: active}, now, ErrSessionRevoked},
		{"service account", saSess, SessionSubject{ServiceAccount: sa, SourceKey: goodKey}, now, nil},
		{"service account disabled", saSess, SessionSubject{ServiceAccount: saOff, SourceKey: goodKey}, now, ErrUserNotActive},
	}
	for _, c := range cases {
		if err := CheckSession(c.s, c.subj, c.at); !errors.Is(err, c.want) && !(err == nil && c.want == nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestPrincipalOfAndCan(t *testing.T) {
	t.Parallel()
	u := PrincipalOf(SessionSubject{User: &User{ID: "u", Email: "a@b.io", FullName: "A", Role: RoleAdmin}})
	if u.Kind != PrincipalUser || u.Role != RoleAdmin || u.Email != "a@b.io" || !u.IsHuman() {
		t.Fatalf("user principal %+v", u)
	}
	s := PrincipalOf(SessionSubject{ServiceAccount: &ServiceAccount{ID: "s", Name: "bot", Role: RoleMember}})
	if s.Kind != PrincipalServiceAccount || s.IsHuman() || s.Scope != ScopeCompany || s.PartyScoped() || u.PartyScoped() {
		t.Fatalf("service principal %+v", s)
	}
	ps := PrincipalOf(SessionSubject{ServiceAccount: &ServiceAccount{ID: "s", Name: "bot", Role: RoleMember, Scope: ScopeParty}})
	if ps.Scope != ScopeParty || !ps.PartyScoped() {
		t.Fatalf("party-scoped service principal %+v", ps)
	}
	// A user is never party-scoped, whatever the field says.
	if (Principal{Kind: PrincipalUser, Scope: ScopeParty}).PartyScoped() {
		t.Fatal("a human principal is party-scoped")
	}
	matrix := map[Permission][3]bool{ // admin, member, viewer (humans)
		PermThreadsRead: {true, true, true}, PermThreadsWrite: {true, true, false},
		PermContractsRead: {true, true, true}, PermContractsWrite: {true, true, false},
		PermUsersRead: {true, true, true}, PermUsersManage: {true, false, false},
		PermOwnKeys: {true, true, true}, PermAllKeys: {true, false, false}, PermSettingsManage: {true, false, false},
	}
	for perm, want := range matrix {
		for i, role := range []Role{RoleAdmin, RoleMember, RoleViewer} {
			p := Principal{Kind: PrincipalUser, ID: "u", Role: role}
			if p.Can(perm) != want[i] {
				t.Errorf("%s %s: Can = %v", role, perm, !want[i])
			}
			if err := p.Require(perm); (err == nil) != want[i] || (err != nil && KindOf(err) != KindForbidden) {
				t.Errorf("%s %s: Require = %v", role, perm, err)
			}
		}
		// service accounts never manage people, keys or settings
		sp := Principal{Kind: PrincipalServiceAccount, ID: "s", Role: RoleMember}
		humanOnly := perm == PermUsersRead || perm == PermUsersManage || perm == PermOwnKeys || perm == PermAllKeys || perm == PermSettingsManage
		if sp.Can(perm) != (want[1] && !humanOnly) {
			t.Errorf("service account %s: Can = %v", perm, sp.Can(perm))
		}
	}
}
