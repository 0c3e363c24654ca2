package threads

// Invitation tokens: compact JWS (HS256) with typed claims, signed by go-jose.

import (
	"crypto/hmac"
	"crypto/sha256"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/threadengine/engine/domain"
)

// inviteClaims are a thread token's private claims; the registered ones
// (iat, exp, jti) are jwt.Claims. SDKs treat the token as opaque.
type inviteClaims struct {
	ThreadID    string             `json:"threadId"`
	ContractID  string             `json:"contractId"`
	Role        string             `json:"role"`
	AccessLevel domain.AccessLevel `json:"accessLevel"`
	Permissions []string           `json:"permissions"`
	InvitedBy   string             `json:"invitedBy"`
}

// inviteKey is the invitation key derived from one chain key version; the
// version is the token's "kid".
type inviteKey struct {
	ID  string
	Key []byte
}

const inviteKeyLabel = "threadengine-invite-v1"

// invitationKeys sign invitations with the first (the current version's)
// and verify them with any.
type invitationKeys []inviteKey

// inviteKeysOf derives one invitation key per version, current first: a
// token signed before a rotation stays valid until it expires.
func inviteKeysOf(k domain.ChainKeys) invitationKeys {
	out := invitationKeys{{ID: k.Current, Key: deriveKey(k.CurrentSecret(), inviteKeyLabel)}}
	for _, v := range k.OlderVersions() {
		out = append(out, inviteKey{ID: v, Key: deriveKey(k.Secrets[v], inviteKeyLabel)})
	}
	return out
}

// signToken signs cl with the current key, naming its version in "kid".
func (keys invitationKeys) signToken(cl inviteClaims, issued, expires time.Time) (string, error) {
	k := keys[0]
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: k.Key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), k.ID))
	if err != nil {
		return "", domain.Internal(err, "could not sign the invitation")
	}
	reg := jwt.Claims{IssuedAt: jwt.NewNumericDate(issued), Expiry: jwt.NewNumericDate(expires), ID: uuid.NewString()}
	tok, err := jwt.Signed(signer).Claims(reg).Claims(cl).Serialize()
	if err != nil {
		return "", domain.Internal(err, "could not sign the invitation")
	}
	return tok, nil
}

// verifyToken checks a token's signature (HS256 only) and shape and returns
// its claims and expiry; the expiry itself is the domain's rule
// (grant_expired), judged on join. A token names its key version in "kid";
// one without a kid (issued before invitations were signed by go-jose) is
// tried against every version, so tokens issued before an upgrade keep
// working until they expire (at most threads.invitation_max_ttl).
func (keys invitationKeys) verifyToken(s string) (inviteClaims, time.Time, error) {
	bad := domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated, "invalid thread token")
	tok, err := jwt.ParseSigned(s, []jose.SignatureAlgorithm{jose.HS256})
	if err != nil || len(tok.Headers) != 1 {
		return inviteClaims{}, time.Time{}, bad
	}
	kid := tok.Headers[0].KeyID
	for _, k := range keys {
		if kid != "" && k.ID != kid {
			continue
		}
		var reg jwt.Claims
		var cl inviteClaims
		if err := tok.Claims(k.Key, &reg, &cl); err != nil {
			continue // not this key's signature
		}
		if cl.ThreadID == "" || reg.Expiry == nil {
			return inviteClaims{}, time.Time{}, bad
		}
		level, err := domain.ParseInviteLevel(string(cl.AccessLevel))
		if err != nil {
			return inviteClaims{}, time.Time{}, bad
		}
		cl.AccessLevel = level
		return cl, reg.Expiry.Time().UTC(), nil
	}
	return inviteClaims{}, time.Time{}, bad
}

func deriveKey(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}
