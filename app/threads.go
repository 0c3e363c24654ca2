package app

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Thread and step statuses the write side produces.
const (
	ThreadActive    = "active"
	ThreadCompleted = "completed"
	ThreadFailed    = "failed"
	ThreadCancelled = "cancelled"
)

// Access levels of a principal on a thread.
const (
	AccessOwner       = "owner"
	AccessParticipant = "participant"
	AccessObserver    = "observer"
	AccessExternal    = "external"
)

// Limits on one write; they bound the size of rows and of the hash input.
const (
	MaxRefs        = 64
	MaxRefKeyLen   = 256
	MaxRefValueLen = 2048
	MaxTags        = 32
	MaxStepNameLen = 256
	MaxSubSteps    = 256
	// MaxInvocationIDLen is in characters: SDKs generate the id, typically a UUID.
	MaxInvocationIDLen = 128
)

// hashVersion names the current hash-chain secret. Secrets are kept by version
// forever; a rotation adds a version, it never replaces one.
const hashVersion = "1"

// Threads records thread execution data: threads, steps (append-only, hash
// chained, contract validated), refs, parties and notifications.
type Threads struct {
	store     ports.ThreadStore
	contracts ports.Contracts // nil: contract threads are refused
	clock     ports.Clock
	secret    []byte
	inviteKey []byte
	hub       *Hub
	log       *slog.Logger

	cmu        sync.RWMutex
	cache      map[string]domain.Contract // "name:version" → contract (versions are immutable)
	threadRefs map[string]contractRef     // thread id → its contract
}

// NewThreads wires the use cases. secret keys the hash chain and invitations.
func NewThreads(store ports.ThreadStore, contracts ports.Contracts, clock ports.Clock, secret []byte, log *slog.Logger) *Threads {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = ports.SystemClock{}
	}
	return &Threads{store: store, contracts: contracts, clock: clock, secret: secret,
		inviteKey: deriveKey(secret, "threadengine-invite-v1"), hub: NewHub(log), log: log,
		cache: map[string]domain.Contract{}, threadRefs: map[string]contractRef{}}
}

// Hub is the live notification router shared by WebSocket sessions.
func (t *Threads) Hub() *Hub { return t.hub }

func (t *Threads) now() time.Time { return t.clock.Now().UTC().Truncate(time.Microsecond) }

// StartThreadInput is a new thread. Contract is "", "name" or "name:version".
type StartThreadInput struct {
	Contract    string
	Role        string
	Label       string
	ServiceName string
	Refs        map[string]string
	Tags        []string
}

// StartThread creates an active thread owned by the caller.
func (t *Threads) StartThread(ctx context.Context, in StartThreadInput) (ports.ThreadRecord, error) {
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return ports.ThreadRecord{}, err
	}
	if err := checkRefs(in.Refs); err != nil {
		return ports.ThreadRecord{}, err
	}
	if len(in.Tags) > MaxTags {
		return ports.ThreadRecord{}, domain.Invalid("tags", "at most %d tags", MaxTags)
	}
	now := t.now()
	th := ports.ThreadRecord{ID: uuid.NewString(), Label: in.Label, OwnerKind: string(p.Kind), OwnerID: p.ID,
		ServiceName: in.ServiceName, Status: ThreadActive, Tags: in.Tags, CreatedAt: now, UpdatedAt: now}
	if th.Label == "" {
		th.Label = in.Refs["label"]
	}
	if strings.TrimSpace(in.Contract) != "" {
		c, err := t.contractByRef(ctx, in.Contract)
		if err != nil {
			return ports.ThreadRecord{}, err
		}
		if in.Role == "" {
			return ports.ThreadRecord{}, domain.Invalid("role", "role is required for contract threads (one of %s)", strings.Join(c.Parties, ", "))
		}
		if !hasString(c.Parties, in.Role) {
			return ports.ThreadRecord{}, domain.Invalid("role", "role %q is not a party of contract %s (parties: %s)", in.Role, c.Ref(), strings.Join(c.Parties, ", "))
		}
		th.ContractID, th.ContractName, th.ContractVersion = c.Name, c.Name, c.Version
	}
	owner := ports.ThreadAccess{ThreadID: th.ID, PrincipalKind: string(p.Kind), PrincipalID: p.ID, Role: in.Role,
		AccessLevel: AccessOwner, GrantedBy: p.ID, GrantedAt: now}
	if err := t.store.CreateThread(ctx, th, in.Refs, owner); err != nil {
		return ports.ThreadRecord{}, err
	}
	t.rememberThread(th.ID, contractRef{th.ContractName, th.ContractVersion})
	return th, nil
}

