package graphqlapi

import (
	"context"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/threadengine/engine/app/decisions"
	"github.com/threadengine/engine/domain"
)

// SetDecisions serves can, should and next with d, the same app/threads
// handlers the MCP tools call. Call it before serving.
func (h *Handler) SetDecisions(d decisions.Decisions) { h.decisions = &d }

var errNoDecisions = domain.NewBase(domain.KindUnavailable, domain.CodeUnavailable, "decision queries are not available on this server")

type decisionArgs struct {
	ThreadID     graphql.ID
	Action, Goal *string
	Context      *JSON
}

func (r *queryResolver) Can(ctx context.Context, a decisionArgs) (*canResolver, error) {
	if r.h.decisions == nil {
		return nil, errNoDecisions
	}
	in := decisions.CanInput{ThreadID: string(a.ThreadID), Action: deref(a.Action), Goal: deref(a.Goal)}
	if a.Context != nil && *a.Context != "null" {
		c, err := decisions.ParseCandidateContext(string(*a.Context))
		if err != nil {
			return nil, err
		}
		in.Context = c
	}
	d, err := r.h.decisions.Can.Handle(ctx, in)
	if err != nil {
		return nil, err
	}
	return &canResolver{threadID: a.ThreadID, d: d}, nil
}

func (r *queryResolver) Should(ctx context.Context, a struct {
	ThreadID     graphql.ID
	Action, Goal *string
}) (*shouldResolver, error) {
	if r.h.decisions == nil {
		return nil, errNoDecisions
	}
	d, err := r.h.decisions.Should.Handle(ctx, decisions.ShouldInput{ThreadID: string(a.ThreadID), Action: deref(a.Action), Goal: deref(a.Goal)})
	if err != nil {
		return nil, err
	}
	return &shouldResolver{threadID: a.ThreadID, d: d}, nil
}

func (r *queryResolver) Next(ctx context.Context, a struct{ ThreadID graphql.ID }) (*nextResolver, error) {
	if r.h.decisions == nil {
		return nil, errNoDecisions
	}
	d, err := r.h.decisions.Next.Handle(ctx, string(a.ThreadID))
	if err != nil {
		return nil, err
	}
	return &nextResolver{threadID: a.ThreadID, d: d}, nil
}

type canResolver struct {
	threadID graphql.ID
	d        domain.CanDecision
}

func (c *canResolver) ThreadID() graphql.ID      { return c.threadID }
func (c *canResolver) StepName() string          { return c.d.StepName }
func (c *canResolver) Allowed() bool             { return c.d.Allowed }
func (c *canResolver) Status() string            { return string(c.d.Status) }
func (c *canResolver) MatchedBy() string         { return c.d.MatchedBy }
func (c *canResolver) RequiredSteps() []string   { return nonNil(c.d.RequiredSteps) }
func (c *canResolver) SatisfiedSteps() []string  { return nonNil(c.d.SatisfiedSteps) }
func (c *canResolver) MissingSteps() []string    { return nonNil(c.d.MissingSteps) }
func (c *canResolver) PreviousStep() *string     { return strPtr(c.d.PreviousStep) }
func (c *canResolver) Reason() string            { return c.d.Reason }
func (c *canResolver) Violations() []*violationR { return violations(c.d.Violations) }

type violationR struct{ v domain.ContentViolation }

func (v *violationR) Field() string   { return v.v.Field }
func (v *violationR) Rule() string    { return v.v.Rule }
func (v *violationR) Message() string { return v.v.Message }

func violations(vs []domain.ContentViolation) []*violationR {
	out := make([]*violationR, len(vs))
	for i := range vs {
		out[i] = &violationR{vs[i]}
	}
	return out
}

type shouldResolver struct {
	threadID graphql.ID
	d        domain.ShouldDecision
}

func (s *shouldResolver) ThreadID() graphql.ID   { return s.threadID }
func (s *shouldResolver) StepName() string       { return s.d.StepName }
func (s *shouldResolver) Eligible() bool         { return s.d.Eligible }
func (s *shouldResolver) Recommendation() string { return s.d.Recommendation }
func (s *shouldResolver) Reason() string         { return s.d.Reason }

type nextResolver struct {
	threadID graphql.ID
	d        domain.NextDecision
}

func (n *nextResolver) ThreadID() graphql.ID { return n.threadID }
func (n *nextResolver) Paths() []*pathResolver {
	out := make([]*pathResolver, len(n.d.Paths))
	for i := range n.d.Paths {
		out[i] = &pathResolver{n.d.Paths[i]}
	}
	return out
}

type pathResolver struct{ p domain.NextPath }

func (p *pathResolver) Actions() []string { return nonNil(p.p.Actions) }
func (p *pathResolver) Status() string    { return string(p.p.Status) }
func (p *pathResolver) Reason() string    { return p.p.Reason }
