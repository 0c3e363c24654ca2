package app

// ThreadApplication is the thread use cases one handler per use case, as
// IdentityApplication is for identity (ThreeDotsLabs' wild-workouts shape):
// each handler is a small type with one Handle method, in its own file
// (app/command_*.go, app/query_*.go). The handlers share their Threads' ports,
// contract cache, scope checks, clock, metrics and hub. The WebSocket and
// OTLP adapters call them; see docs/contributors/architecture.md.
type ThreadApplication struct {
	Commands ThreadCommands
	Queries  ThreadQueries
}

// ThreadCommands write threads: start, record, link, invite, join, end, and
// the waits and grants that decide whether a step may run.
type ThreadCommands struct {
	StartThread        StartThreadHandler
	StartThreadWithKey StartThreadWithKeyHandler
	RecordStep         RecordStepHandler
	AddRefs            AddRefsHandler
	InviteParty        InvitePartyHandler
	JoinThread         JoinThreadHandler
	EndThread          EndThreadHandler
	WaitForPermission  WaitForPermissionHandler
	CancelGrant        CancelGrantHandler
	ReleaseGrant       ReleaseGrantHandler
}

// ThreadQueries read what the writers need: a thread by ref, whether a step
// is recorded, the hash chain's verdict, a thread's key and refs, a step's
// validation verdict. The GraphQL read model is Queries (app/queries.go).
type ThreadQueries struct {
	FindThreadByRef   FindThreadByRefHandler
	HasStep           HasStepHandler
	VerifyIntegrity   VerifyIntegrityHandler
	ThreadDetails     ThreadDetailsHandler
	WaitForValidation WaitForValidationHandler
}

// Application returns the thread use cases as handlers sharing t.
func (t *Threads) Application() ThreadApplication {
	return ThreadApplication{
		Commands: ThreadCommands{
			StartThread:        StartThreadHandler{t},
			StartThreadWithKey: StartThreadWithKeyHandler{t},
			RecordStep:         RecordStepHandler{t},
			AddRefs:            AddRefsHandler{t},
			InviteParty:        InvitePartyHandler{t},
			JoinThread:         JoinThreadHandler{t},
			EndThread:          EndThreadHandler{t},
			WaitForPermission:  WaitForPermissionHandler{t},
			CancelGrant:        CancelGrantHandler{t},
			ReleaseGrant:       ReleaseGrantHandler{t},
		},
		Queries: ThreadQueries{
			FindThreadByRef:   FindThreadByRefHandler{t},
			HasStep:           HasStepHandler{t},
			VerifyIntegrity:   VerifyIntegrityHandler{t},
			ThreadDetails:     ThreadDetailsHandler{t},
			WaitForValidation: WaitForValidationHandler{t},
		},
	}
}
