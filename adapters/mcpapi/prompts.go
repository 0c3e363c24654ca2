package mcpapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// instructions is sent to clients at initialization; agents read it before
// choosing tools.
const instructions = `threadengine records the execution of business processes as threads of steps,
governed by versioned contracts (which steps exist, who owns them, which step may
follow which, which steps end a thread, retry limits and required context).

Start from a thread: get_thread (by id or by a business reference such as an order
number) returns its status, steps with retry counts, validation violations and
notifications. search_threads finds threads by contract, status, actor, time window
or reference. contract_graph returns the contract a thread should follow, so you can
compare what happened with what should have happened. verify_thread_integrity
recomputes the thread's tamper-evident hash chain. resolve_actors turns owner and
actor ids into names. graphql_query runs any read query of the GraphQL API (schema:
resource graphql://schema) under the same 1000-point complexity limit. Before acting on
a contract thread you write to, can asks whether a step may run now (and whether the
context you would send passes its rules), should asks for advice, next lists the paths
open from now; none of them reserves or records anything.

All tools are read-only and act with the permissions of the API key you connected with.`

// Prompt names.
const (
	PromptDebugSilentFailure       = "debug_silent_failure"
	PromptVerifyProcessIntegrity   = "verify_process_integrity"
	PromptAnalyzeWorkflow          = "analyze_workflow"
	defaultAnalyzeWorkflowSample   = "20"
	maxPromptArgLen                = 256
	promptRoleUser                 = mcp.Role("user")
	errPromptArgumentMissingFormat = "argument %q is required"
)

func addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{
		Name:  PromptDebugSilentFailure,
		Title: "Debug a silent failure",
		Description: "Investigate a thread that looks fine but did not deliver: missing terminal step, " +
			"exhausted retries, contract violations, a step stuck in progress.",
		Arguments: []*mcp.PromptArgument{
			{Name: "thread_id", Description: "The thread to investigate (give this or ref)."},
			{Name: "ref", Description: "A business reference instead of an id, as key=value (e.g. order_id=A-1042) or just the value."},
		},
	}, debugSilentFailure)

	s.AddPrompt(&mcp.Prompt{
		Name:  PromptVerifyProcessIntegrity,
		Title: "Verify process integrity",
		Description: "Check that a thread's recorded history has not been altered (hash chain) and that " +
			"it followed its contract.",
		Arguments: []*mcp.PromptArgument{
			{Name: "thread_id", Description: "The thread to verify.", Required: true},
		},
	}, verifyProcessIntegrity)

	s.AddPrompt(&mcp.Prompt{
		Name:  PromptAnalyzeWorkflow,
		Title: "Analyze a workflow",
		Description: "Study recent threads of one contract: where they fail, retry, stall or deviate from " +
			"the contract graph, and who is involved.",
		Arguments: []*mcp.PromptArgument{
			{Name: "contract_name", Description: "The contract (workflow) to analyze.", Required: true},
			{Name: "contract_version", Description: "A version number; latest when omitted."},
			{Name: "sample_size", Description: "How many recent threads to study (1-100, default 20)."},
		},
	}, analyzeWorkflow)
}

// promptArg returns a trimmed argument, refusing oversized values: prompt
// arguments are pasted into text an agent will act on.
func promptArg(req *mcp.GetPromptRequest, name string) (string, error) {
	v := strings.TrimSpace(req.Params.Arguments[name])
	if len(v) > maxPromptArgLen {
		return "", fmt.Errorf("argument %q is longer than %d characters", name, maxPromptArgLen)
	}
	return v, nil
}

func userPrompt(description, text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{
		Description: description,
		Messages:    []*mcp.PromptMessage{{Role: promptRoleUser, Content: &mcp.TextContent{Text: text}}},
	}
}

func debugSilentFailure(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	id, err := promptArg(req, "thread_id")
	if err != nil {
		return nil, err
	}
	ref, err := promptArg(req, "ref")
	if err != nil {
		return nil, err
	}
	var locate string
	switch {
	case id != "":
		locate = fmt.Sprintf("Call get_thread with thread_id %q.", id)
	case ref != "":
		if k, v, ok := strings.Cut(ref, "="); ok {
			locate = fmt.Sprintf("Call get_thread with ref_key %q and ref_value %q. If other_matches is above 0, "+
				"use search_threads with the same ref and pick the one the user means (ask if unclear).", strings.TrimSpace(k), strings.TrimSpace(v))
		} else {
			locate = fmt.Sprintf("Call search_threads with ref_value %q to find the thread, then get_thread on it. "+
				"If several threads match, list them and ask the user which one to investigate.", ref)
		}
	default:
		return nil, fmt.Errorf("give thread_id or ref")
	}
	text := "A process recorded in threadengine seems to have failed silently: nothing crashed, but the expected " +
		"outcome never happened. Find out what went wrong, using only the threadengine tools.\n\n" +
		"1. " + locate + "\n" +
		"2. Note the thread status, error, contract name and version, when it started and whether it completed.\n" +
		"3. Call contract_graph for that contract name and version. From the graph, list the entry points, the " +
		"terminal steps and, for every step, the steps allowed next and its retry limit.\n" +
		"4. Walk the thread's steps in order and compare them with the graph. Look specifically for:\n" +
		"   - no terminal step reached (the thread is still active, or stopped after a non-terminal step);\n" +
		"   - a step whose latest status is failed or error, especially with retry_count at or above the " +
		"contract's max_retries (retries exhausted with nothing after);\n" +
		"   - a step stuck in in_progress or pending long after its timeout or the contract's max_duration;\n" +
		"   - a transition the contract does not allow, or a required step that was skipped;\n" +
		"   - validation results with violations (critical and major ones fail the thread) and notifications " +
		"with severity critical, major or warning;\n" +
		"   - missing required context fields on a step.\n" +
		"5. If the thread links to child threads (refs named linkedThread:*), inspect those too: the failure " +
		"may be downstream.\n" +
		"6. Use resolve_actors on the owner and step actors so the report names people and services.\n" +
		"7. For details the other tools do not return (full step history of one step, sub-steps), use " +
		"graphql_query; read the graphql://schema resource first.\n\n" +
		"Report: the most likely root cause, the evidence (step names, statuses, timestamps, violation " +
		"messages), who owns the step where it broke, and a concrete next action. Say clearly what you could " +
		"not determine. Do not guess data the tools did not return."
	return userPrompt("Debug a silent failure", text), nil
}

