package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// StepState is the latest state of one step identity (thread, name, key).
type StepState struct {
	StepName       string
	IdempotencyKey string
	Status         string
	RetryCount     int
	LatestStepID   string
	LatestSeq      int    // chain position of the latest attempt: orders states reliably
	InvocationID   string // the client's id of the latest attempt ("" if none was sent)
	PreviousStep   string
	Actor          string
	ActorService   string
	LatestContext  map[string]string
	FirstSeenAt    time.Time
	LastUpdatedAt  time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
}

// Activity is one appended step attempt (a thread_activities row).
type Activity struct {
	ID             string
	ThreadID       string
	Seq            int
	StepName       string
	IdempotencyKey string
	Status         string
	Attempt        int
	Actor          string
	ActorService   string
	Context        map[string]string
	Metadata       map[string]any
	StartedAt      *time.Time
	FinishedAt     *time.Time
	RecordedAt     time.Time
	ContentHash    string
	Hash           string
	PrevHash       string
	// SubSteps are the attempt's sub-steps in the order sent (filled by
	// ListActivities; a StepPlan carries its own in StepPlan.SubSteps).
	SubSteps []SubStep
}

// SubStep is one sub-step attached to an activity.
type SubStep struct {
	ID         string
	StepID     string
	Name       string
	Status     string
	Payload    map[string]any
	RecordedAt time.Time
}

// ValidationRecord is the stored outcome of validating one step attempt.
type ValidationRecord struct {
	ID             string
	StepID         string
	StepName       string
	IdempotencyKey string
	OverallStatus  string
	Issues         any // JSON-encodable list of issues
	CriticalCount  int
	WarningCount   int
	MinorCount     int
	InfoCount      int
	CreatedAt      time.Time
}

// NotificationRecord is one persisted thread event, pushed to subscribers.
type NotificationRecord struct {
	ID               string
	ThreadID         string
	StepID           string
	StepName         string
	IdempotencyKey   string
	ContractName     string
	OwnerID          string
	Source           string // execution | validation | thread
	NotificationType string // execution.success, validation.violated, thread.completed …
	StepStatus       string
	ValidationStatus string
	ViolationType    string
	Severity         string
	Message          string
	Details          map[string]any
	CreatedAt        time.Time
	// Seq is the row's position in the notification log (set when read
	// back); Deliveries counts its pushes so far, this one included.
	Seq        int64
	Deliveries int
	// TraceParent is the W3C traceparent of the span that committed the
	// notification ("" when untraced), so its pushes join the step's trace.
	TraceParent string
}

// StepTx is what a step append sees inside its transaction, with the thread
// row locked: the thread aggregate, the current state of the step identity
// being written (nil if new), the step name of the latest attempt and, only
// when asked for, every step state ordered by latest attempt (contract
// validation needs them).
//
// Thread.Parties holds the writing principal's parties on the thread; only
// the one it acts under (the role asked for, or its only party) is loaded in
// full — the others carry their role alone, enough to list or count them.
type StepTx struct {
	Thread       domain.Thread
	Current      *StepState
	LastStepName string
	States       []StepState
	// Grant is the status of the grant AppendWriter.InvocationID names on
	// the thread ("" when none).
	Grant domain.GrantStatus
	// Grants are all the thread's grants, loaded only when
	// AppendWriter.WithGrants (a step with fresh prerequisites).
	Grants []domain.StepGrant
}

// StepPlan is what the caller decided to write. Duplicate writes nothing.
type StepPlan struct {
	Duplicate     bool
	Activity      Activity
	SubSteps      []SubStep
	State         StepState
	Validation    *ValidationRecord
	Notifications []NotificationRecord
	// Thread carries the updated thread (last_hash, step_count, status…);
	// its parties are not written by an append.
	Thread domain.Thread
	// Refs are merged (per key) into the thread's refs with the step.
	Refs map[string]string
	// PrevActivityAt is the thread's latest activity before this attempt
	// (zero for its first): the process map's time along an edge.
	PrevActivityAt time.Time
	// Grant is a grant row to insert with the step (what an unguarded
	// report of a step with fresh prerequisites consumed); nil: none.
	Grant *domain.StepGrant
}