func (t *Threads) contractByRef(ctx context.Context, ref string) (domain.Contract, error) {
	name, version, err := domain.ParseContractRef(ref)
	if err != nil {
		return domain.Contract{}, err
	}
	return t.contract(ctx, name, version)
}

// contract loads a contract version; pinned versions are cached (immutable),
// "latest" is always looked up.
func (t *Threads) contract(ctx context.Context, name string, version int) (domain.Contract, error) {
	if t.contracts == nil {
		return domain.Contract{}, domain.NotFound("contract " + name)
	}
	key := name + ":" + strconv.Itoa(version)
	if version > 0 {
		t.cmu.RLock()
		c, ok := t.cache[key]
		t.cmu.RUnlock()
		if ok {
			return c, nil
		}
	}
	c, err := t.contracts.GetContract(ctx, name, version)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.Contract{}, domain.NotFound("contract " + strings.TrimSuffix(key, ":0"))
		}
		return domain.Contract{}, err
	}
	t.cmu.Lock()
	t.cache[c.Ref()] = c
	t.cmu.Unlock()
	return c, nil
}

// SubStepInput is one sub-step sent with a step.
type SubStepInput struct {
	Name       string
	Status     string
	Payload    map[string]any
	RecordedAt time.Time
}

// RecordStepInput is one finished step attempt.
type RecordStepInput struct {
	ThreadID       string
	StepName       string
	Status         string
	IdempotencyKey string
	Context        map[string]string
	Metadata       map[string]any
	ServiceName    string
	StartedAt      *time.Time
	FinishedAt     *time.Time
	SubSteps       []SubStepInput
	// InvocationID identifies this one attempt (optional): a client re-sends
	// the same attempt with the same id when it never saw the reply.
	InvocationID string
}

// StepResult is what recording a step did.
type StepResult struct {
	StepID         string
	StepName       string
	IdempotencyKey string
	Status         string
	Attempt        int
	RetryCount     int
	Duplicate      bool
	// SameInvocation: the duplicate is a re-sent attempt (same invocation id),
	// not a step that already succeeded.
	SameInvocation bool
	ThreadStatus   string
	Validation     *domain.ValidationResult
}

