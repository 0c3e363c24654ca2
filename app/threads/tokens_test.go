package threads

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/threadengine/engine/domain"
)

// legacyToken builds a token as engines before go-jose signed them: a
// hand-made HS256 JWT with no "kid", keyed by the version's invitation key.
func legacyToken(t *testing.T, secret []byte, claims map[string]any) string {
	t.Helper()
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	msg := head + "." + base64.RawURLEncoding.EncodeToString(body)
	m := hmac.New(sha256.New, deriveKey(secret, inviteKeyLabel))
	m.Write([]byte(msg))
	return msg + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signWith signs claims as a go-jose token with an explicit key, algorithm and kid.
func signWith(t *testing.T, alg jose.SignatureAlgorithm, key []byte, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestInvitationTokenIsTypedJWS(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	f.threads.UseChainKeys(domain.ChainKeys{Current: "3", Secrets: map[string][]byte{"3": []byte("s3")}})
	owner := as("k1", domain.RoleMember)
	th, _ := f.threads.Application().Commands.StartThread.Handle(owner, StartThreadInput{Contract: "order", Role: "checkout"})
	inv, err := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{ThreadID: th.ID, Role: "warehouse", AccessLevel: "observer", ExpiresIn: "2h"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(inv.Token, []jose.SignatureAlgorithm{jose.HS256})
	if err != nil {
		t.Fatal(err)
	}
	if h := tok.Headers[0]; h.KeyID != "3" || h.Algorithm != "HS256" {
		t.Fatalf("header %+v, want kid 3, HS256", h)
	}
	var reg jwt.Claims
	var cl inviteClaims
	if err := tok.Claims(deriveKey([]byte("s3"), inviteKeyLabel), &reg, &cl); err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now().UTC()
	if !reg.Expiry.Time().Equal(inv.ExpiresAt) || !inv.ExpiresAt.Equal(now.Add(2*time.Hour)) || reg.ID == "" || !reg.IssuedAt.Time().Equal(now) {
		t.Fatalf("registered claims %+v (invitation expires %v)", reg, inv.ExpiresAt)
	}
	if cl.ThreadID != th.ID || cl.ContractID != "order" || cl.Role != "warehouse" || cl.AccessLevel != domain.AccessObserver ||
		cl.InvitedBy != "k1" || strings.Join(cl.Permissions, ",") != "read" {
		t.Fatalf("claims %+v", cl)
	}
}

func TestInvitationTokensVerify(t *testing.T) {
	t.Parallel()
	f := newThreadsFixture(t)
	v1 := domain.ChainKeys{Current: "1", Secrets: map[string][]byte{"1": []byte("one")}}
	f.threads.UseChainKeys(v1)
	owner := as("k1", domain.RoleMember)
	th, _ := f.threads.Application().Commands.StartThread.Handle(owner, StartThreadInput{Contract: "order", Role: "checkout"})
	beforeRotation, err := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{ThreadID: th.ID, Role: "warehouse"})
	if err != nil {
		t.Fatal(err)
	}
	f.threads.UseChainKeys(domain.ChainKeys{Current: "2", Secrets: map[string][]byte{"1": []byte("one"), "2": []byte("two")}})
	afterRotation, err := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{ThreadID: th.ID, Role: "warehouse", AccessLevel: "observer"})
	if err != nil {
		t.Fatal(err)
	}
	exp := f.clock.Now().Add(time.Hour).Unix()
	claims := map[string]any{"threadId": th.ID, "contractId": "order", "role": "warehouse", "accessLevel": "participant",
		"permissions": []string{"read", "write"}, "invitedBy": "k1", "iat": f.clock.Now().Unix(), "exp": exp, "jti": "j"}
	key1, key2 := deriveKey([]byte("one"), inviteKeyLabel), deriveKey([]byte("two"), inviteKeyLabel)
	tampered := func(tok string) string {
		p := strings.Split(tok, ".")
		body, _ := base64.RawURLEncoding.DecodeString(p[1])
		body = []byte(strings.Replace(string(body), `"observer"`, `"participant"`, 1))
		return p[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + p[2]
	}
	for _, c := range []struct {
		name, token string
		ok          bool
		level       domain.AccessLevel
	}{
		{"signed before the rotation (kid 1)", beforeRotation.Token, true, domain.AccessExternal},
		{"signed with the current key (kid 2)", afterRotation.Token, true, domain.AccessObserver},
		{"pre-upgrade token without kid, old key", legacyToken(t, []byte("one"), claims), true, domain.AccessParticipant},
		{"pre-upgrade token without kid, current key", legacyToken(t, []byte("two"), claims), true, domain.AccessParticipant},
		{"pre-upgrade token, unknown secret", legacyToken(t, []byte("other"), claims), false, ""},
		{"kid naming another version than the signer", signWith(t, jose.HS256, key1, "2", claims), false, ""},
		{"unknown kid", signWith(t, jose.HS256, key2, "9", claims), false, ""},
		{"HS512", signWith(t, jose.HS512, append(key2, key2...), "2", claims), false, ""},
		{"payload changed after signing", tampered(afterRotation.Token), false, ""},
		{"not a JWS", "a.b.c", false, ""},
		{"no thread", signWith(t, jose.HS256, key2, "2", map[string]any{"exp": exp, "role": "x"}), false, ""},
		{"no expiry", signWith(t, jose.HS256, key2, "2", map[string]any{"threadId": th.ID, "role": "x"}), false, ""},
		{"unknown access level", signWith(t, jose.HS256, key2, "2", map[string]any{"threadId": th.ID, "exp": exp, "accessLevel": "owner"}), false, ""},
	} {
		cl, _, err := inviteKeysOf(f.threads.keys).verifyToken(c.token)
		if c.ok && (err != nil || cl.ThreadID != th.ID || cl.AccessLevel != c.level) {
			t.Errorf("%s: %+v %v, want accepted at %s", c.name, cl, err, c.level)
		}
		if !c.ok && domain.CodeOf(err) != domain.CodeUnauthenticated {
			t.Errorf("%s: %+v %v, want invalid thread token", c.name, cl, err)
		}
	}
	// A pre-upgrade token joins as it did before.
	j, err := f.threads.Application().Commands.JoinThread.Handle(as("k2", domain.RoleMember), JoinInput{Token: legacyToken(t, []byte("one"), claims)})
	if err != nil || j.Role != "warehouse" || j.AccessLevel != domain.AccessParticipant {
		t.Fatalf("join with a pre-upgrade token: %+v %v", j, err)
	}
}

// A verify-only alternate of a hash-chain version (another replica's old
// per-replica key) never verifies invitations.
func TestInviteKeysLeaveOutAlternates(t *testing.T) {
	k := domain.ChainKeys{Current: "2", Secrets: map[string][]byte{"1": []byte("one"), "2": []byte("two"),
		domain.AlternateKey("1", "fp"): []byte("alt")}}
	got := inviteKeysOf(k)
	if len(got) != 2 || got[0].ID != "2" || got[1].ID != "1" {
		t.Fatalf("invitation keys %+v, want versions 2 and 1 only", got)
	}
}

func TestExpiresInBoundIsTheOperators(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		limit time.Duration
		want  time.Duration
		err   string
	}{
		{"", 0, 24 * time.Hour, ""},
		{"30d", 0, 30 * 24 * time.Hour, ""},
		{"31d", 0, 0, "at most 30d"},
		{"721h", 0, 0, "at most 30d"},
		{"8d", 7 * 24 * time.Hour, 0, "at most 7d"},
		{"90d", 90 * 24 * time.Hour, 90 * 24 * time.Hour, ""},
		{"", 2 * time.Hour, 2 * time.Hour, ""},
		{"3h", 2 * time.Hour, 0, "at most 2h"},
		{"0d", 0, 0, "expiresIn"},
		{"1w", 0, 0, "expiresIn"},
	}
	for _, c := range cases {
		got, err := ParseExpiresIn(c.in, c.limit)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || domain.CodeOf(err) != domain.CodeValidationFailed {
				t.Errorf("%q (limit %v): %v, %v; want an error with %q", c.in, c.limit, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q (limit %v): %v, %v; want %v", c.in, c.limit, got, err, c.want)
		}
	}
	// The module applies the operator's bound to inviteParty.
	f := newThreadsFixture(t)
	f.threads.SetOptions(Options{InvitationMaxTTL: time.Hour})
	owner := as("k1", domain.RoleMember)
	th, _ := f.threads.Application().Commands.StartThread.Handle(owner, StartThreadInput{Contract: "order", Role: "checkout"})
	if _, err := f.threads.Application().Commands.InviteParty.Handle(owner, InviteInput{ThreadID: th.ID, Role: "warehouse", ExpiresIn: "2h"}); err == nil || !strings.Contains(err.Error(), "at most 1h") {
		t.Fatalf("2h invitation under a 1h bound: %v", err)
	}
}
