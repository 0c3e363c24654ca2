package domain

// PrincipalKind says whether a request acts for a human user or a service account.
type PrincipalKind string

const (
	PrincipalUser           PrincipalKind = "user"
	PrincipalServiceAccount PrincipalKind = "service_account"
	// PrincipalSystem is the engine itself in the audit log (the retention
	// sweeper); it never authenticates.
	PrincipalSystem PrincipalKind = "system"
)

// CredentialKind is how a principal proved who it is on this request.
type CredentialKind string

const (
	CredentialAPIKey  CredentialKind = "api_key"
	CredentialSession CredentialKind = "session"
)

// Principal is the authenticated caller of one request. It is rebuilt on every
// request from current rows, so role and status changes apply at once.
type Principal struct {
	Kind     PrincipalKind
	ID       string // user id or service account id
	Email    string // users only
	Name     string
	Role     Role
	Scope    ReadScope // service accounts: company or party; humans: company
	Via      CredentialKind
	KeyID    string // the API key used, or the key a session came from
	Session  string // session id when Via is CredentialSession
	Identity string // registry subject for OIDC sessions, if any
}

// Key is the principal as one string, its kind and id: what per-principal
// limits and budgets are kept by (a user and a service account never share
// one), and how logs name it.
func (p Principal) Key() string { return string(p.Kind) + ":" + p.ID }

// IsHuman reports whether the principal is a user (not a service account).
func (p Principal) IsHuman() bool { return p.Kind == PrincipalUser }

// Permission is one thing a role may do.
type Permission string

const (
	PermThreadsRead    Permission = "threads.read"
	PermThreadsWrite   Permission = "threads.write"
	PermContractsRead  Permission = "contracts.read"
	PermContractsWrite Permission = "contracts.write"
	PermUsersRead      Permission = "users.read"
	PermUsersManage    Permission = "users.manage"
	PermOwnKeys        Permission = "keys.own"    // create, list and revoke one's own personal keys
	PermAllKeys        Permission = "keys.manage" // any key, and service accounts
	PermSettingsManage Permission = "settings.manage"
	// PermDataDelete erases threads (for erasure requests) and unused
	// contract versions; PermAuditRead reads the audit log.
	PermDataDelete Permission = "data.delete"
	PermAuditRead  Permission = "audit.read"
)

// rolePermissions is the permission matrix (documented in docs/operators/users-and-access.md):
//
//	permission        admin member viewer
//	threads.read        x     x      x
//	threads.write       x     x
//	contracts.read      x     x      x
//	contracts.write     x     x
//	users.read          x     x      x   (humans only)
//	users.manage        x
//	keys.own            x     x      x   (humans only: service accounts have no personal keys)
//	keys.manage         x
//	settings.manage     x
//	data.delete         x
//	audit.read          x
var rolePermissions = map[Role]map[Permission]bool{
	RoleAdmin: {
		PermThreadsRead: true, PermThreadsWrite: true, PermContractsRead: true, PermContractsWrite: true,
		PermUsersRead: true, PermUsersManage: true, PermOwnKeys: true, PermAllKeys: true, PermSettingsManage: true,
		PermDataDelete: true, PermAuditRead: true,
	},
	RoleMember: {
		PermThreadsRead: true, PermThreadsWrite: true, PermContractsRead: true, PermContractsWrite: true,
		PermUsersRead: true, PermOwnKeys: true,
	},
	RoleViewer: {
		PermThreadsRead: true, PermContractsRead: true, PermUsersRead: true, PermOwnKeys: true,
	},
}

// Can reports whether p holds perm. Service accounts never manage users, keys
// or settings and never see the user list, whatever their role: a service key
// never becomes a human administrator.
func (p Principal) Can(perm Permission) bool {
	if p.Kind == PrincipalServiceAccount {
		switch perm {
		case PermUsersRead, PermUsersManage, PermOwnKeys, PermAllKeys, PermSettingsManage:
			return false
		}
	}
	return rolePermissions[p.Role][perm]
}

// Require returns a forbidden error naming perm when p lacks it.
func (p Principal) Require(perm Permission) error {
	if p.Can(perm) {
		return nil
	}
	return Forbidden("your role (%s) does not allow %s", p.Role, perm).WithDetail("required", string(perm))
}
