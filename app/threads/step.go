package threads

// The input and result of the RecordStep command, its input checks and what
// it writes: the rows of one append, the step's health outcome, the history
// the rules judge.

import (
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/waits"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// SubStepInput is one sub-step sent with a step.
type SubStepInput struct {
	Name       string
	Status     string
	Payload    map[string]any
	RecordedAt time.Time
}

// RecordStepInput is one finished step attempt.
type RecordStepInput struct {
	ThreadID string
	// Role is the party the caller's connection started or joined the
	// thread as ("" when it declared none: its only party is used).
	Role           string
	StepName       string
	Status         string
	IdempotencyKey string
	Context        map[string]string
	Metadata       map[string]any
	ServiceName    string
	StartedAt      *time.Time
	FinishedAt     *time.Time
	SubSteps       []SubStepInput
	// Refs sent with the step are merged into the thread's refs in the
	// step's transaction (not written for a duplicate).
	Refs map[string]string
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
	// Role is the party the step was recorded (and judged) as.
	Role         string
	ThreadStatus domain.ThreadStatus
	Validation   *domain.ValidationResult
}

// timeOrderedID is the id of a row a step writes (the attempt, its
// sub-steps, validation result and notifications): a UUIDv7, whose first
// 48 bits are the time, so rows written together sit together in the
// tables' id indexes. With random ids each step's row went into its own
// page of each id index, at insertion and again when retention deletes
// the thread's old steps: the attempts' id index alone was 5.5 of the 15
// pages a deleted thread wrote (docs/contributors/performance.md, "SQLite:
// where a retention batch goes"). A UUIDv4 if the clock cannot be read.
func timeOrderedID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// stepPlan turns the rules' decision into the rows of one append, its link
// hashed with chain version 2 (keys' current secret only signs a link whose
// record cannot be hashed).
func stepPlan(keys domain.ChainKeys, th domain.Thread, v ports.StepTx, c *domain.Contract, in RecordStepInput,
	status domain.StepStatus, subs []domain.StepStatus, d domain.StepDecision, now time.Time) ports.StepPlan {
	stepID := timeOrderedID()
	state := ports.StepState{StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, Status: in.Status,
		InvocationID: in.InvocationID, Actor: d.Party.PrincipalID, ActorService: in.ServiceName, LatestContext: in.Context,
		FirstSeenAt: now, LastUpdatedAt: now, StartedAt: in.StartedAt, FinishedAt: in.FinishedAt,
		RetryCount: d.RetryCount, LatestStepID: stepID, PreviousStep: v.LastStepName}
	if prev := v.Current; prev != nil {
		state.FirstSeenAt, state.PreviousStep = prev.FirstSeenAt, prev.PreviousStep
	}
	seq, prevHash := th.NextLink()
	a := ports.Activity{ID: stepID, ThreadID: th.ID, Seq: seq, StepName: in.StepName,
		IdempotencyKey: in.IdempotencyKey, Status: in.Status, Attempt: d.Attempt, Actor: d.Party.PrincipalID,
		ActorService: in.ServiceName, Context: in.Context, Metadata: in.Metadata, StartedAt: in.StartedAt,
		FinishedAt: in.FinishedAt, RecordedAt: now, PrevHash: prevHash}
	a.ContentHash = domain.ContentHash(a.Context, a.Metadata)
	plan := ports.StepPlan{State: state, Refs: in.Refs}
	for i, ss := range in.SubSteps { // in the order sent: stored with their position
		rt := ss.RecordedAt
		if rt.IsZero() {
			rt = now
		}
		plan.SubSteps = append(plan.SubSteps, ports.SubStep{ID: timeOrderedID(), StepID: stepID, Name: ss.Name,
			Status: string(subs[i]), Payload: ss.Payload, RecordedAt: rt})
	}
	// Chain version 2 (domain/steprecord.go): a keyless hash of the whole
	// attempt; the transparency log makes it trustworthy.
	var err error
	a.SubSteps = plan.SubSteps
	if a.Hash, err = domain.StepHash(a.Record()); err != nil {
		// Unreachable for decoded JSON; an HMAC link still chains.
		a.Hash = domain.ChainHash(keys.CurrentSecret(), keys.Current, domain.ChainLink{ThreadID: th.ID, StepID: stepID,
			StepName: in.StepName, ContentHash: a.ContentHash, PrevHash: prevHash, RecordedAt: now})
	}
	plan.Activity = a
	contractName := ""
	if c != nil {
		contractName = c.Name
	}
	base := ports.NotificationRecord{ThreadID: th.ID, StepID: stepID, StepName: in.StepName,
		IdempotencyKey: in.IdempotencyKey, ContractName: contractName, OwnerID: th.OwnerID, StepStatus: in.Status,
		ValidationStatus: "none", Severity: "info", CreatedAt: now}
	exec := base
	exec.ID, exec.Source = timeOrderedID(), "execution"
	if status.Succeeded() {
		exec.NotificationType, exec.Message = "execution.success", "Step '"+in.StepName+"' success"
	} else {
		exec.NotificationType, exec.Message = "execution.failed", "Step '"+in.StepName+"' "+in.Status
		exec.Severity = "warning"
		if e, ok := in.Metadata["error"]; ok {
			exec.Details = map[string]any{"error": e}
		}
	}
	plan.Notifications = []ports.NotificationRecord{exec}
	if vr := d.Validation; vr != nil {
		plan.Validation = &ports.ValidationRecord{ID: timeOrderedID(), StepID: stepID, StepName: in.StepName,
			IdempotencyKey: in.IdempotencyKey, OverallStatus: vr.OverallStatus, Issues: vr.Issues,
			CriticalCount: vr.CriticalCount, WarningCount: vr.WarningCount, MinorCount: vr.MinorCount,
			InfoCount: vr.InfoCount, CreatedAt: now}
		plan.Notifications[0].ValidationStatus = vr.OverallStatus
		if vr.OverallStatus == domain.ValidationViolated || vr.OverallStatus == domain.ValidationWarning {
			worst, _ := vr.MostSevere()
			viol := base
			viol.ID, viol.Source, viol.NotificationType = timeOrderedID(), "validation", "validation.violated"
			viol.ValidationStatus, viol.ViolationType, viol.Severity = vr.OverallStatus, worst.Type, string(worst.Severity)
			viol.Message = worst.Message
			viol.Details = map[string]any{"issues": vr.Issues}
			plan.Notifications = append(plan.Notifications, viol)
		} else {
			// Both SDK vocabularies have rule.passed / validation.passed;
			// subscribers that did not ask for it never receive it.
			pass := base
			pass.ID, pass.Source, pass.NotificationType = timeOrderedID(), "validation", "validation.passed"
			pass.ValidationStatus, pass.Message = vr.OverallStatus, "Step '"+in.StepName+"' passed validation"
			plan.Notifications = append(plan.Notifications, pass)
		}
	}
	switch d.Ended {
	case domain.ThreadCompleted:
		plan.Notifications = append(plan.Notifications, ThreadEvent(th, domain.ThreadCompleted,
			"Thread completed by terminal step '"+in.StepName+"'", now))
	case domain.ThreadFailed:
		// Subscribers of the thread and thread.failed webhooks hear it,
		// with the violation that failed it.
		ev := ThreadEvent(th, domain.ThreadFailed, "Thread failed at step '"+in.StepName+"': "+th.Error, now)
		if d.Validation != nil {
			if worst, ok := d.Validation.MostSevere(); ok {
				ev.Severity, ev.ViolationType = string(worst.Severity), worst.Type
			}
		}
		plan.Notifications = append(plan.Notifications, ev)
	}
	plan.PrevActivityAt = th.Health().LastActivityAt
	th.Append(a.Hash, stepOutcome(in, v.Current, d.Validation, now))
	plan.Thread = th
	return plan
}

// checkStepInput checks the attempt's shape and parses its statuses: a status
// no SDK sends is invalid_step_status, never stored.
func checkStepInput(in RecordStepInput) (domain.StepStatus, []domain.StepStatus, error) {
	switch {
	case in.ThreadID == "":
		return "", nil, domain.Invalid("threadId", "Missing required field: threadId")
	case in.StepName == "":
		return "", nil, domain.Invalid("stepName", "Missing required field: stepName")
	case len(in.StepName) > MaxStepNameLen:
		return "", nil, domain.Invalid("stepName", "stepName is longer than %d bytes", MaxStepNameLen)
	case in.Status == "":
		return "", nil, domain.Invalid("status", "Missing required field: status")
	case in.IdempotencyKey == "":
		return "", nil, domain.Invalid("idempotencyKey", "Missing required field: idempotencyKey")
	case in.Context == nil:
		return "", nil, domain.Invalid("context", "Missing required field: context")
	case utf8.RuneCountInString(in.InvocationID) > waits.MaxInvocationIDLen:
		return "", nil, domain.Invalid("invocationId", "invocationId must be at most %d characters", waits.MaxInvocationIDLen)
	case waits.CheckInvocationPrefix(in.InvocationID) != nil:
		return "", nil, waits.CheckInvocationPrefix(in.InvocationID)
	case len(in.SubSteps) > MaxSubSteps:
		return "", nil, domain.Invalid("subSteps", "at most %d sub-steps", MaxSubSteps)
	}
	status, err := domain.ParseStepStatus(in.Status)
	if err != nil {
		return "", nil, err
	}
	subs := make([]domain.StepStatus, len(in.SubSteps))
	for i, ss := range in.SubSteps {
		if ss.Name == "" {
			return "", nil, domain.Invalid("subSteps", "every sub-step needs a name")
		}
		if subs[i], err = domain.ParseSubStepStatus(ss.Status); err != nil {
			return "", nil, err
		}
	}
	if err := checkRefs(in.Refs); err != nil {
		return "", nil, err
	}
	return status, subs, nil
}

// stepOutcome is what an attempt contributes to its thread's health.
func stepOutcome(in RecordStepInput, prev *ports.StepState, vr *domain.ValidationResult, now time.Time) domain.StepOutcome {
	o := domain.StepOutcome{StepName: in.StepName, Status: in.Status, RecordedAt: now, FinishedAt: in.FinishedAt,
		Error: domain.StepError(in.Status, in.Metadata)}
	if prev != nil {
		o.PrevStatus = prev.Status
	}
	if vr != nil {
		o.Issues = vr.Issues
	}
	return o
}