// ThreadEffects is what a thread update writes besides the thread row and
// its parties.
type ThreadEffects struct {
	Notifications []NotificationRecord
	// Refs are merged (per key) into the thread's refs.
	Refs map[string]string
}

// ThreadUpdate mutates a locked thread (loaded with all its parties) inside
// the store's transaction. The store writes the thread row, every party that
// is new or changed, and the effects.
type ThreadUpdate func(t *domain.Thread) (ThreadEffects, error)

// ThreadCreator starts threads.
type ThreadCreator interface {
	// CreateThread inserts the thread, its refs and its parties (the owner).
	CreateThread(ctx context.Context, t domain.Thread, refs map[string]string) error
}

// ThreadGetter reads one thread.
type ThreadGetter interface {
	// GetThread returns the thread with all its parties.
	GetThread(ctx context.Context, id string) (domain.Thread, error)
}

// StepAppender appends step attempts.
type StepAppender interface {
	// AppendStep locks the thread row, loads what StepTx holds (the parties
	// of principalID, the one acting as role in full), calls plan and writes
	// what it returns (activity, sub-steps, state, validation, refs,
	// notifications, thread row) in the same transaction. Appends are
	// group-committed: plan runs inside a transaction that may hold other
	// appends; an error from plan refuses only its own append.
	AppendStep(ctx context.Context, threadID string, writer AppendWriter, stepName, idempotencyKey string, withStates bool,
		plan func(StepTx) (StepPlan, error)) (StepPlan, error)
}

// ThreadUpdater changes a thread under its lock.
type ThreadUpdater interface {
	// UpdateThread locks the thread, applies fn and stores the result.
	UpdateThread(ctx context.Context, threadID string, fn ThreadUpdate) (domain.Thread, error)
}

// ThreadRefFinder finds a thread by one of its refs.
type ThreadRefFinder interface {
	// FindThreadByRef returns the id of the oldest thread with ref key=value.
	FindThreadByRef(ctx context.Context, key, value string) (string, error)
}

// KeyedThreads are the threads named by keys (an application key, an
// OpenTelemetry trace id).
type KeyedThreads interface {
	// CreateThreadWithKey creates the thread as CreateThread does, named by
	// (namespace, key) and by every key in also, in one transaction, unless
	// one of them already names a thread: then nothing is written and the
	// thread named by the first of them that is taken ((namespace, key),
	// then also in order) is returned with created false. Idempotent across
	// processes sharing the database.
	CreateThreadWithKey(ctx context.Context, namespace, key string, t domain.Thread, refs map[string]string, also ...KeyName) (domain.Thread, bool, error)
	// FindThreadByKey returns the thread (namespace, key) names, with all
	// its parties.
	FindThreadByKey(ctx context.Context, namespace, key string) (domain.Thread, error)
	// BindThreadKey makes (namespace, key) name threadID too, unless it
	// already names a thread; it returns the thread the key names after.
	BindThreadKey(ctx context.Context, namespace, key, threadID string) (string, error)
}

// ThreadDetailsReader reads what a thread reply shows beyond the thread.
type ThreadDetailsReader interface {
	// ThreadKey returns the application key of a thread ("" if none).
	ThreadKey(ctx context.Context, threadID string) (string, error)
	// ListRefs returns a thread's refs.
	ListRefs(ctx context.Context, threadID string) (map[string]string, error)
}

// StepLog reads a thread's recorded steps on the write side.
type StepLog interface {
	// ListStepStates returns the thread's current step states by latest attempt.
	ListStepStates(ctx context.Context, threadID string) ([]StepState, error)
	// ListActivities returns the thread's activities ordered by seq.
	ListActivities(ctx context.Context, threadID string) ([]Activity, error)
	// HasActivity reports whether any attempt of (thread, step, key) exists;
	// OTLP uses it to drop spans it has already ingested.
	HasActivity(ctx context.Context, threadID, stepName, idempotencyKey string) (bool, error)
}

