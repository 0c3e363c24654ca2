package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// MaxInviteTTL bounds an invitation's lifetime.
const MaxInviteTTL = 7 * 24 * time.Hour

// InviteInput invites a party to a thread.
type InviteInput struct {
	ThreadID    string
	Role        string
	AccessLevel string // external (default) | observer | participant
	ExpiresIn   string // "<int>m|h|d", default 24h
}

// Invitation is a signed thread token.
type Invitation struct {
	Token       string
	ThreadID    string
	Role        string
	AccessLevel string
	ExpiresAt   time.Time
}

type inviteClaims struct {
	ThreadID    string   `json:"threadId"`
	ContractID  string   `json:"contractId"`
	Role        string   `json:"role"`
	AccessLevel string   `json:"accessLevel"`
	Permissions []string `json:"permissions"`
	InvitedBy   string   `json:"invitedBy"`
	IssuedAt    int64    `json:"iat"`
	ExpiresAt   int64    `json:"exp"`
	ID          string   `json:"jti"`
}

// Invite issues a thread token (an HS256 JWT keyed by a key derived from the
// installation secret). Only the thread's owner may invite.
func (t *Threads) Invite(ctx context.Context, in InviteInput) (Invitation, error) {
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return Invitation{}, err
	}
	if in.ThreadID == "" {
		return Invitation{}, domain.Invalid("threadId", "no thread to invite to: start or join a thread first, or pass threadId")
	}
	if in.Role == "" {
		return Invitation{}, domain.Invalid("role", "Missing required field: role")
	}
	level := in.AccessLevel
	if level == "" {
		level = AccessExternal
	}
	if level != AccessExternal && level != AccessObserver && level != AccessParticipant {
		return Invitation{}, domain.Invalid("accessLevel", "accessLevel must be external, observer or participant")
	}
	ttl, err := ParseExpiresIn(in.ExpiresIn)
	if err != nil {
		return Invitation{}, err
	}
	th, err := t.store.GetThread(ctx, in.ThreadID)
	if err != nil {
		return Invitation{}, err
	}
	if th.OwnerID != p.ID {
		a, err := t.store.GetAccess(ctx, th.ID, p.ID)
		if err != nil || a.AccessLevel != AccessOwner {
			return Invitation{}, domain.Forbidden("only the thread's owner can invite parties")
		}
	}
	if th.ContractName != "" {
		c, err := t.contract(ctx, th.ContractName, th.ContractVersion)
		if err != nil {
			return Invitation{}, err
		}
		if !hasString(c.Parties, in.Role) {
			return Invitation{}, domain.Invalid("role", "role %q is not a party of contract %s", in.Role, c.Ref())
		}
	}
	now := t.now()
	perms := []string{"read", "write"}
	if level == AccessObserver {
		perms = []string{"read"}
	}
	cl := inviteClaims{ThreadID: th.ID, ContractID: th.ContractID, Role: in.Role, AccessLevel: level,
		Permissions: perms, InvitedBy: p.ID, IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix(), ID: uuid.NewString()}
	tok, err := t.signToken(cl)
	if err != nil {
		return Invitation{}, err
	}
	return Invitation{Token: tok, ThreadID: th.ID, Role: in.Role, AccessLevel: level, ExpiresAt: time.Unix(cl.ExpiresAt, 0).UTC()}, nil
}

// ParseExpiresIn reads "<int>m|h|d" (empty = 24h), at most 7 days.
func ParseExpiresIn(s string) (time.Duration, error) {
	if s == "" {
		return 24 * time.Hour, nil
	}
	bad := domain.Invalid("expiresIn", "expiresIn must look like 30m, 24h or 7d (at most 7d)")
	if len(s) < 2 {
		return 0, bad
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, bad
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'm':
		unit = time.Minute
	case 'h':
		unit = time.Hour
	case 'd':
		unit = 24 * time.Hour
	default:
		return 0, bad
	}
	if n > int(MaxInviteTTL/unit) {
		return 0, bad
	}
	return time.Duration(n) * unit, nil
}

// JoinInput joins a thread by token, or directly by id (+ optional role).
type JoinInput struct {
	Token    string
	ThreadID string
	Role     string
}

// JoinResult is the caller's access after joining.
type JoinResult struct {
	Thread      ports.ThreadRecord
	Role        string
	AccessLevel string
}

// Join grants the caller access to a thread. A token carries role and level;
// a direct join (same installation) gives participant. An owner stays owner.
func (t *Threads) Join(ctx context.Context, in JoinInput) (JoinResult, error) {
	p, err := Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return JoinResult{}, err
	}
	role, level, threadID := in.Role, AccessParticipant, in.ThreadID
	var expires *time.Time
	if in.Token != "" {
		cl, err := t.verifyToken(in.Token)
		if err != nil {
			return JoinResult{}, err
		}
		role, level, threadID = cl.Role, cl.AccessLevel, cl.ThreadID
		e := time.Unix(cl.ExpiresAt, 0).UTC()
		expires = &e
	} else if threadID == "" {
		return JoinResult{}, domain.Invalid("threadId", "Missing required field: threadToken or threadId")
	}
	if role == "" {
		role = "participant"
	}
	th, err := t.store.GetThread(ctx, threadID)
	if err != nil {
		return JoinResult{}, err
	}
	if in.Token == "" && th.ContractName != "" && in.Role != "" {
		c, err := t.contract(ctx, th.ContractName, th.ContractVersion)
		if err != nil {
			return JoinResult{}, err
		}
		if !hasString(c.Parties, role) {
			return JoinResult{}, domain.Invalid("role", "role %q is not a party of contract %s", role, c.Ref())
		}
	}
	if a, err := t.store.GetAccess(ctx, th.ID, p.ID); err == nil && a.AccessLevel == AccessOwner {
		return JoinResult{Thread: th, Role: a.Role, AccessLevel: AccessOwner}, nil
	}
	grant := ports.ThreadAccess{ThreadID: th.ID, PrincipalKind: string(p.Kind), PrincipalID: p.ID, Role: role,
		AccessLevel: level, GrantedBy: p.ID, GrantedAt: t.now(), ExpiresAt: expires}
	if err := t.store.GrantAccess(ctx, grant); err != nil {
		return JoinResult{}, err
	}
	return JoinResult{Thread: th, Role: role, AccessLevel: level}, nil
}

var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

func (t *Threads) signToken(cl inviteClaims) (string, error) {
	body, err := json.Marshal(cl)
	if err != nil {
		return "", domain.Internal(err, "could not sign the invitation")
	}
	msg := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(body)
	m := hmac.New(sha256.New, t.inviteKey)
	m.Write([]byte(msg))
	return msg + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

func (t *Threads) verifyToken(tok string) (inviteClaims, error) {
	bad := domain.E(domain.KindUnauthenticated, domain.CodeUnauthenticated, "invalid or expired thread token")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != jwtHeader {
		return inviteClaims{}, bad
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return inviteClaims{}, bad
	}
	m := hmac.New(sha256.New, t.inviteKey)
	m.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return inviteClaims{}, bad
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return inviteClaims{}, bad
	}
	var cl inviteClaims
	if err := json.Unmarshal(body, &cl); err != nil || cl.ThreadID == "" {
		return inviteClaims{}, bad
	}
	if t.now().Unix() >= cl.ExpiresAt {
		return inviteClaims{}, bad
	}
	return cl, nil
}

func deriveKey(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}
