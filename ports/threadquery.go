package ports

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// The read side of threads. The query API reads rows written by the thread
// store through these interfaces; every method that takes a list of ids
// answers for all of them with one SQL statement, so a GraphQL request costs
// a bounded number of statements whatever the size of its lists.

// ThreadView is one row of threads.
type ThreadView struct {
	ID              string
	ContractID      *string
	ContractName    *string
	ContractVersion *int
	Label           *string
	OwnerKind       string
	OwnerID         string
	ServiceName     *string
	Status          string
	Error           *string
	// EndReason is the reason given when the thread was cancelled.
	EndReason   *string
	LastHash    string
	StepCount   int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
	// TraceStartedAt is an OTLP trace thread's earliest span's start when
	// it is before CreatedAt (domain.Thread.StartedAt); nil otherwise.
	TraceStartedAt *time.Time
	// Refs are the thread's refs (key → value), read with the row.
	Refs map[string]string
	Tags []string
	// Health and HealthStatus are kept on the row by the write side;
	// DurationMs is to the thread's end, or to its latest activity while open.
	Health       domain.ThreadHealth
	HealthStatus domain.HealthStatus
	DurationMs   int64
	// ExactRef is set by ListThreads in a refValue search when one of the
	// thread's ref values equals the search exactly (those sort first).
	ExactRef bool
}

// Started is when the thread started as its readers show it (startedAt):
// its trace's earliest span, else CreatedAt. Lists order and page by
// CreatedAt, which never moves.
func (v ThreadView) Started() time.Time {
	if v.TraceStartedAt != nil && v.TraceStartedAt.Before(v.CreatedAt) {
		return *v.TraceStartedAt
	}
	return v.CreatedAt
}

// Thread list orders.
const (
	OrderStartedAt = "STARTED_AT"
	OrderDuration  = "DURATION"
)

// ThreadFilter narrows ListThreads. Empty fields mean "any".
type ThreadFilter struct {
	Actor           string
	ContractName    string
	ContractVersion *int // applied only with ContractName
	Status          string
	StartedAfter    *time.Time // inclusive, on created_at
	StartedBefore   *time.Time
	CompletedAfter  *time.Time // inclusive, on completed_at
	CompletedBefore *time.Time
	// RefKey matches the whole key, ignoring case as the store's LOWER
	// does (ASCII letters on SQLite; orderid finds orderId); RefValue is a case-insensitive substring.
	// Threads whose value matches exactly sort first.
	RefKey   string
	RefValue string
	// Health keeps threads with any of these health statuses.
	Health []domain.HealthStatus
	// Tag keeps threads carrying this tag (exact).
	Tag string
	// IDPrefix keeps threads whose id starts with it (case-insensitive).
	IDPrefix string
	// IssueType and IssueStep keep threads whose first issue (the cause
	// the thread list and the Problems view show) is of this rule — a
	// validation issue type, or step_failed — and at this step.
	IssueType string
	IssueStep string
	// OrderBy is OrderStartedAt (default) or OrderDuration; Ascending flips
	// the default newest/longest first.
	OrderBy   string
	Ascending bool
	// Party, when set, keeps only the threads that principal is a party of.
	Party *PartyOf
	// After, when set, keeps the threads that sort after this position in
	// the list's order (keyset paging: an index range scan at any depth);
	// Before keeps those that sort before it and returns them in list order
	// (the page that ends just before it). Offset still applies after them.
	After, Before *ThreadPosition
	Limit         int
	Offset        int
}

// ThreadPosition is a thread's place in a list: the values of the list's
// sort keys for it (Exact only in a refValue search, DurationMs only in a
// DURATION order).
type ThreadPosition struct {
	Exact      bool
	DurationMs int64
	CreatedAt  time.Time
	ID         string
}

// Position returns t's place in the list it was read with. A DURATION
// order sorts an active thread as 0 (its duration is known when it ends;
// the column threads.ended_duration_ms, migration 00106).
func (t ThreadView) Position() ThreadPosition {
	d := t.DurationMs
	if t.Status == string(domain.ThreadActive) {
		d = 0
	}
	return ThreadPosition{Exact: t.ExactRef, DurationMs: d, CreatedAt: t.CreatedAt, ID: t.ID}
}

// PartyOf names a principal whose reads are limited to its threads: those it
// owns (started) and those it holds an access row on (joined) that has not
// expired at Now.
type PartyOf struct {
	PrincipalID string
	Now         time.Time
}

// ThreadCounts are the sizes of a thread's lists, so a page can say
// "showing N of M".
type ThreadCounts struct {
	Steps       int // step identities
	Validations int // validation results
}