// RecordStep appends one attempt, idempotently: for the same (thread, step
// name, idempotency key) a latest attempt with the same non-empty invocation
// id, or a latest success, makes this a duplicate (nothing is written); any
// other latest attempt makes it a retry (appended, retryCount+1).
// The reply may be sent once this returns: the transaction has committed.
func (t *Threads) RecordStep(ctx context.Context, in RecordStepInput) (StepResult, error) {
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return StepResult{}, err
	}
	if err := checkStepInput(in); err != nil {
		return StepResult{}, err
	}
	// The contract is read before the transaction so the row lock is held only
	// for the append itself (and SQLite's single connection is not needed twice).
	ref, err := t.threadContract(ctx, in.ThreadID)
	if err != nil {
		return StepResult{}, err
	}
	var c *domain.Contract
	if ref.name != "" {
		cc, err := t.contract(ctx, ref.name, ref.version)
		if err != nil {
			return StepResult{}, err
		}
		c = &cc
	}
	now := t.now()
	var res StepResult
	plan, err := t.store.AppendStep(ctx, in.ThreadID, p.ID, in.StepName, in.IdempotencyKey, c != nil, func(v ports.StepTx) (ports.StepPlan, error) {
		res = StepResult{StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, Status: in.Status, ThreadStatus: v.Thread.Status}
		prev := v.Current
		// The invocation id is checked first: a re-sent failed attempt must not
		// count as a retry, and a re-sent success is reported as what it is.
		sameInvocation := prev != nil && in.InvocationID != "" && prev.InvocationID == in.InvocationID
		if sameInvocation || prev != nil && domain.StepSucceeded(prev.Status) {
			res.Duplicate, res.StepID, res.RetryCount, res.Status = true, prev.LatestStepID, prev.RetryCount, prev.Status
			res.SameInvocation = sameInvocation
			res.Attempt = prev.RetryCount + 1
			return ports.StepPlan{Duplicate: true}, nil
		}
		if v.Thread.Status != ThreadActive {
			return ports.StepPlan{}, domain.E(domain.KindConflict, domain.CodeThreadClosed, "thread is %s", v.Thread.Status)
		}
		if v.Access != nil && v.Access.AccessLevel == AccessObserver {
			return ports.StepPlan{}, domain.Forbidden("observers cannot record steps on this thread")
		}
		return t.planStep(v, c, p, in, prev, now, &res)
	})
	if err != nil {
		return StepResult{}, err
	}
	if !plan.Duplicate {
		t.hub.Publish(plan.Notifications)
	}
	return res, nil
}

