package domain

import (
	"time"
)

// AccessLevel is what a party may do on a thread. Levels are ordered:
// observer < external < participant < owner.
type AccessLevel string

const (
	// AccessOwner started the thread: it writes, invites, completes and cancels.
	AccessOwner AccessLevel = "owner"
	// AccessParticipant writes steps and refs.
	AccessParticipant AccessLevel = "participant"
	// AccessExternal writes steps and refs (invitation default; reads are
	// meant to be limited to its own data).
	AccessExternal AccessLevel = "external"
	// AccessObserver only reads.
	AccessObserver AccessLevel = "observer"
)

// InvitableLevels are the levels an invitation may grant (never owner).
var InvitableLevels = []AccessLevel{AccessExternal, AccessObserver, AccessParticipant}

// ParseInviteLevel reads an invitation's level ("" is external).
func ParseInviteLevel(s string) (AccessLevel, error) {
	if s == "" {
		return AccessExternal, nil
	}
	for _, l := range InvitableLevels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", Invalid("accessLevel", "accessLevel must be external, observer or participant, not %q", s)
}

func (l AccessLevel) rank() int {
	switch l {
	case AccessOwner:
		return 4
	case AccessParticipant:
		return 3
	case AccessExternal:
		return 2
	case AccessObserver:
		return 1
	}
	return 0
}

// AtLeast reports whether l grants everything o does.
func (l AccessLevel) AtLeast(o AccessLevel) bool { return l.rank() >= o.rank() }

// ThreadAction is a write on a thread; each needs a minimum access level.
type ThreadAction string

const (
	ActRecordStep ThreadAction = "record a step"
	ActAddRefs    ThreadAction = "add refs"
	ActInvite     ThreadAction = "invite parties"
	ActComplete   ThreadAction = "complete the thread"
	ActCancel     ThreadAction = "cancel the thread"
)

// MinLevel is the rule table of access levels: who may do what.
func (a ThreadAction) MinLevel() AccessLevel {
	switch a {
	case ActRecordStep, ActAddRefs:
		return AccessExternal
	default: // invite, complete, cancel
		return AccessOwner
	}
}

// ThreadActions lists every write action, in the order docs list them.
var ThreadActions = []ThreadAction{ActRecordStep, ActAddRefs, ActInvite, ActComplete, ActCancel}

// Party is one principal acting under one role on one thread, with its
// access level. One principal (API key owner) may hold several parties on a
// thread — one per role, e.g. checkout and warehouse services sharing a key.
type Party struct {
	PrincipalKind string
	PrincipalID   string
	Role          string // "" on free-form threads started without a role
	Level         AccessLevel
	GrantedBy     string
	GrantedAt     time.Time
	// ExpiresAt ends a grant that came from an invitation; nil never expires.
	ExpiresAt *time.Time
}

// Expired reports whether the grant has run out at now.
func (p Party) Expired(now time.Time) bool { return p.ExpiresAt != nil && !now.Before(*p.ExpiresAt) }

// Actor is who performs a write: a principal and the role its connection
// started or joined the thread with ("" when the connection declared none,
// e.g. a new connection or OTLP; then the principal's only party is used).
type Actor struct {
	PrincipalKind string
	PrincipalID   string
	Role          string
	// Scoped marks a party-scoped principal (a service account with scope
	// party): a thread it holds no live party on does not exist for it.
	Scoped bool
}