// StepValidations reads the validation of one recorded attempt.
type StepValidations interface {
	// StepValidation returns the stored validation of one recorded step
	// attempt (nil for a free-form thread's step); found is false while no
	// attempt with that id exists on the thread.
	StepValidation(ctx context.Context, threadID, stepID string) (v *ValidationRecord, found bool, err error)
}

// Grants stores the grants of waitFor (may this step run now).
type Grants interface {
	// UpdateGrants locks the thread row, loads GrantTx, calls fn and stores
	// the grant it returns (nil: nothing), replacing the one with the same
	// invocation id, in the same transaction.
	UpdateGrants(ctx context.Context, threadID string, fn func(GrantTx) (*domain.StepGrant, error)) error
	// ReadGrants loads what UpdateGrants's fn sees, without locking or a
	// write transaction: waits check it first and lock only to answer
	// allowed (a grant made or taken over).
	ReadGrants(ctx context.Context, threadID string) (GrantTx, error)
	// ReleaseGrant deletes a grant whose answer never reached its waiter
	// (the wait was cancelled as it was granted), under the thread's lock,
	// if that answer still holds it (domain.StepGrant.Answer): a later wait
	// of the same invocation that was answered with it keeps it.
	ReleaseGrant(ctx context.Context, threadID, invocationID, answer string) error
}

// ThreadStore is the write side of thread storage: every small port above.
// Every method is one transaction; success means it committed. The thread
// use cases each take only the ones they use.
type ThreadStore interface {
	ThreadCreator
	ThreadGetter
	StepAppender
	ThreadUpdater
	ThreadRefFinder
	KeyedThreads
	ThreadDetailsReader
	StepLog
	StepValidations
	Grants
}

// KeyName is one key of a thread: (namespace, key), e.g. an application
// key or an OpenTelemetry trace id.
type KeyName struct{ Namespace, Key string }

// GrantTx is what a grant decision sees with the thread row locked: the
// thread with all its parties, its step states by latest attempt, and its
// grants.
type GrantTx struct {
	Thread domain.Thread
	States []StepState
	Grants []domain.StepGrant
}

// AppendWriter names who appends: the principal and the role it acts as
// ("" when its connection declared none).
type AppendWriter struct {
	PrincipalID string
	Role        string
	// InvocationID is the attempt's invocation id: StepTx.Grant is the
	// status of the waitFor grant it names.
	InvocationID string
	// WithGrants loads StepTx.Grants (with the states).
	WithGrants bool
}

// Recorded turns step states (ordered by latest attempt) into the history
// the thread rules judge.
func Recorded(states []StepState) []domain.RecordedStep {
	history := make([]domain.RecordedStep, 0, len(states))
	for _, s := range states {
		history = append(history, domain.RecordedStep{ID: s.LatestStepID, Name: s.StepName, Status: s.Status,
			RecordedAt: s.LastUpdatedAt, Attempt: s.RetryCount + 1, StartedAt: orZero(s.StartedAt), FinishedAt: orZero(s.FinishedAt)})
	}
	return history
}

// StateContexts are the latest contexts of states, in their order (beside
// Recorded, for domain.NewDecisionThread).
func StateContexts(states []StepState) []map[string]string {
	out := make([]map[string]string, len(states))
	for i, s := range states {
		out[i] = s.LatestContext
	}
	return out
}

func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// Contexts maps each state's latest attempt id to its context (what
// content references read).
func Contexts(states []StepState) map[string]map[string]string {
	out := make(map[string]map[string]string, len(states))
	for _, s := range states {
		out[s.LatestStepID] = s.LatestContext
	}
	return out
}

// QuietTraces finds trace threads whose quiet period may have run out.
type QuietTraces interface {
	// QuietTraceThreads returns up to limit active threads whose trace's
	// root span ended (domain.Thread.TraceRootEndedAt) and that were last
	// updated before updatedBefore, oldest first.
	QuietTraceThreads(ctx context.Context, updatedBefore time.Time, limit int) ([]string, error)
}