func (t *Threads) planStep(v ports.StepTx, c *domain.Contract, p domain.Principal, in RecordStepInput,
	prev *ports.StepState, now time.Time, res *StepResult) (ports.StepPlan, error) {
	th := v.Thread
	state := ports.StepState{StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, Status: in.Status,
		InvocationID: in.InvocationID, Actor: p.ID, ActorService: in.ServiceName, LatestContext: in.Context,
		FirstSeenAt: now, LastUpdatedAt: now, StartedAt: in.StartedAt, FinishedAt: in.FinishedAt}
	if prev != nil {
		state.RetryCount = prev.RetryCount + 1
		state.FirstSeenAt = prev.FirstSeenAt
		state.PreviousStep = prev.PreviousStep
	} else {
		state.PreviousStep = v.LastStepName
	}
	stepID := uuid.NewString()
	state.LatestStepID = stepID
	attempt := state.RetryCount + 1
	a := ports.Activity{ID: stepID, ThreadID: th.ID, Seq: th.StepCount + 1, StepName: in.StepName,
		IdempotencyKey: in.IdempotencyKey, Status: in.Status, Attempt: attempt, Actor: p.ID,
		ActorService: in.ServiceName, Context: in.Context, Metadata: in.Metadata, StartedAt: in.StartedAt,
		FinishedAt: in.FinishedAt, RecordedAt: now, PrevHash: th.LastHash}
	a.ContentHash = domain.ContentHash(a.Context, a.Metadata)
	a.Hash = domain.ChainHash(t.secret, hashVersion, domain.ChainLink{ThreadID: th.ID, StepID: stepID,
		StepName: in.StepName, ContentHash: a.ContentHash, PrevHash: th.LastHash, RecordedAt: now})
	plan := ports.StepPlan{Activity: a, State: state}
	for _, ss := range in.SubSteps {
		rt := ss.RecordedAt
		if rt.IsZero() {
			rt = now
		}
		plan.SubSteps = append(plan.SubSteps, ports.SubStep{ID: uuid.NewString(), StepID: stepID, Name: ss.Name,
			Status: ss.Status, Payload: ss.Payload, RecordedAt: rt})
	}
	th.LastHash, th.StepCount, th.UpdatedAt = a.Hash, a.Seq, now
	contractName := ""
	if c != nil {
		contractName = c.Name
	}
	base := ports.NotificationRecord{ThreadID: th.ID, StepID: stepID, StepName: in.StepName,
		IdempotencyKey: in.IdempotencyKey, ContractName: contractName, OwnerID: th.OwnerID, StepStatus: in.Status,
		ValidationStatus: "none", Severity: "info", CreatedAt: now}
	exec := base
	exec.ID, exec.Source = uuid.NewString(), "execution"
	if domain.StepSucceeded(in.Status) {
		exec.NotificationType, exec.Message = "execution.success", "Step '"+in.StepName+"' success"
	} else {
		exec.NotificationType, exec.Message = "execution.failed", "Step '"+in.StepName+"' "+in.Status
		exec.Severity = "warning"
		if e, ok := in.Metadata["error"]; ok {
			exec.Details = map[string]any{"error": e}
		}
	}
	if c != nil {
		snap := domain.ThreadSnapshot{StartedAt: th.CreatedAt, Role: accessRole(v.Access)}
		for _, s := range v.States { // ordered by latest attempt
			snap.Steps = append(snap.Steps, domain.RecordedStep{Name: s.StepName, Status: s.Status,
				RecordedAt: s.LastUpdatedAt, Attempt: s.RetryCount + 1})
		}
		si := domain.StepInput{Name: in.StepName, Status: in.Status, Context: in.Context, Attempt: attempt,
			Party: accessRole(v.Access)}
		if in.StartedAt != nil {
			si.StartedAt = *in.StartedAt
		}
		if in.FinishedAt != nil {
			si.FinishedAt = *in.FinishedAt
		}
		vr := domain.ValidateStep(*c, snap, si, now)
		res.Validation = &vr
		plan.Validation = &ports.ValidationRecord{ID: uuid.NewString(), StepID: stepID, StepName: in.StepName,
			IdempotencyKey: in.IdempotencyKey, OverallStatus: vr.OverallStatus, Issues: vr.Issues,
			CriticalCount: vr.CriticalCount, WarningCount: vr.WarningCount, MinorCount: vr.MinorCount,
			InfoCount: vr.InfoCount, CreatedAt: now}
		exec.ValidationStatus = vr.OverallStatus
		if vr.OverallStatus == domain.ValidationViolated || vr.OverallStatus == domain.ValidationWarning {
			worst, _ := vr.MostSevere()
			viol := base
			viol.ID, viol.Source, viol.NotificationType = uuid.NewString(), "validation", "validation.violated"
			viol.ValidationStatus, viol.ViolationType, viol.Severity = vr.OverallStatus, worst.Type, string(worst.Severity)
			viol.Message = worst.Message
			viol.Details = map[string]any{"issues": vr.Issues}
			plan.Notifications = append(plan.Notifications, viol)
		} else {
			// Both SDK vocabularies have rule.passed / validation.passed;
			// subscribers that did not ask for it never receive it.
			pass := base
			pass.ID, pass.Source, pass.NotificationType = uuid.NewString(), "validation", "validation.passed"
			pass.ValidationStatus, pass.Message = vr.OverallStatus, "Step '"+in.StepName+"' passed validation"
			plan.Notifications = append(plan.Notifications, pass)
		}
		switch {
		case vr.CompletesThread(*c, si):
			th.Status, th.CompletedAt = ThreadCompleted, &now
			plan.Notifications = append(plan.Notifications, threadEvent(th, ThreadCompleted,
				"Thread completed by terminal step '"+in.StepName+"'", now))
		case vr.FailsThread() && c.IsTerminal(in.StepName) && domain.StepSucceeded(in.Status):
			// A terminal step that broke a critical rule ends the thread as failed
			// rather than leaving it open forever.
			worst, _ := vr.MostSevere()
			th.Status, th.CompletedAt, th.Error = ThreadFailed, &now, worst.Message
		}
	}
	plan.Notifications = append([]ports.NotificationRecord{exec}, plan.Notifications...)
	plan.Thread = th
	*res = StepResult{StepID: stepID, StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, Status: in.Status,
		Attempt: attempt, RetryCount: state.RetryCount, ThreadStatus: th.Status, Validation: res.Validation}
	return plan, nil
}

type contractRef struct {
	name    string
	version int
}

// maxThreadRefs bounds the thread → contract cache; when full it starts over.
const maxThreadRefs = 100_000

