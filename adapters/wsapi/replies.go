package wsapi

import (
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// reply is one frame sent in answer to a client frame. Every reply embeds
// replyHead, so the session can echo the request's id on any of them.
type reply interface {
	head() *replyHead
}

// replyHead is what every reply carries: the request's action, the outcome
// and, when the client sent one, its requestId.
type replyHead struct {
	Action    string `json:"action"`
	Status    string `json:"status"` // success | error
	Message   string `json:"message,omitempty"`
	Code      string `json:"code,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

func (h *replyHead) head() *replyHead { return h }

func success(action, message string) replyHead {
	return replyHead{Action: action, Status: "success", Message: message}
}

// errorReply is every refusal, made by session.fail from the error's
// public view. Field names the offending input; RetryAfterMs, when set,
// says the request may succeed if sent again after that many milliseconds
// (the database was unavailable, a rate limit). StepName and ThreadID name
// what the refused frame was about, so SDKs can route the error to the
// right caller.
type errorReply struct {
	replyHead
	Details      string `json:"details,omitempty"`
	Field        string `json:"field,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
	StepName     string `json:"stepName,omitempty"`
	ThreadID     string `json:"threadId,omitempty"`
}

type connectReply struct {
	replyHead
	OwnerID          string   `json:"ownerId"`
	CompanyID        string   `json:"companyId"`
	SubscribedEvents []string `json:"subscribedEvents,omitempty"`
}

type startThreadReply struct {
	replyHead
	ThreadID        string            `json:"threadId"`
	Label           string            `json:"label"`
	Refs            map[string]string `json:"refs"`
	AccessLevel     string            `json:"accessLevel"`
	Tags            []string          `json:"tags,omitempty"`
	ContractID      string            `json:"contractId,omitempty"`
	ContractName    string            `json:"contractName,omitempty"`
	ContractVersion int               `json:"contractVersion,omitempty"`
}

type validationJSON struct {
	OverallStatus string                   `json:"overallStatus"`
	Issues        []domain.ValidationIssue `json:"issues"`
	CriticalCount int                      `json:"criticalCount"`
	WarningCount  int                      `json:"warningCount"`
}

type stepReply struct {
	replyHead
	ThreadID       string `json:"threadId"`
	StepID         string `json:"stepId"`
	StepName       string `json:"stepName"`
	IdempotencyKey string `json:"idempotencyKey"`
	RetryCount     int    `json:"retryCount"`
	Attempt        int    `json:"attempt"`
	ThreadStatus   string `json:"threadStatus"`
	IsDuplicate    bool   `json:"isDuplicate,omitempty"`
	// Validation is *validationJSON, or the *verdictJSON decision when the
	// frame asked for it (waitFor:true, Python SDK 0.4.0).
	Validation any `json:"validation,omitempty"`
}

// verdictJSON is a recorded step's validation decision.
type verdictJSON struct {
	Decision   string                   `json:"decision"`
	StepID     string                   `json:"stepId"`
	Message    string                   `json:"message,omitempty"`
	Violations []domain.ValidationIssue `json:"violations,omitempty"`
}

type threadReply struct {
	replyHead
	ThreadID string `json:"threadId"`
}

type inviteReply struct {
	replyHead
	ThreadToken string `json:"threadToken"`
	ThreadID    string `json:"threadId"`
	Role        string `json:"role"`
	AccessLevel string `json:"accessLevel"`
	// ExpiresAt is RFC 3339 (UTC): the Go SDK reads a string and the Python
	// SDK 0.4.0 an ISO-8601 one; Node 0.1.24 passes it through.
	ExpiresAt string `json:"expiresAt"`
}

type joinReply struct {
	replyHead
	ThreadID     string `json:"threadId"`
	ContractID   string `json:"contractId"`
	ContractName string `json:"contractName"`
	Role         string `json:"role"`
	AccessLevel  string `json:"accessLevel"`
	ThreadStatus string `json:"threadStatus"`
}

type endThreadReply struct {
	replyHead
	ThreadID     string `json:"threadId"`
	ThreadStatus string `json:"threadStatus"`
	ClosedAt     string `json:"closedAt"`
	CompletedAt  string `json:"completedAt,omitempty"`
	CancelledAt  string `json:"cancelledAt,omitempty"`
}

type subscribeReply struct {
	replyHead
	StepName   string   `json:"stepName"`
	EventTypes []string `json:"eventTypes"`
}

type ackReply struct {
	replyHead
	NotificationID string `json:"notification_id"`
	Acknowledged   bool   `json:"acknowledged"`
}

// notificationFrame is a push, not a reply: it has no status or requestId.
type notificationFrame struct {
	Action       string           `json:"action"` // always "notification"
	AckToken     string           `json:"ackToken"`
	Notification notificationJSON `json:"notification"`
}

type notificationJSON struct {
	NotificationID   string         `json:"notificationId"`
	ThreadID         string         `json:"threadId"`
	StepID           string         `json:"stepId"`
	StepName         string         `json:"stepName"`
	IdempotencyKey   string         `json:"idempotencyKey"`
	OwnerID          string         `json:"ownerId"`
	ContractName     string         `json:"contractName"`
	Source           string         `json:"source"`
	NotificationType string         `json:"notificationType"`
	StepStatus       string         `json:"stepStatus"`
	Status           string         `json:"status"`
	ViolationType    string         `json:"violationType"`
	Severity         string         `json:"severity"`
	Message          string         `json:"message"`
	Details          map[string]any `json:"details"`
	Timestamp        string         `json:"timestamp"`
}

func newNotificationJSON(n ports.NotificationRecord) notificationJSON {
	details := n.Details
	if details == nil {
		details = map[string]any{}
	}
	status := n.ValidationStatus
	if status == "" {
		status = "none"
	}
	return notificationJSON{NotificationID: n.ID, ThreadID: n.ThreadID, StepID: n.StepID, StepName: n.StepName,
		IdempotencyKey: n.IdempotencyKey, OwnerID: n.OwnerID, ContractName: n.ContractName, Source: n.Source,
		NotificationType: n.NotificationType, StepStatus: n.StepStatus, Status: status,
		ViolationType: n.ViolationType, Severity: n.Severity, Message: n.Message, Details: details,
		Timestamp: n.CreatedAt.UTC().Format(time.RFC3339Nano)}
}
