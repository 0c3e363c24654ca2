package domain

import (
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// Role is what a principal may do. Roles are typed so that a bare string never
// crosses a layer boundary unparsed.
type Role string

const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	RoleViewer Role = "viewer"
)

// Roles lists every role, strongest first.
var Roles = []Role{RoleAdmin, RoleMember, RoleViewer}

// ParseRole accepts exactly the documented role names.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAdmin, RoleMember, RoleViewer:
		return r, nil
	}
	return "", Invalid("role", "unknown role %q: must be one of admin, member, viewer", s)
}

func (r Role) String() string { return string(r) }

// Status is a user's lifecycle state.
type Status string

const (
	StatusInvited   Status = "invited"
	StatusActive    Status = "active"
	StatusSuspended Status = "suspended"
	StatusArchived  Status = "archived"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusInvited, StatusActive, StatusSuspended, StatusArchived}

// ParseStatus accepts exactly the documented status names.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusInvited, StatusActive, StatusSuspended, StatusArchived:
		return st, nil
	}
	return "", Invalid("status", "unknown status %q: must be one of invited, active, suspended, archived", s)
}

func (s Status) String() string { return string(s) }

// User is a human account owned by the engine. Service accounts are a separate
// type so that they can never count as a human administrator.
type User struct {
	ID            string
	Email         string
	FullName      string
	Role          Role
	Status        Status
	EmailVerified bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
	ActivatedAt   *time.Time
	LastLoginAt   *time.Time
	// ErasedAt is when the user's personal data was erased (nil: never).
	// An erased user is archived, keeps its id (threads, steps and audit
	// entries name principals by id) and has a placeholder email and no name.
	ErasedAt *time.Time
}

// Erased reports whether the user's personal data was erased.
func (u User) Erased() bool { return u.ErasedAt != nil }

// ErasedEmail is the placeholder address an erased user keeps in place of
// theirs: unique (it holds the id), under the reserved .invalid domain, so it
// can reach no one and is never taken for a real address.
func ErasedEmail(id string) string { return "erased-" + strings.ToLower(id) + "@erased.invalid" }

// ErrUserNotArchived refuses the erasure of a user who is not archived:
// erasure is for people who have left, and an archived user can never sign
// in or be changed again, so erasing one cannot remove an administrator.
var ErrUserNotArchived = NewBase(KindConflict, CodeUserNotArchived,
	"only an archived user can be erased: archive the user first")

// Erase removes the user's personal data: the email becomes ErasedEmail,
// the name and the verified flag are cleared. Only archived users can be
// erased (archival is permanent, so the last-active-admin invariant is not
// concerned); erasing an erased user again changes nothing.
func (u *User) Erase(now time.Time) error {
	if u.Erased() {
		return nil
	}
	if u.Status != StatusArchived {
		return ErrUserNotArchived
	}
	u.Email, u.FullName, u.EmailVerified = ErasedEmail(u.ID), "", false
	u.ErasedAt, u.UpdatedAt = &now, now
	return nil
}

// IsActiveAdmin reports whether u counts toward the last-admin invariant.
func (u User) IsActiveAdmin() bool { return u.Role == RoleAdmin && u.Status == StatusActive }

const (
	maxEmailLen = 255
	maxNameLen  = 200
)

// NormalizeEmail validates an address and returns its canonical (lower-case,
// trimmed) form. Emails are compared case-insensitively everywhere.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Invalid("email", "email is required")
	}
	if len(s) > maxEmailLen {
		return "", Invalid("email", "email is longer than %d characters", maxEmailLen)
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") && !strings.HasSuffix(s, "@localhost") {
		return "", Invalid("email", "%q is not a valid email address", s)
	}
	return strings.ToLower(s), nil
}

// ValidateFullName trims and bounds a display name. Empty is allowed.
func ValidateFullName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > maxNameLen {
		return "", Invalid("full_name", "full_name is longer than %d characters", maxNameLen)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", Invalid("full_name", "full_name contains control characters")
		}
	}
	return s, nil
}

