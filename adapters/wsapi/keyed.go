package wsapi

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/threadengine/engine/app/threads"
	waitsapp "github.com/threadengine/engine/app/waits"
	"github.com/threadengine/engine/domain"
)

// keyedThreadReply answers thread (create or resume by application key).
// Contract fields are null on a free-form thread; contractVersion is a
// number (what the Python SDK 0.4.0 reads).
type keyedThreadReply struct {
	replyHead
	ThreadID        string            `json:"threadId"`
	ThreadKey       string            `json:"threadKey"`
	Label           string            `json:"label"`
	ContractID      *string           `json:"contractId"`
	ContractName    *string           `json:"contractName"`
	ContractVersion *int              `json:"contractVersion"`
	Refs            map[string]string `json:"refs"`
	Tags            []string          `json:"tags"`
	Created         bool              `json:"created"`
}

// thread creates the thread of threadKey, or resumes it: the stored label,
// refs, tags and contract are returned and the frame's options ignored.
func (s *session) thread(ctx context.Context, m Message) (reply, error) {
	refs, tags, err := refsAndTags(m)
	if err != nil {
		return nil, err
	}
	key := m.Str("threadKey")
	svc := m.Str("serviceName")
	if svc == "" {
		svc = s.serviceName
	}
	th, created, err := s.threads.Commands.StartThreadWithKey.Handle(ctx, threads.KeyApp, key, threads.StartThreadInput{
		Contract: m.Str("contractName"), Role: m.Str("role"), Label: m.Str("label"), ServiceName: svc, Refs: refs, Tags: tags})
	if err != nil {
		return nil, err
	}
	s.addThread(th.ID, connRole(th, s.authenticated(), m.Str("role")), !created)
	d, err := s.threads.Queries.ThreadDetails.Handle(ctx, th.ID)
	if err != nil {
		return nil, err
	}
	r := &keyedThreadReply{replyHead: success(m.Action, "Thread resumed"), ThreadID: th.ID, ThreadKey: d.Key,
		Label: th.Label, Refs: d.Refs, Tags: th.Tags, Created: created}
	if created {
		r.Message = "Thread created"
	}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if th.ContractName != "" {
		r.ContractID, r.ContractName, r.ContractVersion = &th.ContractName, &th.ContractName, &th.ContractVersion
	}
	return r, nil
}

// waitReply answers waitFor (and carries a recorded step's verdict).
type waitReply struct {
	replyHead
	Decision     string                   `json:"decision"`
	ThreadID     string                   `json:"threadId,omitempty"`
	StepName     string                   `json:"stepName,omitempty"`
	InvocationID string                   `json:"invocationId,omitempty"`
	StepID       string                   `json:"stepId,omitempty"`
	Violations   []domain.ValidationIssue `json:"violations,omitempty"`
}

