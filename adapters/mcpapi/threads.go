package mcpapi

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// get_thread returns this many of the newest validation results and
// notifications; older ones are reachable through graphql_query.
const (
	threadValidations   = 50
	threadNotifications = 50
	// linkedDepth 2 is the thread and its direct children.
	linkedDepth = 2
)

func (t *tools) registerThreads(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolGetThread,
		Title: "Get thread",
		Description: "Fetch one thread with everything needed to judge it: status and error, contract, owner, " +
			"refs, every step (latest status, retry count, previous step, actor, context, timings), the newest " +
			"validation results (contract violations) and notifications, a notification summary, and the " +
			"threads it links to. Address it by thread_id, or by a business reference (ref_value, optionally " +
			"with ref_key; an exact value match wins, other_matches tells how many other threads match).",
		Annotations: readOnly("Get thread"),
	}, t.getThread)

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolSearchThreads,
		Title: "Search threads",
		Description: "List threads, newest first, filtered by contract (name, version), status (active, " +
			"completed, failed, cancelled), actor (a principal id or service name that recorded a step), " +
			"reference (ref_key the whole key in any case, ref_value case-insensitive substring) and time windows (ISO-8601, " +
			"inclusive: started_* on the start time, completed_* on the completion time). Returns one page " +
			"(limit default 50, at most 100) and total_count.",
		Annotations: readOnly("Search threads"),
	}, t.searchThreads)

	mcp.AddTool(s, &mcp.Tool{
		Name:  ToolContractGraph,
		Title: "Contract graph",
		Description: "Return a contract version as a graph: entry points, terminal steps, parties, and per step " +
			"its owner, type, timeout, required and optional context, the steps allowed next and its retry " +
			"policy; plus thread-level rules (max duration, multiple terminals). Omit version for the latest.",
		Annotations: readOnly("Contract graph"),
	}, t.contractGraph)
}

// GetThreadInput is get_thread's arguments.
type GetThreadInput struct {
	ThreadID string `json:"thread_id,omitempty" jsonschema:"the thread id; or give ref_value"`
	RefKey   string `json:"ref_key,omitempty" jsonschema:"reference key, whole and in any case (e.g. order_id); optional with ref_value"`
	RefValue string `json:"ref_value,omitempty" jsonschema:"reference value (e.g. A-1042); exact matches first, then substrings"`
}

// ThreadJSON is a thread as the tools return it.
type ThreadJSON struct {
	ID              string            `json:"id"`
	Label           string            `json:"label,omitempty"`
	Status          string            `json:"status" jsonschema:"active, completed, failed or cancelled"`
	Error           string            `json:"error,omitempty"`
	ContractName    string            `json:"contract_name,omitempty" jsonschema:"empty for free-form threads"`
	ContractVersion int               `json:"contract_version,omitempty"`
	OwnerKind       string            `json:"owner_kind" jsonschema:"user or service_account"`
	OwnerID         string            `json:"owner_id" jsonschema:"principal id; resolve_actors gives its name"`
	ServiceName     string            `json:"service_name,omitempty"`
	StepCount       int               `json:"step_count"`
	Refs            map[string]string `json:"refs,omitempty" jsonschema:"business references; linkedThread:* keys point to child threads"`
	StartedAt       time.Time         `json:"started_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	CompletedAt     *time.Time        `json:"completed_at,omitempty"`
	LastHash        string            `json:"last_hash,omitempty" jsonschema:"head of the hash chain"`
}

// StepJSON is the latest state of one step identity (name + idempotency key).
type StepJSON struct {
	StepName       string     `json:"step_name"`
	IdempotencyKey string     `json:"idempotency_key"`
	Status         string     `json:"status" jsonschema:"success, failed, error, in_progress, pending, …"`
	RetryCount     int        `json:"retry_count" jsonschema:"attempts after the first"`
	PreviousStep   string     `json:"previous_step,omitempty"`
	Actor          string     `json:"actor,omitempty"`
	ActorService   string     `json:"actor_service,omitempty"`
	Context        any        `json:"context,omitempty" jsonschema:"the latest attempt's context"`
	FirstSeenAt    time.Time  `json:"first_seen_at"`
	LastUpdatedAt  time.Time  `json:"last_updated_at"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	LatestStepID   string     `json:"latest_step_id"`
}