// threadContract returns the contract a thread was started with. A thread's
// contract never changes, so the answer is cached and the hot path of
// recording a step skips one query.
func (t *Threads) threadContract(ctx context.Context, threadID string) (contractRef, error) {
	t.cmu.RLock()
	ref, ok := t.threadRefs[threadID]
	t.cmu.RUnlock()
	if ok {
		return ref, nil
	}
	th, err := t.store.GetThread(ctx, threadID)
	if err != nil {
		return contractRef{}, err
	}
	ref = contractRef{th.ContractName, th.ContractVersion}
	t.rememberThread(th.ID, ref)
	return ref, nil
}

func (t *Threads) rememberThread(id string, ref contractRef) {
	t.cmu.Lock()
	if len(t.threadRefs) >= maxThreadRefs {
		t.threadRefs = map[string]contractRef{}
	}
	t.threadRefs[id] = ref
	t.cmu.Unlock()
}

func accessRole(a *ports.ThreadAccess) string {
	if a == nil {
		return ""
	}
	return a.Role
}

func threadEvent(th ports.ThreadRecord, status, msg string, now time.Time) ports.NotificationRecord {
	return ports.NotificationRecord{ID: uuid.NewString(), ThreadID: th.ID, StepName: "global",
		ContractName: th.ContractName, OwnerID: th.OwnerID, Source: "thread", NotificationType: "thread." + status,
		ValidationStatus: "none", Severity: "info", Message: msg, CreatedAt: now}
}

// EndThread closes an active thread as completed or cancelled. Ending a thread
// again with the status it already has is a no-op that succeeds (a client
// retrying after a lost reply, or a manual "completed" after a contract
// thread's terminal step): the thread is left as it is and nothing is published. A contract thread
// completes only through a succeeded terminal step.
func (t *Threads) EndThread(ctx context.Context, threadID, status, reason string) (ports.ThreadRecord, error) {
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return ports.ThreadRecord{}, err
	}
	if status == "" {
		status = ThreadCancelled
	}
	if status != ThreadCompleted && status != ThreadCancelled {
		return ports.ThreadRecord{}, domain.Invalid("status", "status must be completed or cancelled, not %q", status)
	}
	if err := t.checkWrite(ctx, p, threadID); err != nil {
		return ports.ThreadRecord{}, err
	}
	var events []ports.NotificationRecord
	th, err := t.store.UpdateThread(ctx, threadID, func(th *ports.ThreadRecord) ([]ports.NotificationRecord, error) {
		events = nil
		if th.Status == status {
			return nil, nil
		}
		if th.Status != ThreadActive {
			return nil, domain.E(domain.KindConflict, domain.CodeThreadClosed, "thread is already %s", th.Status)
		}
		if status == ThreadCompleted && th.ContractName != "" {
			return nil, domain.E(domain.KindConflict, domain.CodeInvalidStatusTransition,
				"contract thread %s:%d completes when a terminal step succeeds; none has yet", th.ContractName, th.ContractVersion)
		}
		now := t.now()
		th.Status, th.CompletedAt, th.UpdatedAt = status, &now, now
		if status == ThreadCancelled {
			th.Error = reason
		}
		msg := "Thread " + status
		if reason != "" {
			msg += ": " + reason
		}
		ev := threadEvent(*th, status, msg, now)
		if reason != "" {
			ev.Details = map[string]any{"reason": reason}
		}
		events = []ports.NotificationRecord{ev}
		return events, nil
	})
	if err != nil {
		return ports.ThreadRecord{}, err
	}
	t.hub.Publish(events)
	return th, nil
}

// checkWrite refuses writers whose access to the thread is read-only.
func (t *Threads) checkWrite(ctx context.Context, p domain.Principal, threadID string) error {
	a, err := t.store.GetAccess(ctx, threadID, p.ID)
	if err == nil {
		if a.AccessLevel == AccessObserver {
			return domain.Forbidden("observers cannot write to this thread")
		}
		return nil
	}
	if domain.KindOf(err) != domain.KindNotFound {
		return err
	}
	_, err = t.store.GetThread(ctx, threadID)
	return err
}

