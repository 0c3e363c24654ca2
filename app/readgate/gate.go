package readgate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/threadengine/engine/app/budget"
	"github.com/threadengine/engine/domain"
)

// Names of the read limits a Gate refuses by (the limit label of
// threadengine_limit_refusals_total and the "limit" detail of the error).
const (
	LimitReadsConcurrent   = "graphql_concurrent"
	LimitReadsPerPrincipal = "graphql_concurrent_per_principal"
	LimitReadPoints        = "graphql_points"
	LimitExpensiveReads    = "graphql_expensive"
	LimitExpensiveTime     = "graphql_expensive_time"
	LimitPrincipalTime     = "graphql_principal_time"
)

// GateLimits configure a Gate (config limits.graphql).
type GateLimits struct {
	MaxConcurrent, MaxConcurrentPerPrincipal int
	QueueTimeout                             time.Duration
	// PointsPerSecond and PointsBurst: one principal's token bucket of
	// cost points.
	PointsPerSecond, PointsBurst int
	// An operation costing at least ExpensiveCost points also takes one of
	// MaxExpensive places: expensive reads never run on every core (on
	// SQLite they run in the engine's process), so writers and cheap reads
	// always find one free.
	ExpensiveCost, MaxExpensive int
	// ExpensiveShare is the share of the time expensive operations may
	// run, on average, on this replica (0: no bound): what they ran is
	// taken from a bucket of run time refilled at ExpensiveShare seconds a
	// second (bursts of expensiveTimeBurst), and an expensive operation
	// finding it in debt is refused at once when the debt is not paid
	// within the queue timeout. The places bound how many run at once;
	// this bounds how much of a core they take over time, so a client
	// looping expensive reads within its points cannot keep a core busy
	// (on SQLite the read runs in the engine's process).
	ExpensiveShare float64
	// PrincipalShare is the share of one core's time one principal's reads
	// may run, on average (0: no bound): every operation's run time is
	// taken from the principal's bucket (refilled at PrincipalShare seconds
	// a second, bursts of principalTimeBurst) once it ends, and a principal
	// in debt waits for its turn up to the queue timeout, else is refused.
	// The cost model prices what an operation asks for; what it turns out
	// to take (contexts of any size read and cut, a plan gone wrong) is
	// bounded here, per principal, whatever its price.
	PrincipalShare float64
}

// principalTimeBurst is the run time one principal's reads may take in a
// burst before PrincipalShare paces them: two operations at the default
// deadline.
const principalTimeBurst = 10 * time.Second

// expensiveTimeBurst is the run time expensive operations may take in a
// burst before ExpensiveShare paces them: one operation at the default
// deadline.
const expensiveTimeBurst = 5 * time.Second

// Gate bounds the reads running at once, overall and per principal, and
// each principal's read budget in cost points, so one client's reads can
// neither take every read connection nor run one expensive operation
// after another. A nil Gate lets everything through.
type Gate struct {
	lim   GateLimits
	all   chan struct{}
	heavy chan struct{} // places of expensive operations
	// heavyTime is the run time of expensive operations, in milliseconds
	// (nil: not bounded).
	heavyTime *rate.Limiter
	refused   func(limit string)
	waited    func(limit string)

	mu   sync.Mutex
	mine map[string]*principalSlots
	// points are the principals' cost points (nil: not bounded); a bucket
	// back at its burst is the same as a new one, so those of idle
	// principals are forgotten (budget.SweepEvery) without giving them
	// anything.
	points *budget.Buckets
	// ran is each principal's run time in milliseconds (PrincipalShare;
	// nil: not bounded).
	ran *budget.Buckets
	// held are the principals refused by their own budget (points, run
	// time) and until when a request of theirs would be refused again:
	// Held refuses those before anything of the request is read, so a
	// client retrying before its Retry-After costs the engine an answer,
	// not a body, a parse and a pricing each time (issue 25: six clients
	// retrying every 50 ms took up to a quarter of the engine's CPU).
	held      map[string]hold
	heldSwept time.Time
}

// hold is a refused principal's: the limit it was refused by, what that
// limit bounds, and until when it refuses.
type hold struct {
	until       time.Time
	limit, what string
}

type principalSlots struct {
	ch    chan struct{}
	users int // callers holding or waiting for ch; the entry goes at 0
}

// NewGate returns a gate with lim; refused (may be nil) counts each
// refusal by its limit name.
func NewGate(lim GateLimits, refused func(limit string)) *Gate {
	if refused == nil {
		refused = func(string) {}
	}
	g := &Gate{lim: lim, all: make(chan struct{}, lim.MaxConcurrent), heavy: make(chan struct{}, max(1, lim.MaxExpensive)), refused: refused,
		mine: map[string]*principalSlots{}, held: map[string]hold{}}
	if lim.PointsPerSecond > 0 {
		g.points = budget.NewBuckets(float64(lim.PointsPerSecond), lim.PointsBurst)
	}
	if lim.ExpensiveShare > 0 && lim.ExpensiveCost > 0 {
		g.heavyTime = rate.NewLimiter(rate.Limit(lim.ExpensiveShare*1000), int(expensiveTimeBurst/time.Millisecond))
	}
	g.ran = budget.NewBuckets(lim.PrincipalShare*1000, int(principalTimeBurst/time.Millisecond))
	return g
}