// ValidationJSON is the outcome of validating one step attempt against the contract.
type ValidationJSON struct {
	StepID         string    `json:"step_id"`
	StepName       string    `json:"step_name"`
	IdempotencyKey string    `json:"idempotency_key"`
	OverallStatus  string    `json:"overall_status"`
	CriticalCount  int       `json:"critical_count"`
	WarningCount   int       `json:"warning_count"`
	MinorCount     int       `json:"minor_count"`
	InfoCount      int       `json:"info_count"`
	Issues         any       `json:"issues,omitempty" jsonschema:"each issue: type, message, severity, expected, actual"`
	CreatedAt      time.Time `json:"created_at"`
}

// NotificationJSON is one thread event (execution, validation or thread).
type NotificationJSON struct {
	StepName         string    `json:"step_name,omitempty"`
	IdempotencyKey   string    `json:"idempotency_key,omitempty"`
	Source           string    `json:"source"`
	NotificationType string    `json:"notification_type"`
	StepStatus       string    `json:"step_status,omitempty"`
	ValidationStatus string    `json:"validation_status,omitempty"`
	ViolationType    string    `json:"violation_type,omitempty"`
	Severity         string    `json:"severity,omitempty"`
	Message          string    `json:"message"`
	Details          any       `json:"details,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
}

// NotificationSummaryJSON counts a thread's notifications.
type NotificationSummaryJSON struct {
	Total      int `json:"total"`
	Critical   int `json:"critical"`
	Major      int `json:"major"`
	Warning    int `json:"warning"`
	Minor      int `json:"minor"`
	Info       int `json:"info"`
	Execution  int `json:"execution"`
	Validation int `json:"validation"`
}

// LinkedThreadJSON is a child thread reached through a linkedThread:* ref.
type LinkedThreadJSON struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ContractName string `json:"contract_name,omitempty"`
	Label        string `json:"label,omitempty"`
}

// GetThreadOutput is get_thread's result.
type GetThreadOutput struct {
	Thread              ThreadJSON              `json:"thread"`
	Steps               []StepJSON              `json:"steps"`
	Validations         []ValidationJSON        `json:"validations" jsonschema:"newest first, at most 50"`
	Notifications       []NotificationJSON      `json:"notifications" jsonschema:"newest first, at most 50"`
	NotificationSummary NotificationSummaryJSON `json:"notification_summary"`
	LinkedThreads       []LinkedThreadJSON      `json:"linked_threads"`
	OtherMatches        int                     `json:"other_matches,omitempty" jsonschema:"when found by reference: how many other threads match it"`
}

func (t *tools) getThread(ctx context.Context, _ *mcp.CallToolRequest, in GetThreadInput) (*mcp.CallToolResult, GetThreadOutput, error) {
	out, err := t.loadThread(ctx, in)
	if err != nil {
		return nil, GetThreadOutput{}, t.toolErr(ctx, ToolGetThread, err)
	}
	return nil, out, nil
}

// loadThread encodes the ThreadDetail query (app/readmodel).
func (t *tools) loadThread(ctx context.Context, in GetThreadInput) (GetThreadOutput, error) {
	var out GetThreadOutput
	d, err := t.d.Queries.Detail.Handle(ctx, readmodel.ThreadDetailArgs{
		ThreadLocator: readmodel.ThreadLocator{ThreadID: in.ThreadID, RefKey: in.RefKey, RefValue: in.RefValue},
		Parts:         readmodel.AllDetailParts(threadValidations, threadNotifications, linkedDepth)})
	if err != nil {
		return out, err
	}
	out.OtherMatches = d.OtherMatches
	out.Thread = threadJSON(d.Thread, d.Refs)
	out.Steps = make([]StepJSON, 0, len(d.Steps))
	for _, s := range d.Steps {
		out.Steps = append(out.Steps, stepJSON(s))
	}
	out.Validations = make([]ValidationJSON, 0, len(d.Validations))
	for _, v := range d.Validations {
		out.Validations = append(out.Validations, ValidationJSON{StepID: v.StepID, StepName: v.StepName,
			IdempotencyKey: v.IdempotencyKey, OverallStatus: v.OverallStatus, CriticalCount: v.CriticalCount,
			WarningCount: v.WarningCount, MinorCount: v.MinorCount, InfoCount: v.InfoCount,
			Issues: rawJSON(v.Issues), CreatedAt: v.CreatedAt.UTC()})
	}
	out.Notifications = make([]NotificationJSON, 0, len(d.Notifications))
	for _, n := range d.Notifications {
		out.Notifications = append(out.Notifications, NotificationJSON{StepName: n.StepName, IdempotencyKey: n.IdempotencyKey,
			Source: n.Source, NotificationType: n.NotificationType, StepStatus: n.StepStatus,
			ValidationStatus: n.ValidationStatus, ViolationType: n.ViolationType, Severity: n.Severity,
			Message: n.Message, Details: rawJSON(n.Details), CreatedAt: n.CreatedAt.UTC()})
	}
	c := d.NotificationCounts
	out.NotificationSummary = NotificationSummaryJSON{Total: c.Total, Critical: c.Critical, Major: c.Major,
		Warning: c.Warning, Minor: c.Minor, Info: c.Info, Execution: c.Execution, Validation: c.Validation}
	out.LinkedThreads = make([]LinkedThreadJSON, 0, len(d.Linked))
	for _, l := range d.Linked {
		out.LinkedThreads = append(out.LinkedThreads, LinkedThreadJSON{ID: l.ID, Status: l.Status,
			ContractName: deref(l.ContractName), Label: deref(l.Label)})
	}
	return out, nil
}

// SearchThreadsInput is search_threads' arguments. Every filter is optional.
type SearchThreadsInput struct {
	ContractName    string `json:"contract_name,omitempty"`
	ContractVersion *int   `json:"contract_version,omitempty" jsonschema:"only with contract_name"`
	Status          string `json:"status,omitempty" jsonschema:"active, completed, failed or cancelled"`
	Actor           string `json:"actor,omitempty" jsonschema:"principal id or service name that recorded a step"`
	RefKey          string `json:"ref_key,omitempty"`
	RefValue        string `json:"ref_value,omitempty" jsonschema:"case-insensitive substring; exact matches first"`
	StartedAfter    string `json:"started_after,omitempty" jsonschema:"ISO-8601 time, inclusive"`
	StartedBefore   string `json:"started_before,omitempty" jsonschema:"ISO-8601 time, inclusive"`
	CompletedAfter  string `json:"completed_after,omitempty" jsonschema:"ISO-8601 time, inclusive"`
	CompletedBefore string `json:"completed_before,omitempty" jsonschema:"ISO-8601 time, inclusive"`
	Limit           *int   `json:"limit,omitempty" jsonschema:"page size, default 50, at most 100"`
	Offset          *int   `json:"offset,omitempty"`
}

// SearchThreadsOutput is one page of search_threads.
type SearchThreadsOutput struct {
	Threads    []ThreadJSON `json:"threads"`
	TotalCount int          `json:"total_count" jsonschema:"threads matching the filters, over all pages, counted up to 10000"`
	// TotalCountIsExact is false when more than 10000 threads match (then
	// total_count is 10000).
	TotalCountIsExact bool `json:"total_count_is_exact"`
	Offset            int  `json:"offset"`
	HasMore           bool `json:"has_more"`
}

func (t *tools) searchThreads(ctx context.Context, _ *mcp.CallToolRequest, in SearchThreadsInput) (*mcp.CallToolResult, SearchThreadsOutput, error) {
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > domain.ThreadsPage.Max) {
		return nil, SearchThreadsOutput{}, t.toolErr(ctx, ToolSearchThreads,
			invalidArg("limit", "limit must be between 1 and %d", domain.ThreadsPage.Max))
	}
	if in.Offset != nil && *in.Offset < 0 {
		return nil, SearchThreadsOutput{}, t.toolErr(ctx, ToolSearchThreads, invalidArg("offset", "offset must not be negative"))
	}
	if in.ContractVersion != nil && strings.TrimSpace(in.ContractName) == "" {
		return nil, SearchThreadsOutput{}, t.toolErr(ctx, ToolSearchThreads,
			invalidArg("contract_version", "contract_version filters only together with contract_name"))
	}
	page, err := t.d.Queries.Search.Handle(ctx, readmodel.ThreadSearch{
		Actor: strings.TrimSpace(in.Actor), ContractName: strings.TrimSpace(in.ContractName), ContractVersion: in.ContractVersion,
		Status: strings.TrimSpace(in.Status), RefKey: strings.TrimSpace(in.RefKey), RefValue: strings.TrimSpace(in.RefValue),
		StartedAfter: in.StartedAfter, StartedBefore: in.StartedBefore, CompletedAfter: in.CompletedAfter,
		CompletedBefore: in.CompletedBefore, Limit: in.Limit, Offset: in.Offset, WithTotal: true,
	})
	if err != nil {
		return nil, SearchThreadsOutput{}, t.toolErr(ctx, ToolSearchThreads, err)
	}
	ids := make([]string, len(page.Threads))
	for i, th := range page.Threads {
		ids[i] = th.ID
	}
	refs := map[string]map[string]string{}
	if len(ids) > 0 {
		if refs, err = t.d.Queries.Refs.Handle(ctx, ids); err != nil {
			return nil, SearchThreadsOutput{}, t.toolErr(ctx, ToolSearchThreads, err)
		}
	}
	offset := 0
	if in.Offset != nil {
		offset = *in.Offset
	}
	out := SearchThreadsOutput{Threads: make([]ThreadJSON, 0, len(page.Threads)), TotalCount: page.Total.Count,
		TotalCountIsExact: page.Total.Exact, Offset: offset, HasMore: page.HasNext}
	for _, th := range page.Threads {
		out.Threads = append(out.Threads, threadJSON(th, refs[th.ID]))
	}
	return nil, out, nil
}

// ContractGraphInput is contract_graph's arguments.
type ContractGraphInput struct {
	Name    string `json:"name" jsonschema:"the contract name (a thread's contract_name)"`
	Version *int   `json:"version,omitempty" jsonschema:"a version number; the latest when omitted"`
}

// ContractStepJSON is one node of the contract graph.
type ContractStepJSON struct {
	Name            string   `json:"name"`
	Owner           string   `json:"owner,omitempty" jsonschema:"the party that owns the step; empty means any party"`
	Type            string   `json:"type" jsonschema:"managed, external or human_in_loop"`
	Description     string   `json:"description,omitempty"`
	EntryPoint      bool     `json:"entry_point"`
	Terminal        bool     `json:"terminal"`
	Next            []string `json:"next" jsonschema:"steps allowed after this one succeeds"`
	CanRetry        bool     `json:"can_retry"`
	MaxRetries      int      `json:"max_retries" jsonschema:"0 with can_retry means unlimited"`
	Timeout         string   `json:"timeout,omitempty" jsonschema:"bound on one attempt, as a Go duration (e.g. 30s)"`
	RequiredContext []string `json:"required_context"`
	OptionalContext []string `json:"optional_context"`
}

// ContractGraphOutput is contract_graph's result.
type ContractGraphOutput struct {
	Name                      string             `json:"name"`
	Version                   int                `json:"version"`
	Description               string             `json:"description,omitempty"`
	Parties                   []string           `json:"parties"`
	EntryPoints               []string           `json:"entry_points"`
	TerminalSteps             []string           `json:"terminal_steps"`
	Steps                     []ContractStepJSON `json:"steps"`
	MaxDuration               string             `json:"max_duration,omitempty" jsonschema:"bound on a whole thread, as a Go duration"`
	AllowMultipleTerminals    bool               `json:"allow_multiple_terminals"`
	MultipleTerminalsSeverity string             `json:"multiple_terminals_severity,omitempty"`
}

func (t *tools) contractGraph(ctx context.Context, _ *mcp.CallToolRequest, in ContractGraphInput) (*mcp.CallToolResult, ContractGraphOutput, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return nil, ContractGraphOutput{}, t.toolErr(ctx, ToolContractGraph, invalidArg("name", "name is required"))
	}
	version := 0
	if in.Version != nil {
		if *in.Version < 1 {
			return nil, ContractGraphOutput{}, t.toolErr(ctx, ToolContractGraph, invalidArg("version", "version must be a positive integer"))
		}
		version = *in.Version
	}
	c, err := t.d.Queries.Contract.Handle(ctx, name, version)
	if err != nil {
		return nil, ContractGraphOutput{}, t.toolErr(ctx, ToolContractGraph, err)
	}
	return nil, contractGraphJSON(c), nil
}

func contractGraphJSON(c domain.Contract) ContractGraphOutput {
	out := ContractGraphOutput{Name: c.Name, Version: c.Version, Description: c.Description,
		Parties: nonNil(c.Parties), EntryPoints: nonNil(c.EntryPoints), TerminalSteps: nonNil(c.TerminalSteps),
		Steps: make([]ContractStepJSON, 0, len(c.Steps)), AllowMultipleTerminals: c.AllowMultipleTerminals,
		MultipleTerminalsSeverity: string(c.MultipleTerminalsSeverity)}
	if c.MaxDuration > 0 {
		out.MaxDuration = c.MaxDuration.String()
	}
	for _, s := range c.Steps {
		js := ContractStepJSON{Name: s.Name, Owner: s.Owner, Type: s.Type, Description: s.Description,
			EntryPoint: c.IsEntryPoint(s.Name), Terminal: c.IsTerminal(s.Name), Next: nonNil(c.AllowedNext(s.Name)),
			RequiredContext: nonNil(s.Required), OptionalContext: nonNil(s.Optional), CanRetry: true}
		if tr, ok := c.Transition(s.Name); ok {
			js.CanRetry, js.MaxRetries = tr.CanRetry, tr.MaxRetries
		}
		if s.Timeout > 0 {
			js.Timeout = s.Timeout.String()
		}
		out.Steps = append(out.Steps, js)
	}
	return out
}

// verify_thread_integrity goes through the same use case as GraphQL's
// verifyThreadIntegrity.
func (t *tools) verifyIntegrity(ctx context.Context, _ *mcp.CallToolRequest, in ThreadIDInput) (*mcp.CallToolResult, IntegrityOutput, error) {
	id := strings.TrimSpace(in.ThreadID)
	if id == "" {
		return nil, IntegrityOutput{}, t.toolErr(ctx, ToolVerifyThreadIntegrity, invalidArg("thread_id", "thread_id is required"))
	}
	st, err := t.d.Queries.VerifyThread.Handle(ctx, id)
	if err != nil {
		return nil, IntegrityOutput{}, t.toolErr(ctx, ToolVerifyThreadIntegrity, err)
	}
	out := IntegrityOutput{ThreadID: id, Verified: st.Verified, TotalEvents: st.TotalEvents,
		BrokenStepID: st.BrokenStepID, Error: st.Error, VerifiedAt: t.d.Queries.Clock.Now().UTC()}
	if st.BrokenAt != nil {
		b := st.BrokenAt.UTC()
		out.BrokenAt = &b
	}
	return nil, out, nil
}

func threadJSON(v ports.ThreadView, refs map[string]string) ThreadJSON {
	j := ThreadJSON{ID: v.ID, Label: deref(v.Label), Status: v.Status, Error: deref(v.Error),
		ContractName: deref(v.ContractName), OwnerKind: v.OwnerKind, OwnerID: v.OwnerID,
		ServiceName: deref(v.ServiceName), StepCount: v.StepCount, Refs: refs, StartedAt: v.Started().UTC(),
		UpdatedAt: v.UpdatedAt.UTC(), CompletedAt: utc(v.CompletedAt), LastHash: v.LastHash}
	if v.ContractVersion != nil {
		j.ContractVersion = *v.ContractVersion
	}
	return j
}

func stepJSON(s ports.StepView) StepJSON {
	return StepJSON{StepName: s.StepName, IdempotencyKey: s.IdempotencyKey, Status: s.Status, RetryCount: s.RetryCount,
		PreviousStep: deref(s.PreviousStep), Actor: s.Actor, ActorService: s.ActorService, Context: rawJSON(s.LatestContext),
		FirstSeenAt: s.FirstSeenAt.UTC(), LastUpdatedAt: s.LastUpdatedAt.UTC(), StartedAt: utc(s.StartedAt),
		FinishedAt: utc(s.FinishedAt), LatestStepID: s.LatestStepID}
}

// rawJSON decodes a stored JSON column for output; an unreadable value is
// passed through as a string rather than failing the whole tool.
func rawJSON(s string) any {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