// AddRefs merges refs (key by key) into a thread's refs.
func (t *Threads) AddRefs(ctx context.Context, threadID string, refs map[string]string) error {
	p, err := Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return err
	}
	if len(refs) == 0 {
		return domain.Invalid("refs", "refs must be a non-empty object")
	}
	if err := checkRefs(refs); err != nil {
		return err
	}
	if err := t.checkWrite(ctx, p, threadID); err != nil {
		return err
	}
	return t.store.UpsertRefs(ctx, threadID, refs)
}

// FindThreadByRef returns the id of the oldest thread with ref key=value.
func (t *Threads) FindThreadByRef(ctx context.Context, key, value string) (string, error) {
	if _, err := Require(ctx, domain.PermThreadsRead); err != nil {
		return "", err
	}
	return t.store.FindThreadByRef(ctx, key, value)
}

// HasStep reports whether any attempt of (thread, step, key) is recorded.
func (t *Threads) HasStep(ctx context.Context, threadID, stepName, key string) (bool, error) {
	if _, err := Require(ctx, domain.PermThreadsRead); err != nil {
		return false, err
	}
	return t.store.HasActivity(ctx, threadID, stepName, key)
}

// VerifyIntegrity recomputes the thread's hash chain from the stored
// activities (content hashes recomputed from context and metadata).
func (t *Threads) VerifyIntegrity(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	if _, err := Require(ctx, domain.PermThreadsRead); err != nil {
		return domain.ChainStatus{}, err
	}
	if _, err := t.store.GetThread(ctx, threadID); err != nil {
		return domain.ChainStatus{}, err
	}
	acts, err := t.store.ListActivities(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	links := make([]domain.ChainLink, len(acts))
	for i, a := range acts {
		links[i] = domain.ChainLink{ThreadID: a.ThreadID, StepID: a.ID, StepName: a.StepName,
			ContentHash: domain.ContentHash(a.Context, a.Metadata), PrevHash: a.PrevHash, Hash: a.Hash,
			RecordedAt: a.RecordedAt}
	}
	return domain.VerifyChain(map[string][]byte{hashVersion: t.secret}, links), nil
}

func checkRefs(refs map[string]string) error {
	if len(refs) > MaxRefs {
		return domain.Invalid("refs", "at most %d refs", MaxRefs)
	}
	for k, v := range refs {
		if k == "" || len(k) > MaxRefKeyLen {
			return domain.Invalid("refs", "ref keys must be 1-%d bytes", MaxRefKeyLen)
		}
		if len(v) > MaxRefValueLen {
			return domain.Invalid("refs", "ref %q is longer than %d bytes", k, MaxRefValueLen)
		}
	}
	return nil
}

func checkStepInput(in RecordStepInput) error {
	switch {
	case in.ThreadID == "":
		return domain.Invalid("threadId", "Missing required field: threadId")
	case in.StepName == "":
		return domain.Invalid("stepName", "Missing required field: stepName")
	case len(in.StepName) > MaxStepNameLen:
		return domain.Invalid("stepName", "stepName is longer than %d bytes", MaxStepNameLen)
	case in.Status == "":
		return domain.Invalid("status", "Missing required field: status")
	case in.IdempotencyKey == "":
		return domain.Invalid("idempotencyKey", "Missing required field: idempotencyKey")
	case in.Context == nil:
		return domain.Invalid("context", "Missing required field: context")
	case utf8.RuneCountInString(in.InvocationID) > MaxInvocationIDLen:
		return domain.Invalid("invocationId", "invocationId must be at most %d characters", MaxInvocationIDLen)
	case len(in.SubSteps) > MaxSubSteps:
		return domain.Invalid("subSteps", "at most %d sub-steps", MaxSubSteps)
	}
	for _, ss := range in.SubSteps {
		if ss.Name == "" {
			return domain.Invalid("subSteps", "every sub-step needs a name")
		}
	}
	return nil
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
