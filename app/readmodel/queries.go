package readmodel

import (
	"encoding/json"
	"time"

	"github.com/threadengine/engine/app/insights"
	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Queries are the read use cases behind the GraphQL API and the MCP tools,
// one handler per use case (as transparency.Queries): each is a small type
// with one Handle method, built by a constructor that takes only the narrow
// port it reads (declared here, where it is consumed) and the shared read
// Scope (scope.go). Most take the ids of a whole result level and load one
// field for all of them in one statement: the per-field batch loaders
// behind the schema (adapters/graphqlapi/loader.go); ThreadDetail is the
// "one thread and what explains it" query MCP get_thread and GraphQL
// thread(id) share, built on the same handlers.
//
// The engine holds one company: humans and company-scoped service accounts
// see every thread, as in the reference engine where every company member
// sees the company's threads; a party-scoped service account sees only the
// threads it is a party of, and the others answer as if they did not exist.
type Queries struct {
	// Threads (threads.go).
	Thread         ThreadHandler
	Threads        ThreadsHandler
	Search         SearchThreadsHandler
	Count          CountThreadsHandler
	ThreadsVersion ThreadsVersionHandler
	Refs           RefsHandler
	Counts         CountsHandler
	LinkedFrom     LinkedFromHandler
	Chains         ThreadChainsHandler
	Locate         LocateHandler
	Detail         ThreadDetailHandler
	// Steps (steps.go).
	Steps         StepsHandler
	Attempts      AttemptsHandler
	StepHistories StepHistoriesHandler
	StepHistory   StepHistoryHandler
	SubSteps      SubStepsHandler
	StepGroups    StepGroupsHandler
	StepEdges     StepEdgesHandler
	IssueKeys     IssueKeysHandler
	// Validations and notifications (validations.go).
	LatestValidations  LatestValidationsHandler
	Validations        ValidationsHandler
	ValidationResults  ValidationResultsHandler
	Notifications      NotificationsHandler
	NotificationCounts NotificationCountsHandler
	// The hash chain's verdict (integrity.go).
	VerifyStep    VerifyStepHandler
	VerifyThreads VerifyThreadsHandler
	VerifyThread  VerifyThreadHandler
	// Contracts (contracts.go) and the engine-wide aggregates (app/insights).
	Contract      ContractHandler
	ContractDiff  ContractDiffHandler
	ContractStats insights.ContractStatsHandler
	StepStats     insights.StepStatsHandler
	Overview      insights.OverviewHandler
	Problems      insights.ProblemsHandler
	ProcessMap    insights.ProcessMapHandler
	// Clock is the query clock (HashChainStatus.lastVerifiedAt).
	Clock ports.Clock
}

// Deps wires Queries: the composition root's stores, each handed to the
// handlers as the narrow port they read.
type Deps struct {
	// Store is the read side's aggregate (adapters/threadquery); no handler
	// holds it, each is given the methods it calls.
	Store     ports.ThreadQueries
	Contracts ContractReader
	// ChainSecrets are the hash-chain secrets by version, as the write side
	// signs with (see app/threads); they are needed to verify chains.
	ChainSecrets map[string][]byte
	// ChainPartialBefore: see domain.ChainKeyring.PartialBefore.
	ChainPartialBefore map[string]time.Time
	// Log is the transparency log verification checks threads against
	// (nil: chains and heads only).
	Log   integrity.Log
	Clock ports.Clock
	// Stats answers the contracts and overview aggregates (optional).
	Stats ports.ThreadStats
	// Problems answers the Problems view (optional).
	Problems ports.ProblemReads
	// ProcessMaps answers processMap (optional).
	ProcessMaps ports.ProcessMapReads
}

// New builds the read handlers.
func New(d Deps) *Queries {
	if d.Clock == nil {
		d.Clock = ports.SystemClock{}
	}
	st, sc := d.Store, NewScope(d.Store, d.Clock)
	q := &Queries{Clock: d.Clock}
	q.Threads = NewThreadsHandler(st, sc)
	q.Thread = NewThreadHandler(q.Threads)
	q.Search = NewSearchThreadsHandler(st, sc)
	q.Count = NewCountThreadsHandler(st, sc)
	q.ThreadsVersion = NewThreadsVersionHandler(st, sc)
	q.Refs = NewRefsHandler(st, sc)
	q.Counts = NewCountsHandler(st, sc)
	q.LinkedFrom = NewLinkedFromHandler(st, sc)
	q.Chains = NewThreadChainsHandler(st, sc)
	q.Locate = NewLocateHandler(q.Thread, q.Search)
	q.Steps = NewStepsHandler(st, sc)
	q.Attempts = NewAttemptsHandler(st, sc)
	q.StepHistories = NewStepHistoriesHandler(st, sc)
	q.StepHistory = NewStepHistoryHandler(st, sc)
	q.SubSteps = NewSubStepsHandler(st, sc)
	q.StepGroups = NewStepGroupsHandler(st, sc)
	q.StepEdges = NewStepEdgesHandler(st, sc)
	q.IssueKeys = NewIssueKeysHandler(st, sc)
	q.LatestValidations = NewLatestValidationsHandler(st, sc)
	q.Validations = NewValidationsHandler(st, sc)
	q.ValidationResults = NewValidationResultsHandler(q.Validations)
	q.Notifications = NewNotificationsHandler(st, sc)
	q.NotificationCounts = NewNotificationCountsHandler(st, sc)
	q.Detail = NewThreadDetailHandler(q.Locate, q.Refs, q.Steps, q.Validations, q.Notifications, q.NotificationCounts, q.Chains)
	checker := integrity.Checker{Keys: domain.ChainKeyring{Secrets: d.ChainSecrets, PartialBefore: d.ChainPartialBefore}, Log: d.Log}
	q.VerifyStep = NewVerifyStepHandler(st, checker, sc)
	q.VerifyThreads = NewVerifyThreadsHandler(st, checker, sc)
	q.VerifyThread = NewVerifyThreadHandler(q.VerifyThreads)
	q.Contract = NewContractHandler(d.Contracts)
	q.ContractDiff = NewContractDiffHandler(q.Contract)
	q.ContractStats = insights.NewContractStatsHandler(d.Stats)
	q.StepStats = insights.NewStepStatsHandler(d.Stats)
	q.Overview = insights.NewOverviewHandler(d.Stats, d.Clock)
	q.Problems = insights.NewProblemsHandler(d.Problems, d.Clock)
	q.ProcessMap = insights.NewProcessMapHandler(d.ProcessMaps, d.Contracts, d.Clock)
	return q
}

// ChainSecrets returns the secrets map the thread use cases sign with, so
// the composition root can hand the same secret to Queries.
func ChainSecrets(secret []byte) map[string][]byte {
	return domain.SingleChainKey(secret).Secrets
}

// StepStatuses expands a step status filter: the SDKs send "success" while
// the reference engine stores "completed", so either matches both.
func StepStatuses(status string) []string {
	switch status {
	case "":
		return nil
	case "success", "completed":
		return []string{"success", "completed"}
	}
	return []string{status}
}

// RefsJSON encodes refs the way the SDKs expect them: a JSON object in a
// string (the Node SDK calls JSON.parse on it), or nil when there are none.
func RefsJSON(refs map[string]string) *string {
	if len(refs) == 0 {
		return nil
	}
	b, _ := json.Marshal(refs)
	s := string(b)
	return &s
}

// validStepKeys drops keys whose thread id cannot exist (see ValidIDs).
func validStepKeys(keys []ports.StepKey) []ports.StepKey {
	out := keys[:0:0]
	for _, k := range keys {
		if domain.ValidID(k.ThreadID) {
			out = append(out, k)
		}
	}
	return out
}
