package domain

import (
	"strings"
	"testing"
	"time"
)

var idT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestParseRoleAndStatus(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"admin", "member", "viewer"} {
		if got, err := ParseRole(r); err != nil || string(got) != r {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	for _, r := range []string{"", "Admin", "owner", "service"} {
		if _, err := ParseRole(r); err == nil || AsError(err).Field != "role" {
			t.Errorf("ParseRole(%q) = %v, want invalid role", r, err)
		}
	}
	for _, s := range []string{"invited", "active", "suspended", "archived"} {
		if got, err := ParseStatus(s); err != nil || string(got) != s {
			t.Errorf("ParseStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "ACTIVE", "deleted"} {
		if _, err := ParseStatus(s); err == nil || AsError(err).Field != "status" {
			t.Errorf("ParseStatus(%q) = %v, want invalid status", s, err)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"Ann@Example.COM", "ann@example.com", true},
		{"  bob@example.org ", "bob@example.org", true},
		{"root@localhost", "root@localhost", true},
		{"", "", false},
		{"ann", "", false},
		{"ann@example", "", false},
		{"Ann <ann@example.com>", "", false},
		{"a@" + strings.Repeat("x", 260) + ".com", "", false},
	}
	for _, c := range cases {
		got, err := NormalizeEmail(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && AsError(err).Field != "email" {
			t.Errorf("NormalizeEmail(%q): field %q", c.in, AsError(err).Field)
		}
	}
}

func TestNewInvitedUser(t *testing.T) {
	t.Parallel()
	u, err := NewInvitedUser("u1", "A@B.io", " Ann ", RoleMember, idT0)
	if err != nil || u.Status != StatusInvited || u.Email != "a@b.io" || u.FullName != "Ann" || !u.CreatedAt.Equal(idT0) {
		t.Fatalf("NewInvitedUser = %+v, %v", u, err)
	}
	if _, err := NewInvitedUser("u1", "a@b.io", "x", Role("root"), idT0); err == nil {
		t.Fatal("unknown role accepted")
	}
	if _, err := NewInvitedUser("u1", "a@b.io", "bad\x00name", RoleMember, idT0); err == nil {
		t.Fatal("control character accepted")
	}
	if _, err := NewInvitedUser("u1", "a@b.io", strings.Repeat("n", 201), RoleMember, idT0); err == nil {
		t.Fatal("long name accepted")
	}
}

// TestChangeStatusByAdmin covers every (from, to) pair of the status table.
func TestChangeStatusByAdmin(t *testing.T) {
	t.Parallel()
	type want struct {
		ok   bool
		code Code
	}
	allowed := want{ok: true}
	refused := want{code: CodeInvalidStatusTransition}
	table := map[Status]map[Status]want{
		StatusInvited: {
			StatusInvited: allowed, StatusActive: {code: CodeActivationRequiresSignIn},
			StatusSuspended: refused, StatusArchived: allowed,
		},
		StatusActive: {
			StatusInvited: refused, StatusActive: allowed, StatusSuspended: allowed, StatusArchived: allowed,
		},
		StatusSuspended: {
			StatusInvited: refused, StatusActive: allowed, StatusSuspended: allowed, StatusArchived: allowed,
		},
		StatusArchived: {
			StatusInvited: refused, StatusActive: refused, StatusSuspended: refused, StatusArchived: refused,
		},
	}
	for from, row := range table {
		for to, w := range row {
			t.Run(string(from)+"->"+string(to), func(t *testing.T) {
				u := User{ID: "u", Role: RoleMember, Status: from, UpdatedAt: idT0}
				err := u.ChangeStatusByAdmin(to, idT0.Add(time.Hour))
				if w.ok {
					if err != nil || u.Status != to {
						t.Fatalf("got %v (status %s), want %s", err, u.Status, to)
					}
					if from != to && !u.UpdatedAt.Equal(idT0.Add(time.Hour)) {
						t.Fatal("UpdatedAt not set")
					}
					return
				}
				if CodeOf(err) != w.code || KindOf(err) != KindConflict {
					t.Fatalf("got %v, want %s", err, w.code)
				}
				if u.Status != from {
					t.Fatalf("refused change still moved status to %s", u.Status)
				}
			})
		}
	}
}

func TestActivateBySignIn(t *testing.T) {
	t.Parallel()
	now := idT0.Add(time.Hour)
	for _, c := range []struct {
		from Status
		ok   bool
	}{{StatusInvited, true}, {StatusActive, true}, {StatusSuspended, false}, {StatusArchived, false}} {
		u := User{ID: "u", Role: RoleViewer, Status: c.from}
		err := u.ActivateBySignIn(now)
		if c.ok {
			if err != nil || u.Status != StatusActive || !u.EmailVerified || u.LastLoginAt == nil {
				t.Errorf("%s: %v %+v", c.from, err, u)
			}
			if c.from == StatusInvited && (u.ActivatedAt == nil || !u.ActivatedAt.Equal(now)) {
				t.Errorf("%s: ActivatedAt not set", c.from)
			}
			continue
		}
		if CodeOf(err) != CodeUserNotActive || u.Status != c.from {
			t.Errorf("%s: got %v, status %s", c.from, err, u.Status)
		}
	}
}

func TestChangeRoleAndRename(t *testing.T) {
	t.Parallel()
	u := User{ID: "u", Role: RoleViewer, Status: StatusActive}
	if err := u.ChangeRole(RoleAdmin, idT0); err != nil || u.Role != RoleAdmin {
		t.Fatalf("ChangeRole: %v", err)
	}
	if err := u.ChangeRole(Role("root"), idT0); err == nil || u.Role != RoleAdmin {
		t.Fatalf("unknown role: %v", err)
	}
	if err := u.Rename("  Zed ", idT0); err != nil || u.FullName != "Zed" {
		t.Fatalf("Rename: %v %q", err, u.FullName)
	}
	a := User{ID: "a", Role: RoleMember, Status: StatusArchived, FullName: "Old"}
	if err := a.ChangeRole(RoleViewer, idT0); CodeOf(err) != CodeInvalidStatusTransition || a.Role != RoleMember {
		t.Fatalf("archived ChangeRole: %v", err)
	}
	if err := a.Rename("New", idT0); CodeOf(err) != CodeInvalidStatusTransition || a.FullName != "Old" {
		t.Fatalf("archived Rename: %v", err)
	}
}

func TestRequireActiveAdminRemains(t *testing.T) {
	t.Parallel()
	admin := func(id string, st Status) User { return User{ID: id, Role: RoleAdmin, Status: st} }
	cases := []struct {
		name   string
		admins []string
		after  User
		ok     bool
	}{
		{"last admin suspended", []string{"a"}, admin("a", StatusSuspended), false},
		{"last admin archived", []string{"a"}, admin("a", StatusArchived), false},
		{"last admin demoted", []string{"a"}, User{ID: "a", Role: RoleMember, Status: StatusActive}, false},
		{"last admin renamed", []string{"a"}, admin("a", StatusActive), true},
		{"one of two suspended", []string{"a", "b"}, admin("a", StatusSuspended), true},
		{"other user changed", []string{"a"}, User{ID: "m", Role: RoleMember, Status: StatusSuspended}, true},
		{"promotion with no admins", nil, admin("m", StatusActive), true},
		{"no admins at all", nil, User{ID: "m", Role: RoleMember, Status: StatusActive}, false},
	}
	for _, c := range cases {
		err := RequireActiveAdminRemains(c.admins, c.after)
		if (err == nil) != c.ok {
			t.Errorf("%s: got %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && CodeOf(err) != CodeLastActiveAdminRequired {
			t.Errorf("%s: code %s", c.name, CodeOf(err))
		}
	}
}

func TestEffectsOf(t *testing.T) {
	t.Parallel()
	base := User{ID: "u", Role: RoleMember, Status: StatusActive}
	with := func(f func(*User)) User { u := base; f(&u); return u }
	cases := []struct {
		name     string
		after    User
		sessions bool
		keys     bool
	}{
		{"rename", with(func(u *User) { u.FullName = "x" }), false, false},
		{"role", with(func(u *User) { u.Role = RoleViewer }), true, false},
		{"suspend", with(func(u *User) { u.Status = StatusSuspended }), true, false},
		{"archive", with(func(u *User) { u.Status = StatusArchived }), true, true},
	}
	for _, c := range cases {
		fx := EffectsOf(base, c.after)
		if fx.RevokeSessions != c.sessions || fx.RevokePersonalKeys != c.keys {
			t.Errorf("%s: %+v", c.name, fx)
		}
	}
}

func TestEraseUser(t *testing.T) {
	t.Parallel()
	for _, st := range []Status{StatusInvited, StatusActive, StatusSuspended} {
		u := User{ID: "u1", Email: "a@example.com", FullName: "Ann", Role: RoleAdmin, Status: st}
		if err := u.Erase(idT0); CodeOf(err) != CodeUserNotArchived || u.Email != "a@example.com" || u.Erased() {
			t.Errorf("%s: erase = %v, user %+v", st, err, u)
		}
	}
	before := User{ID: "U1", Email: "a@example.com", FullName: "Ann", Role: RoleAdmin, Status: StatusArchived, EmailVerified: true}
	u := before
	if err := u.Erase(idT0); err != nil {
		t.Fatal(err)
	}
	if u.Email != "erased-u1@erased.invalid" || u.FullName != "" || u.EmailVerified || !u.Erased() || !u.UpdatedAt.Equal(idT0) ||
		u.ID != "U1" || u.Role != RoleAdmin || u.Status != StatusArchived {
		t.Fatalf("erased user %+v", u)
	}
	fx := EffectsOf(before, u)
	if fx.Erase == nil || fx.Erase.Email != "a@example.com" || fx.Erase.FullName != "Ann" || fx.RevokeSessions {
		t.Fatalf("effects %+v", fx)
	}
	again := u
	if err := again.Erase(idT0.Add(time.Hour)); err != nil || !again.ErasedAt.Equal(idT0) || EffectsOf(u, again).Erase != nil {
		t.Fatalf("erasing again: %v %+v", err, again)
	}
	// An erased user stays archived: nothing about it changes any more.
	if err := again.Rename("Bob", idT0); CodeOf(err) != CodeInvalidStatusTransition {
		t.Fatalf("rename after erasure: %v", err)
	}
	if _, err := NormalizeEmail(ErasedEmail("0b6f1c2e-8d1d-4d3e-9f59-0f6f8f0f1a2b")); err != nil {
		t.Fatalf("the placeholder is not a well-formed address: %v", err)
	}
}
