package app

// IdentityApplication is the identity use cases one handler per use case, as
// ThreeDotsLabs' wild-workouts organises its application: each handler is a
// small type with one Handle method, in its own file (app/command_*.go,
// app/query_*.go). Adapters and the sign-in use case call
// app.IdentityApplication (see docs/contributors/architecture.md).
type IdentityApplication struct {
	Commands IdentityCommands
	Queries  IdentityQueries
}

// IdentityCommands change users, keys and sessions.
type IdentityCommands struct {
	InviteUser       InviteUserHandler
	UpdateUser       UpdateUserHandler
	ActivateBySignIn ActivateBySignInHandler
	CreateAPIKey     CreateAPIKeyHandler
	RevokeAPIKey     RevokeAPIKeyHandler

	ExchangeAPIKey     ExchangeAPIKeyHandler
	ExchangeLicenseKey ExchangeLicenseKeyHandler
	StartUserSession   StartUserSessionHandler
	SignOut            SignOutHandler
	BootstrapOwner     BootstrapOwnerHandler
}

// IdentityQueries authenticate callers and read users, keys and service
// accounts.
type IdentityQueries struct {
	AuthenticateAPIKey  AuthenticateAPIKeyHandler
	AuthenticateSession AuthenticateSessionHandler

	ListUsers           ListUsersHandler
	ListAPIKeys         ListAPIKeysHandler
	ListServiceAccounts ListServiceAccountsHandler
}

// Application returns the identity use cases as handlers sharing s's ports,
// cache and audit log.
func (s *Identity) Application() IdentityApplication {
	return IdentityApplication{
		Commands: IdentityCommands{
			InviteUser:       InviteUserHandler{s},
			UpdateUser:       UpdateUserHandler{s},
			ActivateBySignIn: ActivateBySignInHandler{s},
			CreateAPIKey:     CreateAPIKeyHandler{s},
			RevokeAPIKey:     RevokeAPIKeyHandler{s},

			ExchangeAPIKey:     ExchangeAPIKeyHandler{s},
			ExchangeLicenseKey: ExchangeLicenseKeyHandler{s},
			StartUserSession:   StartUserSessionHandler{s},
			SignOut:            SignOutHandler{s},
			BootstrapOwner:     BootstrapOwnerHandler{s},
		},
		Queries: IdentityQueries{
			AuthenticateAPIKey:  AuthenticateAPIKeyHandler{s},
			AuthenticateSession: AuthenticateSessionHandler{s},

			ListUsers:           ListUsersHandler{s},
			ListAPIKeys:         ListAPIKeysHandler{s},
			ListServiceAccounts: ListServiceAccountsHandler{s},
		},
	}
}