// StepFilter narrows the step states of a thread. Statuses holds accepted
// values (e.g. both "success" and "completed").
type StepFilter struct {
	StepName       string
	IdempotencyKey string
	Statuses       []string
	Offset         int // step states skipped per thread
	// FirstOfName keeps only the first-seen step state of each step name:
	// one row per group of a thread that repeats a step (a pick wave's
	// pick_item × 58), in first-seen order.
	FirstOfName bool
}

// StepGroupView is every step identity of a thread sharing one step name.
type StepGroupView struct {
	ThreadID    string
	StepName    string
	Steps       int // step identities of this name
	Failed      int // whose latest attempt failed
	Succeeded   int // whose latest attempt succeeded (success or completed)
	FirstSeenAt time.Time
}

// StepEdgeView is a step order a thread took: step identities of To whose
// previous step was From ("" for a first step), and how many.
type StepEdgeView struct {
	ThreadID string
	From, To string
	Count    int
}

// IssueRef asks which step identity holds a thread's first issue: the first
// failed attempt of StepName (Failed) or its first violated validation.
type IssueRef struct {
	ThreadID string
	StepName string
	Failed   bool
}

// StepKey identifies a step: thread, step name and idempotency key.
type StepKey struct {
	ThreadID       string
	StepName       string
	IdempotencyKey string
}

// StepView is a row of thread_step_states joined with its latest
// activity's hashes.
type StepView struct {
	StepKey
	Status        string
	RetryCount    int
	LatestStepID  string
	LatestSeq     int
	PreviousStep  *string
	Actor         string
	ActorService  string
	LatestContext string // JSON
	FirstSeenAt   time.Time
	LastUpdatedAt time.Time
	StartedAt     *time.Time
	FinishedAt    *time.Time
	Hash          string
	PrevHash      string
}

// HistoryFilter narrows and pages the activities of a step, newest first.
// An empty IdempotencyKey in a history query means "every key".
type HistoryFilter struct {
	StartAt      *time.Time
	EndAt        *time.Time
	ActivityType string
	Actor        string // matches actor or actor_service
	Limit        int
	Offset       int
}

// ActivityView is one row of thread_activities.
type ActivityView struct {
	ID             string
	ThreadID       string
	Seq            int
	ActivityType   string
	StepName       string
	IdempotencyKey string
	Status         string
	Attempt        int
	Actor          string
	ActorService   string
	Context        string // JSON
	Metadata       string // JSON
	StartedAt      *time.Time
	FinishedAt     *time.Time
	RecordedAt     time.Time
	ContentHash    string
	Hash           string
	PrevHash       string
	// Validation is the overall status of the validation made for this
	// attempt (passed, warning, violated), "" when none; filled by History,
	// Histories and Attempts only.
	Validation string
}

// SubStepView is one row of step_substeps, with the step it belongs to.
type SubStepView struct {
	ID         string
	ThreadID   string
	StepID     string
	Step       StepKey
	Name       string
	Status     string
	Payload    string // JSON
	RecordedAt time.Time
	CreatedAt  time.Time
}

// ValidationFilter narrows and pages validation results, newest first.
type ValidationFilter struct {
	StepID         string
	StepName       string
	IdempotencyKey string
	ValidationType string // keeps results having an issue of this type
	Limit          int
	Offset         int
}

// ValidationView is one validation result: a row of thread_validations, or
// a passed result without issues stored compactly on its attempt (then ID
// is the attempt's id and CreatedAt its recording time).
type ValidationView struct {
	ID             string
	ThreadID       string
	StepID         string
	StepName       string
	IdempotencyKey string
	OverallStatus  string
	Issues         string // JSON array
	CriticalCount  int
	WarningCount   int
	MinorCount     int
	InfoCount      int
	CreatedAt      time.Time
}

// NotificationFilter narrows and pages thread notifications, newest first.
type NotificationFilter struct {
	StepID           string
	StepName         string
	Source           string
	NotificationType string
	Severities       []string
	Limit            int
	Offset           int
}

// NotificationView is one row of thread_notifications.
type NotificationView struct {
	ID               string
	ThreadID         string
	StepID           string
	StepName         string
	IdempotencyKey   string
	Source           string
	NotificationType string
	StepStatus       string
	ValidationStatus string
	ViolationType    string
	Severity         string
	Message          string
	Details          string // JSON
	CreatedAt        time.Time
}

// NotificationCounts aggregates a thread's notifications.
type NotificationCounts struct {
	Total, Critical, Warning, Major, Minor, Info int
	Execution, Validation                        int
}

// ChainLink is a thread reached from a root through linkedThread refs.
type ChainLink struct {
	RootID   string
	ThreadID string
	Depth    int // the root is 1
}

