package identity

// Application is the identity use cases one handler per use case, as
// ThreeDotsLabs' wild-workouts organises its application: each handler is a
// small type with one Handle method, in its own file (command_*.go,
// query_*.go), built by a constructor that takes only the ports it uses.
// Adapters and the sign-in use case call identity.Application (see
// docs/contributors/architecture.md).
type Application struct {
	Commands Commands
	Queries  Queries
}

// Commands change users, keys and sessions.
type Commands struct {
	InviteUser       InviteUserHandler
	UpdateUser       UpdateUserHandler
	EraseUser        EraseUserHandler
	ActivateBySignIn ActivateBySignInHandler
	CreateAPIKey     CreateAPIKeyHandler
	RevokeAPIKey     RevokeAPIKeyHandler

	ExchangeAPIKey     ExchangeAPIKeyHandler
	ExchangeLicenseKey ExchangeLicenseKeyHandler
	StartUserSession   StartUserSessionHandler
	SignOut            SignOutHandler
	BootstrapOwner     BootstrapOwnerHandler
}

// Queries authenticate callers and read users, keys and service accounts.
type Queries struct {
	AuthenticateAPIKey  AuthenticateAPIKeyHandler
	AuthenticateSession AuthenticateSessionHandler

	ListUsers           ListUsersHandler
	ListAPIKeys         ListAPIKeysHandler
	ListServiceAccounts ListServiceAccountsHandler
}

// Application returns the identity use cases.
func (m *Module) Application() Application { return m.app }

// build makes each handler from the (cache-invalidating) ports it uses.
func (m *Module) build() Application {
	d := m.d
	audit := auditTrail{store: d.Audit, clock: d.Clock, newID: d.NewID, log: d.Log}
	keys := keyMinter{keys: d.APIKeys, random: d.Random, newID: d.NewID}
	sessions := &sessionMinter{sessions: d.Sessions, clock: d.Clock, random: d.Random, newID: d.NewID, ttl: d.SessionTTL}
	refused := refusals{metrics: d.Metrics}
	authKey := NewAuthenticateAPIKeyHandler(d.APIKeys, d.Users, d.ServiceAccounts, m.cache, refused, d.Clock, d.Log)
	return Application{
		Commands: Commands{
			InviteUser:       NewInviteUserHandler(d.Users, audit, d.Clock, d.NewID),
			UpdateUser:       NewUpdateUserHandler(d.Users, audit, d.Clock),
			EraseUser:        NewEraseUserHandler(d.Users, audit, d.Clock),
			ActivateBySignIn: NewActivateBySignInHandler(d.Users, audit, d.Clock),
			CreateAPIKey:     NewCreateAPIKeyHandler(d.ServiceAccounts, keys, audit, d.Clock, d.NewID),
			RevokeAPIKey:     NewRevokeAPIKeyHandler(d.APIKeys, audit, d.Clock),

			ExchangeAPIKey:     NewExchangeAPIKeyHandler(authKey, sessions, d.Users, d.Clock),
			ExchangeLicenseKey: NewExchangeLicenseKeyHandler(d.LicenseKey, d.Settings, m.licenseOwner, d.Users, sessions, audit),
			StartUserSession:   NewStartUserSessionHandler(d.Users, sessions),
			SignOut:            NewSignOutHandler(d.Sessions, d.Clock),
			BootstrapOwner:     NewBootstrapOwnerHandler(d.Users, keys, d.Settings, audit, d.Clock, d.NewID),
		},
		Queries: Queries{
			AuthenticateAPIKey:  authKey,
			AuthenticateSession: NewAuthenticateSessionHandler(d.Sessions, d.Users, d.ServiceAccounts, d.APIKeys, m.cache, refused, d.Clock),

			ListUsers:           NewListUsersHandler(d.Users),
			ListAPIKeys:         NewListAPIKeysHandler(d.APIKeys),
			ListServiceAccounts: NewListServiceAccountsHandler(d.ServiceAccounts),
		},
	}
}
