package mcpapi

// The decision tools: can, should and next, the same app/threads handlers
// as GraphQL's can, should and next. Read-only: never a grant.

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadengine/engine/app/decisions"
	"github.com/threadengine/engine/domain"
)

// Decision tool names.
const (
	ToolCan    = "can"
	ToolShould = "should"
	ToolNext   = "next"
)

func (t *tools) registerDecisions(s *mcp.Server) {
	if t.d.Decisions == nil {
		return
	}
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolCan,
		Title: "Can this step run now?",
		Description: "Ask whether you may record a step of a contract thread now, without recording or reserving " +
			"anything (a later report is judged again; steps with per-invocation prerequisites answer " +
			"requires_claim: only a waitFor grant can take one). Give exactly one of action (a step name of the " +
			"thread's contract) and goal (words; matched to one action by the engine's classifier, else status " +
			"uncertain). Give context (the step's context you intend to send) to have it judged too: content " +
			"rules, references to earlier steps, required fields, semantic rules. status: allowed, denied, " +
			"requires_claim or uncertain; reason says why; missing_steps lists prerequisites not yet succeeded.",
		Annotations: readOnly("Can this step run now?"),
	}, t.can)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolShould,
		Title: "Should this step run?",
		Description: "Advice on an action of a contract thread: not eligible (can denies) is recommendation no; an " +
			"eligible action is put to the engine's classifier with the thread's recent validated content and refs " +
			"(yes, no or uncertain; unavailable without a classifier). Never a permission.",
		Annotations: readOnly("Should this step run?"),
	}, t.should)
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolNext,
		Title: "Next steps",
		Description: "The paths of up to 4 actions open to you on a contract thread from now (at most 32, " +
			"alphabetical, not ranked). Only each path's first action is judged now (allowed or requires_claim); " +
			"check later ones with can before running them.",
		Annotations: readOnly("Next steps"),
	}, t.next)
}

// CanInput is can's arguments.
type CanInput struct {
	ThreadID string         `json:"thread_id" jsonschema:"the contract thread's id"`
	Action   string         `json:"action,omitempty" jsonschema:"a step name of the thread's contract; or give goal"`
	Goal     string         `json:"goal,omitempty" jsonschema:"what you want to do, in words; matched to one action"`
	Context  map[string]any `json:"context,omitempty" jsonschema:"the context you intend to send with the step (strings, numbers, booleans), judged by its rules"`
}

// CanOutput is can's result.
type CanOutput struct {
	ThreadID       string                    `json:"thread_id"`
	StepName       string                    `json:"step_name"`
	Allowed        bool                      `json:"allowed"`
	Status         string                    `json:"status" jsonschema:"allowed, denied, requires_claim or uncertain"`
	MatchedBy      string                    `json:"matched_by" jsonschema:"exact, classifier or none"`
	RequiredSteps  []string                  `json:"required_steps"`
	SatisfiedSteps []string                  `json:"satisfied_steps"`
	MissingSteps   []string                  `json:"missing_steps"`
	PreviousStep   string                    `json:"previous_step,omitempty"`
	Reason         string                    `json:"reason"`
	Violations     []domain.ContentViolation `json:"violations,omitempty"`
}

func (t *tools) can(ctx context.Context, _ *mcp.CallToolRequest, in CanInput) (*mcp.CallToolResult, CanOutput, error) {
	q := decisions.CanInput{ThreadID: in.ThreadID, Action: in.Action, Goal: in.Goal}
	if in.Context != nil {
		raw, err := json.Marshal(in.Context)
		if err != nil {
			return nil, CanOutput{}, t.toolErr(ctx, ToolCan, invalidArg("context", "context must be a JSON object"))
		}
		if q.Context, err = decisions.ParseCandidateContext(string(raw)); err != nil {
			return nil, CanOutput{}, t.toolErr(ctx, ToolCan, err)
		}
	}
	d, err := t.d.Decisions.Can.Handle(ctx, q)
	if err != nil {
		return nil, CanOutput{}, t.toolErr(ctx, ToolCan, err)
	}
	return nil, CanOutput{ThreadID: in.ThreadID, StepName: d.StepName, Allowed: d.Allowed, Status: string(d.Status), MatchedBy: d.MatchedBy,
		RequiredSteps: orEmpty(d.RequiredSteps), SatisfiedSteps: orEmpty(d.SatisfiedSteps), MissingSteps: orEmpty(d.MissingSteps),
		PreviousStep: d.PreviousStep, Reason: d.Reason, Violations: d.Violations}, nil
}

// ShouldInput is should's arguments.
type ShouldInput struct {
	ThreadID string `json:"thread_id" jsonschema:"the contract thread's id"`
	Action   string `json:"action,omitempty" jsonschema:"a step name of the thread's contract; or give goal"`
	Goal     string `json:"goal,omitempty" jsonschema:"what you want to do, in words"`
}

// ShouldOutput is should's result.
type ShouldOutput struct {
	ThreadID       string `json:"thread_id"`
	StepName       string `json:"step_name"`
	Eligible       bool   `json:"eligible"`
	Recommendation string `json:"recommendation" jsonschema:"yes, no, uncertain or unavailable"`
	Reason         string `json:"reason"`
}

func (t *tools) should(ctx context.Context, _ *mcp.CallToolRequest, in ShouldInput) (*mcp.CallToolResult, ShouldOutput, error) {
	d, err := t.d.Decisions.Should.Handle(ctx, decisions.ShouldInput{ThreadID: in.ThreadID, Action: in.Action, Goal: in.Goal})
	if err != nil {
		return nil, ShouldOutput{}, t.toolErr(ctx, ToolShould, err)
	}
	return nil, ShouldOutput{ThreadID: in.ThreadID, StepName: d.StepName, Eligible: d.Eligible, Recommendation: d.Recommendation, Reason: d.Reason}, nil
}

// PathJSON is one path of next.
type PathJSON struct {
	Actions []string `json:"actions"`
	Status  string   `json:"status" jsonschema:"the first action's: allowed or requires_claim"`
	Reason  string   `json:"reason"`
}

// NextOutput is next's result.
type NextOutput struct {
	ThreadID string     `json:"thread_id"`
	Paths    []PathJSON `json:"paths"`
}

func (t *tools) next(ctx context.Context, _ *mcp.CallToolRequest, in ThreadIDInput) (*mcp.CallToolResult, NextOutput, error) {
	d, err := t.d.Decisions.Next.Handle(ctx, in.ThreadID)
	if err != nil {
		return nil, NextOutput{}, t.toolErr(ctx, ToolNext, err)
	}
	out := NextOutput{ThreadID: in.ThreadID, Paths: make([]PathJSON, 0, len(d.Paths))}
	for _, p := range d.Paths {
		out.Paths = append(out.Paths, PathJSON{Actions: p.Actions, Status: string(p.Status), Reason: p.Reason})
	}
	return nil, out, nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
