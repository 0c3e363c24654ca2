package ports

import (
	"context"
	"time"
)

// ThreadRecord is one row of threads as the write side sees it.
type ThreadRecord struct {
	ID              string
	ContractID      string // "" for free-form threads
	ContractName    string
	ContractVersion int
	Label           string
	OwnerKind       string
	OwnerID         string
	ServiceName     string
	Status          string // active | completed | failed | cancelled
	Error           string
	LastHash        string
	StepCount       int
	Tags            []string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	CompletedAt     *time.Time
}

// ThreadAccess grants a principal a level of access to one thread.
type ThreadAccess struct {
	ThreadID      string
	PrincipalKind string
	PrincipalID   string
	Role          string
	AccessLevel   string // owner | participant | observer | external
	GrantedBy     string
	GrantedAt     time.Time
	ExpiresAt     *time.Time
}

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
}

// StepTx is what a step append sees inside its transaction, with the thread
// row locked: the thread, the current state of the step identity being
// written (nil if new), the step name of the latest attempt, the writer's
// access row (nil when it has none) and, only when asked for, every step
// state ordered by latest attempt (contract validation needs them).
type StepTx struct {
	Thread       ThreadRecord
	Current      *StepState
	LastStepName string
	States       []StepState
	Access       *ThreadAccess
}

// StepPlan is what the caller decided to write. Duplicate writes nothing.
type StepPlan struct {
	Duplicate     bool
	Activity      Activity
	SubSteps      []SubStep
	State         StepState
	Validation    *ValidationRecord
	Notifications []NotificationRecord
	// Thread carries the updated thread row (last_hash, step_count, status…).
	Thread ThreadRecord
}

// ThreadUpdate mutates a locked thread inside the store's transaction; it
// returns the notifications to persist with the change.
type ThreadUpdate func(t *ThreadRecord) ([]NotificationRecord, error)

// ThreadStore is the write side of thread storage. Every method is one
// transaction; success means it committed.
type ThreadStore interface {
	// CreateThread inserts the thread, its refs and the owner's access row.
	CreateThread(ctx context.Context, t ThreadRecord, refs map[string]string, owner ThreadAccess) error
	GetThread(ctx context.Context, id string) (ThreadRecord, error)
	// AppendStep locks the thread row, loads what StepTx holds, calls plan and
	// writes what it returns (activity, sub-steps, state, validation,
	// notifications, thread row) in the same transaction.
	AppendStep(ctx context.Context, threadID, principalID, stepName, idempotencyKey string, withStates bool,
		plan func(StepTx) (StepPlan, error)) (StepPlan, error)
	// ListStepStates returns the thread's current step states by latest attempt.
	ListStepStates(ctx context.Context, threadID string) ([]StepState, error)
	// UpdateThread locks the thread, applies fn and stores the result.
	UpdateThread(ctx context.Context, threadID string, fn ThreadUpdate) (ThreadRecord, error)
	// UpsertRefs merges refs (per key) into the thread's refs.
	UpsertRefs(ctx context.Context, threadID string, refs map[string]string) error
	// FindThreadByRef returns the id of the oldest thread with ref key=value.
	FindThreadByRef(ctx context.Context, key, value string) (string, error)
	// GrantAccess inserts or replaces a principal's access to a thread.
	GrantAccess(ctx context.Context, a ThreadAccess) error
	// GetAccess returns a principal's access row (not found if none).
	GetAccess(ctx context.Context, threadID, principalID string) (ThreadAccess, error)
	// ListActivities returns the thread's activities ordered by seq.
	ListActivities(ctx context.Context, threadID string) ([]Activity, error)
	// HasActivity reports whether any attempt of (thread, step, key) exists;
	// OTLP uses it to drop spans it has already ingested.
	HasActivity(ctx context.Context, threadID, stepName, idempotencyKey string) (bool, error)
}
