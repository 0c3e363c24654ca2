package threads

import (
	"github.com/threadengine/engine/app/decisions"
	"github.com/threadengine/engine/app/waits"
	"github.com/threadengine/engine/ports"
)

// Application is the thread use cases one handler per use case, as
// identity.Application is for identity (ThreeDotsLabs' wild-workouts shape):
// each handler is a small type with one Handle method, in its own file
// (command_*.go, query_*.go; the waits in app/waits), built by a
// constructor that takes only the ports it uses. The WebSocket adapter and
// app/ingest (OTLP) call them; see docs/contributors/architecture.md.
type Application struct {
	Commands Commands
	Queries  Queries
}

// Commands write threads: start, record, link, invite, join, end, and the
// waits and grants that decide whether a step may run (app/waits).
// OpenTelemetry traces are ingested by app/ingest on top of these.
type Commands struct {
	StartThread        StartThreadHandler
	StartThreadWithKey StartThreadWithKeyHandler
	RecordStep         RecordStepHandler
	AddRefs            AddRefsHandler
	InviteParty        InvitePartyHandler
	JoinThread         JoinThreadHandler
	EndThread          EndThreadHandler
	WaitForPermission  waits.WaitForPermissionHandler
	CancelGrant        waits.CancelGrantHandler
	ReleaseGrant       waits.ReleaseGrantHandler
}

// Queries read what the writers need: a thread by ref, whether a step is
// recorded, the hash chain's verdict, a thread's key and refs, a step's
// validation verdict. The GraphQL read model is app/readmodel.
type Queries struct {
	FindThreadByRef   FindThreadByRefHandler
	HasStep           HasStepHandler
	VerifyIntegrity   VerifyIntegrityHandler
	ThreadDetails     ThreadDetailsHandler
	WaitForValidation waits.WaitForValidationHandler
	// The decision queries (app/decisions): read-only advice, never a grant.
	Can    decisions.CanHandler
	Should decisions.ShouldHandler
	Next   decisions.NextHandler
}

// Decisions returns the decision queries.
func (q Queries) Decisions() decisions.Decisions {
	return decisions.Decisions{Can: q.Can, Should: q.Should, Next: q.Next}
}

// Application returns the thread use cases.
func (m *Module) Application() Application { return m.app }

// refusalsFor is the refusal log counting to metrics.
func (m *Module) refusalsFor(metrics ports.ThreadMetrics) refusals {
	r := m.refusals
	r.metrics = metrics
	return r
}

// build makes each handler from the ports it uses: the store (behind its id
// check) as the small port each needs, the contract cache, the chain and
// invitation keys, the hub (to publish, and to wake waits), clock, metrics.
func (m *Module) build() Application {
	store, clock, metrics := m.store, m.clock, m.metrics
	invites := inviteKeysOf(m.keys)
	findByRef := NewFindThreadByRefHandler(store, store, clock)
	keyed := NewStartThreadWithKeyHandler(store, store, store, findByRef, m.contracts, clock, metrics)
	release := waits.NewReleaseGrantHandler(store, m.hub)
	hasStep := NewHasStepHandler(store, store, clock)
	// One step recorder for every transport: OTLP spans are judged (content
	// rules, the semantic gate) exactly as WebSocket steps are.
	record := m.withSemanticGate(NewRecordStepHandler(store, m.contracts, m.keys, m.hub, clock, metrics, m.refusalsFor(metrics)))
	return Application{
		Commands: Commands{
			StartThread:        NewStartThreadHandler(store, keyed, m.contracts, clock, metrics),
			StartThreadWithKey: keyed,
			RecordStep:         record,
			AddRefs:            NewAddRefsHandler(store, clock),
			InviteParty:        NewInvitePartyHandler(store, m.contracts, invites, clock, m.opts.InvitationMaxTTL),
			JoinThread:         NewJoinThreadHandler(store, m.contracts, invites, clock),
			EndThread:          NewEndThreadHandler(store, m.hub, clock, metrics),
			WaitForPermission:  waits.NewWaitForPermissionHandler(store, m.contracts, m.hub, release, clock),
			CancelGrant:        waits.NewCancelGrantHandler(store, m.hub, clock),
			ReleaseGrant:       release,
		},
		Queries: Queries{
			FindThreadByRef:   findByRef,
			HasStep:           hasStep,
			VerifyIntegrity:   NewVerifyIntegrityHandler(store, store, m.keys.Keyring(), clock),
			ThreadDetails:     NewThreadDetailsHandler(store),
			WaitForValidation: waits.NewWaitForValidationHandler(store, store, m.hub, clock),
			Can:               decisions.NewCanHandler(store, m.contracts, m.opts.Classifier, clock),
			Should:            decisions.NewShouldHandler(store, store, m.contracts, m.opts.Classifier, clock),
			Next:              decisions.NewNextHandler(store, m.contracts, clock),
		},
	}
}
