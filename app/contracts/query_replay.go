package contracts

// The Replay query: judges the latest threads of a contract again as if a
// draft (not yet published) had been in force (POST
// /v1/contracts/{name}/replay).

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Replay bounds. A replay reads at most MaxReplayThreads threads, stops at
// ReplayLimits.Deadline or MaxRows rows read and answers what it judged;
// each caller runs one at a time and a replica at most Concurrent.
const (
	DefaultReplayThreads = 1000
	MaxReplayThreads     = 10000
)

// ReplayLimits bound one replay; a zero field takes its default.
type ReplayLimits struct {
	// Deadline (default 10 s): the replay answers what it judged by then.
	Deadline time.Duration
	// MaxRows (default 250,000): rows read (threads, attempts, parties)
	// after which no further page is read.
	MaxRows int
	// PageSize (default 50) threads are read per statement round.
	PageSize int
	// MaxSteps (default 500): attempts judged per thread; a longer thread
	// is judged on its first MaxSteps.
	MaxSteps int
	// Concurrent (default 2): replays running at once on this replica.
	Concurrent int
	// Examples (default 5): thread ids kept per finding.
	Examples int
}

func (l ReplayLimits) withDefaults() ReplayLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.Deadline <= 0 {
		l.Deadline = 10 * time.Second
	}
	def(&l.MaxRows, 250_000)
	def(&l.PageSize, 50)
	def(&l.MaxSteps, 500)
	def(&l.Concurrent, 2)
	def(&l.Examples, domain.DefaultReplayExamples)
	return l
}

// Why a replay stopped before judging every thread asked for.
const (
	ReplayStoppedDeadline = "deadline"
	ReplayStoppedRows     = "row_limit"
)

// ReplayRequest is a draft to replay over the latest Threads threads (0:
// DefaultReplayThreads) of contract Name.
type ReplayRequest struct {
	Name    string
	Source  []byte
	Threads int
}

// ReplayVersion counts the judged threads of one contract version.
type ReplayVersion struct {
	Version int
	Threads int
}

// ReplayResult is what the draft would have done to the threads judged.
type ReplayResult struct {
	Contract     string
	DraftVersion int
	Format       domain.ContractFormat
	ContentHash  string
	Warnings     []domain.ContractProblem
	// Requested threads; Tally.Threads were judged. Complete is false when
	// Stopped (deadline, row_limit) cut the replay short; the contract may
	// simply have fewer threads than requested.
	Requested int
	Complete  bool
	Stopped   string
	RowsRead  int
	Elapsed   time.Duration
	Tally     *domain.ReplayTally
	Rules     []domain.ReplayRule
	Versions  []ReplayVersion
	// Newest and Oldest are the start times of the threads judged.
	Newest, Oldest time.Time
	// Truncated counts threads longer than the steps judged per thread.
	Truncated int
	MaxSteps  int
}

// ReplayHandler replays drafts; one of the Queries.
type ReplayHandler struct {
	versions ports.ContractReader
	threads  ports.ReplayReader
	clock    ports.Clock
	limits   ReplayLimits
	gate     *replayGate
}

// NewReplayHandler reads threads with threads (nil: replay is unavailable)
// and resolves the draft's includes with versions.
func NewReplayHandler(versions ports.ContractReader, threads ports.ReplayReader, clock ports.Clock, limits ReplayLimits) ReplayHandler {
	limits = limits.withDefaults()
	return ReplayHandler{versions: versions, threads: threads, clock: clock, limits: limits,
		gate: &replayGate{running: map[string]bool{}, max: limits.Concurrent}}
}

