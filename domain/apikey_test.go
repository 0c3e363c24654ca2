package domain

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAPIKeySecret(t *testing.T) {
	t.Parallel()
	s, err := NewAPIKeySecret(rand.Reader)
	if err != nil || !strings.HasPrefix(s, "td_") || !LooksLikeAPIKey(s) {
		t.Fatalf("NewAPIKeySecret = %q, %v", s, err)
	}
	s2, _ := NewAPIKeySecret(rand.Reader)
	if s == s2 {
		t.Fatal("two keys are equal")
	}
	if DisplayPrefix(s) != s[:10] || len(HashSecret(s)) != 64 || HashSecret(s) == HashSecret(s2) {
		t.Fatal("prefix or hash wrong")
	}
	for _, bad := range []string{"", "td_", "td_short", "xx_" + s[3:], s + "x", "tes_" + s[3:]} {
		if LooksLikeAPIKey(bad) {
			t.Errorf("LooksLikeAPIKey(%q) = true", bad)
		}
	}
	if _, err := NewAPIKeySecret(bytes.NewReader(nil)); KindOf(err) != KindInternal {
		t.Fatalf("short random source: %v", err)
	}
	if !SecretsEqual("abc", "abc") || SecretsEqual("abc", "abd") || SecretsEqual("abc", "ab") {
		t.Fatal("SecretsEqual wrong")
	}
}

func TestNewAPIKey(t *testing.T) {
	t.Parallel()
	future, past := idT0.Add(time.Hour), idT0.Add(-time.Hour)
	cases := []struct {
		name, keyName, user, sa string
		exp                     *time.Time
		field                   string
	}{
		{"personal", "laptop", "u", "", nil, ""},
		{"service", "ci", "", "sa", &future, ""},
		{"no name", "  ", "u", "", nil, "name"},
		{"long name", strings.Repeat("k", 101), "u", "", nil, "name"},
		{"no owner", "k", "", "", nil, "service_account_id"},
		{"two owners", "k", "u", "sa", nil, "service_account_id"},
		{"expired", "k", "u", "", &past, "expires_at"},
		{"expires now", "k", "u", "", &idT0, "expires_at"},
	}
	for _, c := range cases {
		k, err := NewAPIKey("id", c.keyName, "td_secret_value", c.user, c.sa, "creator", c.exp, idT0)
		if c.field == "" {
			if err != nil || k.Hash != HashSecret("td_secret_value") || k.Prefix != "td_secret_" || k.Personal() != (c.user != "") {
				t.Errorf("%s: %+v %v", c.name, k, err)
			}
			continue
		}
		if AsError(err).Field != c.field || KindOf(err) != KindInvalid {
			t.Errorf("%s: got %v, want invalid %s", c.name, err, c.field)
		}
	}
}

func TestCheckUsableAndRevoke(t *testing.T) {
	t.Parallel()
	exp := idT0.Add(time.Hour)
	k := APIKey{ID: "k", ExpiresAt: &exp}
	if err := k.CheckUsable(idT0); err != nil {
		t.Fatal(err)
	}
	if err := k.CheckUsable(exp); !errors.Is(err, ErrAPIKeyExpired) {
		t.Fatalf("at expiry: %v", err)
	}
	k.Revoke(idT0)
	k.Revoke(idT0.Add(time.Minute))
	if !k.RevokedAt.Equal(idT0) {
		t.Fatal("second revoke moved RevokedAt")
	}
	if err := k.CheckUsable(idT0); !errors.Is(err, ErrAPIKeyRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	if KindOf(ErrAPIKeyRevoked) != KindUnauthenticated {
		t.Fatal("revoked key must be unauthenticated")
	}
}

func TestNewServiceAccount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		role      Role
		scope     ReadScope
		field     string
		wantScope ReadScope
	}{
		{"bot", RoleMember, "", "", ScopeCompany}, {"bot", RoleViewer, ScopeParty, "", ScopeParty},
		{"bot", RoleMember, ScopeCompany, "", ScopeCompany},
		{"bot", RoleMember, ReadScope("own"), "scope", ""},
		{"bot", RoleAdmin, "", "service_account_role", ""}, {"bot", Role("x"), "", "service_account_role", ""},
		{" ", RoleMember, "", "name", ""},
	} {
		sa, err := NewServiceAccount("id", c.name, c.role, c.scope, "u", idT0)
		if c.field == "" {
			if err != nil || !sa.Active || sa.Role != c.role || sa.Scope != c.wantScope {
				t.Errorf("%s/%s: %+v %v", c.name, c.role, sa, err)
			}
			continue
		}
		if AsError(err).Field != c.field {
			t.Errorf("%s/%s: got %v, want field %s", c.name, c.role, err, c.field)
		}
	}
}