// OnWait has waited (may be nil) count each read that waited for its
// turn of a run-time bucket (LimitPrincipalTime, LimitExpensiveTime):
// paced (a wait that ends in a refusal is counted by both). Call it before
// serving.
func (g *Gate) OnWait(waited func(limit string)) {
	if g != nil {
		g.waited = waited
	}
}

// Enter admits one read of cost points for principal who: after who's
// turn of the run time (PrincipalShare), it takes the points from who's
// budget (refused at once, with the wait as
// Retry-After, when they are not there), then (an expensive operation:
// after its turn of the run time and its expensive place) waits for a
// place among who's reads and among all reads, at most QueueTimeout in all
// and never past ctx. leave gives the places back.
func (g *Gate) Enter(ctx context.Context, who string, cost int) (leave func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	if err := g.Held(who); err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, g.lim.QueueTimeout)
	defer cancel()
	// The principal's turn of the run time first: an operation refused for
	// its time takes none of its points.
	if err := g.principalTurn(ctx, wait, who); err != nil {
		return nil, err
	}
	if err := g.spend(who, cost); err != nil {
		return nil, err
	}
	// An expensive operation waits for its turn (ExpensiveShare) and its
	// place before it takes a read slot: waiting, it holds no slot the
	// cheap reads need, so they are not affected by expensive ones.
	heavy := g.lim.ExpensiveCost > 0 && cost >= g.lim.ExpensiveCost
	if heavy {
		if err := g.heavyTurn(ctx, wait); err != nil {
			return nil, err
		}
		select {
		case g.heavy <- struct{}{}:
		case <-wait.Done():
			return nil, g.busy(ctx, LimitExpensiveReads, "%d expensive reads are running on this engine", max(1, g.lim.MaxExpensive))
		}
	}
	leaveHeavy := func() {
		if heavy {
			<-g.heavy
		}
	}
	s := g.slots(who)
	select {
	case s.ch <- struct{}{}:
	case <-wait.Done():
		g.drop(who, s)
		leaveHeavy()
		return nil, g.busy(ctx, LimitReadsPerPrincipal, "%d reads of this principal are running", g.lim.MaxConcurrentPerPrincipal)
	}
	select {
	case g.all <- struct{}{}:
	case <-wait.Done():
		<-s.ch
		g.drop(who, s)
		leaveHeavy()
		return nil, g.busy(ctx, LimitReadsConcurrent, "%d reads are running on this engine", g.lim.MaxConcurrent)
	}
	var once sync.Once
	began := time.Now()
	return func() {
		once.Do(func() {
			<-g.all
			<-s.ch
			g.drop(who, s)
			took := time.Since(began)
			if heavy {
				g.ranHeavy(took)
			}
			g.ran.Charge(who, int(took/time.Millisecond), time.Now())
			leaveHeavy()
		})
	}, nil
}

// principalTurn waits until who's run time is out of debt
// (PrincipalShare).
func (g *Gate) principalTurn(ctx, wait context.Context, who string) error {
	what := fmt.Sprintf("this principal's reads may run %.0f%% of a core's time", 100*g.lim.PrincipalShare)
	d := g.ran.Debt(who, time.Now())
	if d > g.lim.QueueTimeout {
		// A debt longer than the queue timeout is refused (waitOut), and
		// so is every request of who until one would wait out the rest
		// instead: held until then (the debt only grows by its reads still
		// running).
		g.hold(who, d-g.lim.QueueTimeout, LimitPrincipalTime, what)
	}
	return g.waitOut(ctx, wait, d, LimitPrincipalTime, what, nil)
}

// heavyTurn waits until the expensive operations' run time is out of
// debt (ExpensiveShare).
func (g *Gate) heavyTurn(ctx, wait context.Context) error {
	if g.heavyTime == nil {
		return nil
	}
	now := time.Now()
	r := g.heavyTime.ReserveN(now, 1)
	return g.waitOut(ctx, wait, r.DelayFrom(now), LimitExpensiveTime,
		fmt.Sprintf("expensive reads may run %.0f%% of the time on this engine", 100*g.lim.ExpensiveShare), r.Cancel)
}

// waitOut waits d, the time a run-time bucket needs to come out of debt;
// a debt not paid before wait ends is refused at once, with d as
// Retry-After (nothing runs, so a refusal costs nothing). what says whose
// time it is; giveBack (may be nil) returns what was reserved for a turn
// that does not come.
func (g *Gate) waitOut(ctx, wait context.Context, d time.Duration, limit, what string, giveBack func()) error {
	if d <= 0 {
		return nil
	}
	if giveBack == nil {
		giveBack = func() {}
	}
	if dl, ok := wait.Deadline(); !ok || time.Now().Add(d).After(dl) {
		giveBack()
		if err := ctx.Err(); err != nil {
			return g.busy(ctx, limit, "")
		}
		g.refused(limit)
		e := domain.LimitExceeded(domain.KindRateLimited, limit, "%s and have used it; retry in %s", what, d.Round(time.Millisecond))
		e.RetryAfter = d
		return e
	}
	if g.waited != nil {
		g.waited(limit)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wait.Done():
		giveBack()
		return g.busy(ctx, limit, "%s", what)
	}
}