// ThreadQueries reads threads and everything recorded about them: the
// small read ports below.
type ThreadQueries interface {
	ThreadReads
	StepReads
	ValidationReads
}

// ThreadReads reads threads, their refs and links.
type ThreadReads interface {
	// GetThreads returns the threads with these ids that exist, in any
	// order. Threads come with their refs (GetThreads and ListThreads).
	GetThreads(ctx context.Context, ids []string) ([]ThreadView, error)
	// ListThreads returns one page in f's order (newest first by default).
	// It never counts: a page is an index range scan.
	ListThreads(ctx context.Context, f ThreadFilter) ([]ThreadView, error)
	// CountThreads counts the threads matching f (its paging ignored), but
	// stops at upTo: the answer is min(matching, upTo), so a count reads at
	// most upTo index entries whatever the size of the table.
	CountThreads(ctx context.Context, f ThreadFilter, upTo int) (int, error)
	// Refs returns each thread's refs (key → value).
	Refs(ctx context.Context, threadIDs []string) (map[string]map[string]string, error)
	// Counts returns the sizes of each thread's step and validation lists.
	Counts(ctx context.Context, threadIDs []string) (map[string]ThreadCounts, error)
	// LinkedFrom returns, for each thread, the ids of the threads whose
	// "linkedThread:*" refs point at it (at most limit per thread).
	LinkedFrom(ctx context.Context, threadIDs []string, limit int) (map[string][]string, error)
	// Chains returns, for each root, the root (depth 1) and the threads
	// linked from it through "linkedThread:*" refs, breadth first, up to
	// maxDepth and at most limit threads per root.
	Chains(ctx context.Context, rootIDs []string, maxDepth, limit int) (map[string][]ChainLink, error)
	// PartyThreads returns those of ids that p is a party of, in any order.
	PartyThreads(ctx context.Context, p PartyOf, ids []string) ([]string, error)
	// ThreadsVersion is an opaque value that changes whenever a thread is
	// started or updated (a step, an end, a health change), cheap enough to
	// poll: what a list's "anything new?" check compares.
	ThreadsVersion(ctx context.Context) (string, error)
}

// StepReads reads the steps of threads: states, attempts, sub-steps.
type StepReads interface {
	// Steps returns at most perThread step states of each thread, ordered by
	// first_seen_at.
	Steps(ctx context.Context, threadIDs []string, f StepFilter, perThread int) (map[string][]StepView, error)
	// Attempts returns a page of each thread's attempts in chain (seq) order.
	Attempts(ctx context.Context, threadIDs []string, limit, offset int) (map[string][]ActivityView, error)
	// Activities returns each thread's whole chain in seq order (for
	// integrity verification).
	Activities(ctx context.Context, threadIDs []string) (map[string][]ActivityView, error)
	// StepHistories returns the activities of each step, newest first, paged
	// per step.
	StepHistories(ctx context.Context, steps []StepKey, f HistoryFilter) (map[StepKey][]ActivityView, error)
	// History returns one step's activities (every idempotency key when
	// key.IdempotencyKey is empty), newest first.
	History(ctx context.Context, key StepKey, f HistoryFilter) ([]ActivityView, error)
	// SubSteps returns the sub-steps recorded under any attempt of each step.
	SubSteps(ctx context.Context, steps []StepKey) (map[StepKey][]SubStepView, error)
	// StepGroups returns each thread's step identities grouped by step name,
	// in first-seen order, at most perThread groups per thread.
	StepGroups(ctx context.Context, threadIDs []string, perThread int) (map[string][]StepGroupView, error)
	// StepEdges returns each thread's distinct (previous step, step) pairs
	// with how many step identities took them, at most perThread per thread.
	StepEdges(ctx context.Context, threadIDs []string, perThread int) (map[string][]StepEdgeView, error)
	// IssueKeys returns the idempotency key of the step identity holding
	// each asked issue (absent when none is recorded), by thread id.
	IssueKeys(ctx context.Context, refs []IssueRef) (map[string]string, error)
}

// ValidationReads reads validation results and notifications.
type ValidationReads interface {
	// Validations returns each thread's validation results, paged per thread.
	Validations(ctx context.Context, threadIDs []string, f ValidationFilter) (map[string][]ValidationView, error)
	// LatestValidations returns the newest validation result of each step.
	LatestValidations(ctx context.Context, steps []StepKey) (map[StepKey]ValidationView, error)
	// Notifications returns each thread's notifications, paged per thread.
	Notifications(ctx context.Context, threadIDs []string, f NotificationFilter) (map[string][]NotificationView, error)
	// NotificationCounts aggregates each thread's notifications.
	NotificationCounts(ctx context.Context, threadIDs []string) (map[string]NotificationCounts, error)
}