func verifyProcessIntegrity(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	id, err := promptArg(req, "thread_id")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, fmt.Errorf(errPromptArgumentMissingFormat, "thread_id")
	}
	text := fmt.Sprintf("Verify the integrity of threadengine thread %q: that its recorded history is authentic "+
		"and that the process followed its contract.\n\n", id) +
		"1. Call verify_thread_integrity with this thread_id. It recomputes the HMAC hash chain over every " +
		"recorded step attempt. verified=true means no recorded event was altered, removed or reordered; " +
		"otherwise report broken_at and the error exactly as returned (for example tampering detected or an " +
		"incomplete chain).\n" +
		"2. Call get_thread for the same id. Check that total_events from the verification is consistent with " +
		"the steps and their retry counts.\n" +
		"3. If the thread has a contract, call contract_graph for its name and version and check process " +
		"conformance: it started at an entry point, every transition is allowed, no step exceeded its retry " +
		"limit, required steps ran before the steps that depend on them, and the thread ended at a terminal " +
		"step (or is still legitimately active).\n" +
		"4. List every validation violation and every notification with severity critical or major.\n" +
		"5. Use resolve_actors to name the owner and the actors of any step that failed a check.\n\n" +
		"Report two verdicts separately: (a) data integrity — intact, or not intact with where the chain " +
		"breaks; (b) process conformance — conformant, or the list of deviations with the step names and " +
		"timestamps. An integrity failure is a security finding: say so plainly and do not explain it away."
	return userPrompt("Verify process integrity", text), nil
}

func analyzeWorkflow(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name, err := promptArg(req, "contract_name")
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf(errPromptArgumentMissingFormat, "contract_name")
	}
	version, err := promptArg(req, "contract_version")
	if err != nil {
		return nil, err
	}
	sample, err := promptArg(req, "sample_size")
	if err != nil {
		return nil, err
	}
	if sample == "" {
		sample = defaultAnalyzeWorkflowSample
	}
	if n, err := strconv.Atoi(sample); err != nil || n < 1 || n > 100 {
		return nil, fmt.Errorf("sample_size must be a number from 1 to 100")
	}
	if version != "" {
		if n, err := strconv.Atoi(version); err != nil || n < 1 {
			return nil, fmt.Errorf("contract_version must be a positive integer")
		}
	}
	which := fmt.Sprintf("contract %q (latest version)", name)
	graphArgs := fmt.Sprintf("name %q", name)
	if version != "" {
		which = fmt.Sprintf("contract %q version %s", name, version)
		graphArgs += " and version " + version
	}
	text := fmt.Sprintf("Analyze how the workflow defined by threadengine %s behaves in practice.\n\n", which) +
		fmt.Sprintf("1. Call contract_graph with %s. Summarize the intended flow: entry points, the main path "+
			"to each terminal step, owners (parties) of each step, retry limits and time limits.\n", graphArgs) +
		fmt.Sprintf("2. Call search_threads with contract_name %q", name) + versionClause(version) +
		fmt.Sprintf(" and limit %s to get recent threads. Also count threads per status (active, completed, "+
			"failed, cancelled) using the status filter; total_count gives the totals.\n", sample) +
		"3. For a representative subset (all failed ones first, then some completed and some long-running " +
		"active ones), call get_thread and record: the path taken through the graph, retries per step, time " +
		"spent per step, validation violations and notifications.\n" +
		"4. Aggregate: which steps fail or retry most, where threads stall (active with no recent step), which " +
		"transitions deviate from the contract, which violations recur, and the typical and worst durations.\n" +
		"5. Use resolve_actors to attribute problem steps to their owners.\n" +
		"6. If you need an aggregate the tools do not give directly, use graphql_query (schema in the " +
		"graphql://schema resource); keep queries small, the complexity limit is 1000 points.\n\n" +
		"Report: a short description of the intended flow, the observed bottlenecks and failure points " +
		"ranked by impact with numbers, contract deviations, and concrete recommendations (for the process or " +
		"for the contract itself). State the sample size you actually examined."
	return userPrompt("Analyze a workflow", text), nil
}

func versionClause(version string) string {
	if version == "" {
		return ""
	}
	return " and contract_version " + version
}