// waitFor: permission for a step invocation (stepName, invocationId), the
// verdict of a recorded step (stepId), or — with cancel — giving a grant
// back. A blocking wait is answered from its own goroutine, so later frames
// on the socket are answered meanwhile; cancelWait ends it without a reply.
func (s *session) waitFor(ctx context.Context, m Message) (reply, error) {
	requestID := m.Str("requestId")
	head := success(m.Action, "")
	base := waitReply{replyHead: head, ThreadID: m.Str("threadId"), StepName: m.Str("stepName"),
		InvocationID: m.Str("invocationId"), StepID: m.Str("stepId")}
	if base.ThreadID == "" {
		return nil, invalidFrame("Missing required field: threadId")
	}
	role := s.parties.Role(base.ThreadID)
	if m.Str("cancel") == "true" {
		// Give the grant back: a later report with its invocationId is refused.
		res, err := s.threads.Commands.CancelGrant.Handle(ctx, base.ThreadID, role, base.StepName, base.InvocationID)
		if err != nil {
			return nil, err
		}
		r := base
		r.Decision, r.Message = res.Decision, res.Message
		return &r, nil
	}
	timeout := time.Duration(m.Int("timeoutMs", 10_000)) * time.Millisecond
	if requestID == "" {
		return nil, invalidFrame("waitFor needs a requestId (its reply may come after later ones)")
	}
	wctx, cancel := context.WithCancel(ctx)
	release, err := s.addWait(requestID, cancel)
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer release()
		defer cancel()
		var res waitsapp.WaitResult
		var err error
		defer func() { frameOf(ctx).end(err) }()
		if base.StepID != "" {
			res, err = s.threads.Queries.WaitForValidation.Handle(wctx, base.ThreadID, base.StepID, timeout)
		} else {
			res, err = s.threads.Commands.WaitForPermission.Handle(wctx, base.ThreadID, role, base.StepName, base.InvocationID, timeout)
		}
		if !s.waits.done(requestID) {
			// Cancelled by cancelWait: no late reply, and a grant made as it
			// was cancelled is given back unused.
			if err == nil && res.MadeGrant() {
				if err := s.threads.Commands.ReleaseGrant.Handle(ctx, base.ThreadID, base.InvocationID, res.Answer); err != nil {
					s.log.Warn("waitFor: releasing a cancelled grant", "threadId", base.ThreadID, "err", err)
				}
			}
			err = nil // cancelled by the client: not a failure of the wait
			return
		}
		if err != nil {
			s.send(requestID, s.fail(m.Action, err))
			return
		}
		r := base
		r.Decision, r.Code, r.Message, r.Violations = res.Decision, string(res.Code), res.Message, res.Violations
		s.send(requestID, &r)
	}()
	return nil, errAnswered
}

// cancelWait aborts the pending wait targetRequestId of this connection;
// there is no reply.
func (s *session) cancelWait(_ context.Context, m Message) (reply, error) {
	s.waits.cancel(m.Str("targetRequestId"))
	return nil, errAnswered
}

// errAnswered: the action replies itself (later, or never).
var errAnswered = errors.New("answered asynchronously")

// connRole is the role a connection acts as on a thread it got from the
// thread action (domain.Thread.ConnectionRole: the frame's, else the
// caller's only party on the thread).
func connRole(th domain.Thread, p *domain.Principal, role string) string {
	if p == nil {
		return role
	}
	return th.ConnectionRole(p.ID, role)
}

// stepVerdict adds the verdict of the step just recorded to its reply, for a
// recordThreadEvent frame sent with waitFor:true.
func stepVerdict(r *stepReply, res threads.StepResult) {
	v := waitsapp.ValidationVerdict(res.Validation)
	r.Validation = &verdictJSON{Decision: v.Decision, StepID: res.StepID, Message: v.Message, Violations: v.Violations}
}

func isTrue(m Message, key string) bool { return strings.EqualFold(m.Str(key), "true") }

// noteVocabulary remembers which vocabulary the session subscribed with:
// step/rule (Node, Python 0.4.0 — which refuses execution.* names) or
// execution/validation (Go, whose "*" expansion alone sends step/rule names:
// a session that ever sent execution.* or validation.* keeps them).
func (s *session) noteVocabulary(evs []string) {
	for _, e := range evs {
		switch {
		case strings.HasPrefix(e, "step.") || strings.HasPrefix(e, "rule."):
			s.stepVocab.Store(true)
		case strings.HasPrefix(e, "execution.") || strings.HasPrefix(e, "validation."):
			s.execVocab.Store(true)
		}
	}
}

// inVocabulary renames a push's source and type into the vocabulary the
// session subscribed with: the Python SDK 0.4.0 dispatches on source step,
// rule or thread and refuses execution.* names; Node ignores both fields.
func (s *session) inVocabulary(n notificationJSON) notificationJSON {
	if !s.stepVocab.Load() || s.execVocab.Load() {
		return n
	}
	switch n.Source {
	case "execution":
		n.Source = "step"
	case "validation":
		n.Source = "rule"
	}
	if rest, ok := strings.CutPrefix(n.NotificationType, "execution."); ok {
		n.NotificationType = "step." + rest
	} else if rest, ok := strings.CutPrefix(n.NotificationType, "validation."); ok {
		n.NotificationType = "rule." + rest
	}
	return n
}