// Handle needs contracts.read and threads.read over every thread (a
// party-scoped service account is refused): the answer names threads and
// what they carried. An invalid draft, or one naming another contract, is
// invalid_contract; an unknown contract not_found; a caller with a replay
// running, or a replica running its maximum, rate_limited.
func (h ReplayHandler) Handle(ctx context.Context, req ReplayRequest) (ReplayResult, error) {
	p, err := authz.Require(ctx, domain.PermContractsRead)
	if err != nil {
		return ReplayResult{}, err
	}
	if err := p.Require(domain.PermThreadsRead); err != nil {
		return ReplayResult{}, err
	}
	if p.PartyScoped() {
		return ReplayResult{}, domain.Forbidden("a replay reads every thread of the contract; this service account reads only the threads it is a party of")
	}
	if h.threads == nil {
		return ReplayResult{}, domain.E(domain.KindUnavailable, domain.CodeUnavailable, "replay is not available on this engine")
	}
	if err := domain.CheckContractName(req.Name); err != nil {
		return ReplayResult{}, err
	}
	n := req.Threads
	if n == 0 {
		n = DefaultReplayThreads
	}
	if n < 1 || n > MaxReplayThreads {
		return ReplayResult{}, domain.Invalid("threads", "threads must be between 1 and %d", MaxReplayThreads)
	}
	if _, err := h.versions.GetContract(ctx, req.Name, 0); err != nil {
		return ReplayResult{}, err
	}
	cs, err := compileValid(ctx, req.Source, h.versions, req.Name, "replayed")
	if err != nil {
		return ReplayResult{}, err
	}
	release, err := h.gate.acquire(p.ID)
	if err != nil {
		return ReplayResult{}, err
	}
	defer release()
	return h.run(ctx, cs, req.Name, n)
}

// run reads pages of threads, newest first, and judges each, until n are
// judged, the contract has no more, or a limit is reached.
func (h ReplayHandler) run(ctx context.Context, cs Compiled, name string, n int) (ReplayResult, error) {
	l := h.limits
	start := h.clock.Now()
	dctx, cancel := context.WithTimeout(ctx, l.Deadline)
	defer cancel()
	out := ReplayResult{Contract: name, DraftVersion: cs.Contract.Version, Format: cs.Format, ContentHash: cs.Contract.ContentHash(),
		Warnings: cs.Warnings, Requested: n, Complete: true, Tally: domain.NewReplayTally(l.Examples), MaxSteps: l.MaxSteps}
	perVersion := map[int]int{}
	var after *ports.ReplayCursor
	for out.Tally.Threads < n {
		switch {
		case h.clock.Now().Sub(start) >= l.Deadline:
			out.Complete, out.Stopped = false, ReplayStoppedDeadline
		case out.RowsRead >= l.MaxRows:
			out.Complete, out.Stopped = false, ReplayStoppedRows
		}
		if !out.Complete {
			break
		}
		limit := min(l.PageSize, n-out.Tally.Threads)
		page, rows, err := h.threads.ContractThreads(dctx, name, after, limit, l.MaxSteps)
		if err != nil {
			if ctx.Err() == nil && errors.Is(dctx.Err(), context.DeadlineExceeded) {
				out.Complete, out.Stopped = false, ReplayStoppedDeadline
				break
			}
			return ReplayResult{}, err
		}
		out.RowsRead += rows
		for _, t := range page {
			v := domain.ReplayThread(cs.Contract, domain.ReplayInput{StartedAt: t.CreatedAt, Steps: t.Steps})
			out.Tally.Add(t.ID, t.Health == domain.HealthViolated, v)
			perVersion[t.ContractVersion]++
			if t.StepCount > len(t.Steps) {
				out.Truncated++
			}
			if out.Newest.IsZero() {
				out.Newest = t.CreatedAt
			}
			out.Oldest = t.CreatedAt
		}
		if len(page) < limit {
			break // the contract has no older threads
		}
		last := page[len(page)-1]
		after = &ports.ReplayCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	out.Elapsed = h.clock.Now().Sub(start)
	out.Rules = out.Tally.Rules()
	for v, c := range perVersion {
		out.Versions = append(out.Versions, ReplayVersion{Version: v, Threads: c})
	}
	sort.Slice(out.Versions, func(i, j int) bool { return out.Versions[i].Version > out.Versions[j].Version })
	return out, nil
}

// replayGate lets each caller run one replay at a time and a replica at
// most max at once; a refused replay is limit_exceeded (429, retry later).
type replayGate struct {
	mu      sync.Mutex
	running map[string]bool
	max     int
}

func (g *replayGate) acquire(principal string) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[principal] {
		return nil, domain.LimitExceeded(domain.KindRateLimited, "replays_per_caller",
			"a replay of yours is still running; one replay per caller runs at a time")
	}
	if len(g.running) >= g.max {
		return nil, domain.LimitExceeded(domain.KindRateLimited, "replays_running",
			"%d replays are running on this engine, its maximum; try again shortly", g.max)
	}
	g.running[principal] = true
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.running, principal)
	}, nil
}