// NewInvitedUser builds the user an administrator invites: always `invited`.
func NewInvitedUser(id, email, fullName string, role Role, now time.Time) (User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	name, err := ValidateFullName(fullName)
	if err != nil {
		return User{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return User{}, err
	}
	return User{ID: id, Email: email, FullName: name, Role: role, Status: StatusInvited, CreatedAt: now, UpdatedAt: now}, nil
}

// Transition errors.
var (
	ErrActivationRequiresSignIn = NewBase(KindConflict, CodeActivationRequiresSignIn,
		"an invited user becomes active only by signing in with a verified email; an administrator cannot activate an invitation")
	ErrUserArchived = NewBase(KindConflict, CodeInvalidStatusTransition,
		"the user is archived; archival is permanent")
	ErrLastActiveAdmin = NewBase(KindConflict, CodeLastActiveAdminRequired,
		"at least one active human administrator must remain")
)

func invalidTransition(from, to Status) *Error {
	return E(KindConflict, CodeInvalidStatusTransition, "cannot change status from %s to %s", from, to)
}

// ChangeStatusByAdmin applies an administrator's status change (suspend,
// reactivate, archive). It encodes the transition table:
//
//	invited   -> archived
//	active    -> suspended | archived
//	suspended -> active    | archived
//	archived  -> (nothing; permanent)
//
// Setting the current status again is a no-op, except on archived users, which
// refuse every change. invited -> active is refused: only a verified sign-in
// activates an invitation (see ActivateBySignIn).
func (u *User) ChangeStatusByAdmin(to Status, now time.Time) error {
	if u.Status == StatusArchived {
		return ErrUserArchived
	}
	if to == u.Status {
		return nil
	}
	switch {
	case u.Status == StatusInvited && to == StatusActive:
		return ErrActivationRequiresSignIn
	case to == StatusArchived,
		u.Status == StatusActive && to == StatusSuspended,
		u.Status == StatusSuspended && to == StatusActive:
		u.Status = to
		u.UpdatedAt = now
		return nil
	}
	return invalidTransition(u.Status, to)
}

// ActivateBySignIn records a verified sign-in. It turns an invitation into an
// active user; active users just get their last-login time. Suspended and
// archived users are refused.
func (u *User) ActivateBySignIn(now time.Time) error {
	switch u.Status {
	case StatusInvited:
		u.Status = StatusActive
		u.ActivatedAt = &now
	case StatusActive:
	case StatusSuspended:
		return E(KindForbidden, CodeUserNotActive, "this account is suspended; ask an administrator to reactivate it")
	default:
		return E(KindForbidden, CodeUserNotActive, "this account is archived")
	}
	u.EmailVerified = true
	u.LastLoginAt = &now
	u.UpdatedAt = now
	return nil
}

// RecordSignIn notes a sign-in that is not the registry's (an API key
// exchanged for a browser session): "Last sign-in" shows it too.
func (u *User) RecordSignIn(now time.Time) {
	u.LastLoginAt = &now
}

// ChangeRole sets a new role. Archived users cannot be changed.
func (u *User) ChangeRole(to Role, now time.Time) error {
	if u.Status == StatusArchived {
		return ErrUserArchived
	}
	if _, err := ParseRole(string(to)); err != nil {
		return err
	}
	if u.Role != to {
		u.Role = to
		u.UpdatedAt = now
	}
	return nil
}

// Rename sets a new display name. Archived users cannot be changed.
func (u *User) Rename(name string, now time.Time) error {
	if u.Status == StatusArchived {
		return ErrUserArchived
	}
	n, err := ValidateFullName(name)
	if err != nil {
		return err
	}
	if u.FullName != n {
		u.FullName = n
		u.UpdatedAt = now
	}
	return nil
}

// RequireActiveAdminRemains is the last-active-human-admin invariant. It is the
// single check used by every change that could break it (suspend, archive,
// role change). activeAdminIDs is the set of currently active human admins,
// read under a lock in the same transaction as the change; after is the user
// as it will be stored. Service accounts are never in activeAdminIDs.
func RequireActiveAdminRemains(activeAdminIDs []string, after User) error {
	remaining := 0
	for _, id := range activeAdminIDs {
		if id != after.ID {
			remaining++
		}
	}
	if after.IsActiveAdmin() {
		remaining++
	}
	if remaining == 0 {
		return ErrLastActiveAdmin
	}
	return nil
}

// UserChangeEffects are the side effects a change to a user demands. The
// storage adapter applies them in the same transaction as the change.
type UserChangeEffects struct {
	// RevokeSessions ends every browser session of the user.
	RevokeSessions bool
	// RevokePersonalKeys permanently revokes the user's personal API keys.
	RevokePersonalKeys bool
	// Erase, when set, is the personal data the user just lost, which the
	// store also removes from sessions, sign-in bindings and audit entries.
	Erase *ErasedIdentity
}

// ErasedIdentity is what an erasure removes: the email and the name the
// user had.
type ErasedIdentity struct {
	Email, FullName string
}

// EffectsOf derives the side effects of changing before into after: any role
// or status change revokes sessions (roles are re-granted by a new sign-in);
// archiving also revokes personal keys; erasing removes the personal data
// the user had from every place the store keeps it. Suspension does not revoke keys: they
// stop working while the user is not active and work again on reactivation.
func EffectsOf(before, after User) UserChangeEffects {
	var fx UserChangeEffects
	if before.Role != after.Role || before.Status != after.Status {
		fx.RevokeSessions = true
	}
	if before.Status != StatusArchived && after.Status == StatusArchived {
		fx.RevokePersonalKeys = true
	}
	if !before.Erased() && after.Erased() {
		fx.Erase = &ErasedIdentity{Email: before.Email, FullName: before.FullName}
	}
	return fx
}
