package decisions

// What the decision queries (Can, Should, Next) share: one read of the
// thread, its contract, the caller's roles and what grants consumed.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/semantic"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Decisions are the three decision queries, as the adapters that serve
// them (GraphQL, MCP) take them.
type Decisions struct {
	Can    CanHandler
	Should ShouldHandler
	Next   NextHandler
}

// decisionReader reads the snapshot a decision is judged on. Nothing is
// locked or written: a decision is advice, and a later report or waitFor is
// judged again.
type decisionReader struct {
	grants    ports.Grants
	contracts ThreadContracts
	clock     ports.Clock
}

// ThreadContracts finds the contract a thread was started with (nil for a
// free-form thread); the thread use cases' cache answers it.
type ThreadContracts interface {
	ThreadContract(ctx context.Context, threadID string) (*domain.Contract, error)
}

// now is the decisions' clock: UTC, at the microsecond the stores keep.
func now(c ports.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// decisionSnapshot is one consistent read of a thread for a decision.
type decisionSnapshot struct {
	contract domain.Contract
	thread   domain.DecisionThread
	raw      ports.GrantTx
}

// errNoContract refuses a decision on a free-form thread: every step is
// allowed there, and there is nothing to decide.
var errNoContract = domain.NewBase(domain.KindInvalid, domain.CodeValidationFailed,
	"thread has no contract: decisions judge a contract thread (every step is allowed on a free-form thread)")

// load checks the caller may write to the thread (threads.write, and a
// live party that may record steps) and reads it.
func (r decisionReader) load(ctx context.Context, threadID string) (decisionSnapshot, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return decisionSnapshot{}, err
	}
	if threadID == "" {
		return decisionSnapshot{}, domain.Invalid("threadId", "threadId is required")
	}
	v, err := r.grants.ReadGrants(ctx, threadID)
	if err != nil {
		return decisionSnapshot{}, err
	}
	now := now(r.clock)
	th := v.Thread
	if err := authz.CheckVisible(p, &th, now); err != nil {
		return decisionSnapshot{}, err
	}
	roles, err := th.DecisionRoles(authz.Actor(p, ""), now)
	if err != nil {
		return decisionSnapshot{}, err
	}
	c, err := r.contracts.ThreadContract(ctx, threadID)
	if err != nil {
		return decisionSnapshot{}, err
	}
	if c == nil {
		return decisionSnapshot{}, errNoContract
	}
	return decisionSnapshot{contract: *c, thread: domain.NewDecisionThread(th, *c, roles, ports.Recorded(v.States), ports.StateContexts(v.States), v.Grants),
		raw: v}, nil
}

// resolve picks the step a can or should query is about; goal needs the
// classifier (semantic.MatchAction). uncertain is set when no step could
// be chosen.
func resolveStep(ctx context.Context, cl ports.Classifier, c domain.Contract, action, goal string) (step, matchedBy string, uncertain *domain.CanDecision, err error) {
	step, needs, err := domain.ResolveAction(c, action, goal)
	if err != nil || !needs {
		return step, domain.MatchedExact, nil, err
	}
	step, why := semantic.MatchAction(ctx, cl, strings.TrimSpace(goal), c.Actions())
	if step == "" {
		d := domain.UncertainDecision(why)
		return "", domain.MatchedNone, &d, nil
	}
	return step, domain.MatchedClassifier, nil, nil
}

// ParseCandidateContext reads can's context argument: a JSON object (or a
// string holding one, as the JSON scalar is returned), numbers kept as
// written.
func ParseCandidateContext(raw string) (map[string]string, error) {
	bad := domain.Invalid("context", "context must be a JSON object")
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, bad
	}
	if s, ok := v.(string); ok {
		dec = json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, bad
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, bad
	}
	return domain.CandidateContext(obj)
}