// ranHeavy takes what an expensive operation ran from the run-time bucket
// (into debt: the next ones wait for it).
func (g *Gate) ranHeavy(d time.Duration) {
	if g.heavyTime == nil {
		return
	}
	ms := int(min(d, expensiveTimeBurst) / time.Millisecond)
	if ms > 0 {
		g.heavyTime.ReserveN(time.Now(), ms)
	}
}

// spend takes cost points from who's bucket.
func (g *Gate) spend(who string, cost int) error {
	d := g.points.Take(who, cost, time.Now())
	if d == 0 {
		return nil
	}
	g.refused(LimitReadPoints)
	what := fmt.Sprintf("the read budget of %d points per second (burst %d) is spent", g.lim.PointsPerSecond, g.lim.PointsBurst)
	e := domain.LimitExceeded(domain.KindRateLimited, LimitReadPoints,
		"%s: this operation costs %d; retry in %s", what, min(max(cost, 1), g.lim.PointsBurst), d.Round(time.Millisecond))
	// Until its Retry-After every request of who is refused, cheaper ones
	// too (as GitHub's secondary limits do): a client told when to come
	// back and coming back sooner is answered without its request being
	// decoded. A dearer request of who refused at the same moment may hold
	// it longer: the answer says until when.
	e.RetryAfter = max(d, g.hold(who, d, LimitReadPoints, what))
	return e
}

// hold refuses who's requests for d (Held), counted and answered as a
// refusal by limit; it returns how long who is held (longer than d when
// an earlier refusal held it longer).
func (g *Gate) hold(who string, d time.Duration, limit, what string) time.Duration {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.heldSwept) >= budget.SweepEvery {
		// The map holds the principals refused within a minute (plus
		// their Retry-After), not every one ever refused.
		g.heldSwept = now
		for k, h := range g.held {
			if !now.Before(h.until) {
				delete(g.held, k)
			}
		}
	}
	h, ok := g.held[who]
	if !ok || h.until.Before(now.Add(d)) {
		h = hold{until: now.Add(d), limit: limit, what: what}
		g.held[who] = h
	}
	return h.until.Sub(now)
}

// Held refuses a principal that was refused by its own budget (points,
// run time) and is back before it could be admitted: Retry-After is the
// rest of its wait. It takes nothing and reads nothing, so the HTTP
// adapter calls it before reading the request; Enter calls it first too.
func (g *Gate) Held(who string) error {
	if g == nil {
		return nil
	}
	now := time.Now()
	g.mu.Lock()
	h, ok := g.held[who]
	if ok && !now.Before(h.until) {
		delete(g.held, who)
		ok = false
	}
	g.mu.Unlock()
	if !ok {
		return nil
	}
	d := h.until.Sub(now)
	g.refused(h.limit)
	e := domain.LimitExceeded(domain.KindRateLimited, h.limit, "%s; this principal was refused and came back early: retry in %s",
		h.what, d.Round(time.Millisecond))
	e.RetryAfter = d
	return e
}

// Charge takes n more points from who's budget without refusing: what an
// admitted operation turned out to cost beyond its price at Enter (the
// steps of the threads it reads). The next operations wait for them. A
// bucket the sweep dropped while the operation ran (it refilled meanwhile:
// a dropped bucket is a full one) is made again, so the points are still
// charged.
func (g *Gate) Charge(who string, n int) {
	if g == nil {
		return
	}
	g.points.Charge(who, n, time.Now())
}

// busy is the refusal of a read that found no place in time: the
// caller's own end (cancelled, past its deadline) is reported as such.
func (g *Gate) busy(ctx context.Context, limit, format string, args ...any) error {
	if err := ctx.Err(); err != nil {
		return &domain.Error{Kind: domain.KindUnavailable, Code: domain.CodeUnavailable, Message: "the request was cancelled or timed out", Err: err}
	}
	g.refused(limit)
	e := domain.LimitExceeded(domain.KindRateLimited, limit, format+"; retry later", args...)
	e.RetryAfter = time.Second
	return e
}

func (g *Gate) slots(who string) *principalSlots {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.mine[who]
	if s == nil {
		s = &principalSlots{ch: make(chan struct{}, g.lim.MaxConcurrentPerPrincipal)}
		g.mine[who] = s
	}
	s.users++
	return s
}

func (g *Gate) drop(who string, s *principalSlots) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(g.mine, who)
	}
}

// Running reports the reads holding a place (for tests and gauges).
func (g *Gate) Running() int {
	if g == nil {
		return 0
	}
	return len(g.all)
}
