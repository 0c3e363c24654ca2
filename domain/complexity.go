package domain

// MaxQueryComplexity is the largest cost a GraphQL operation may have.
const MaxQueryComplexity = 1000

// costCeiling saturates cost arithmetic so a hostile query (nested lists with
// huge limits, fragments spread exponentially) cannot overflow int and wrap
// around to a small, accepted cost.
const costCeiling = 1 << 40

// PageSize is how a list is sized: the value a caller asked for, clamped. The
// same rule serves the resolvers (how many rows to read) and the complexity
// calculator (how many items to charge for), so the charge matches the read.
type PageSize struct {
	Default int // used when the argument is absent, null or ≤ 0
	Max     int // larger values are clamped to this
}

// Effective returns the number of items a request for v yields.
func (p PageSize) Effective(v *int) int {
	if v == nil || *v <= 0 {
		return p.Default
	}
	if p.Max > 0 && *v > p.Max {
		return p.Max
	}
	return *v
}

// Page sizes of the query API (reference limits.go: threads 100, history
// 1000, validations 100).
var (
	ThreadsPage       = PageSize{Default: 50, Max: 100}
	HistoryPage       = PageSize{Default: 100, Max: 1000}
	ValidationsPage   = PageSize{Default: 10, Max: 100}
	NotificationsPage = PageSize{Default: 10, Max: 100}
	// StepsPage sizes Thread.steps (limit, offset): a page of step states.
	StepsPage = PageSize{Default: MaxStepsPerThread, Max: MaxStepsPerThread}
	// AttemptsPage sizes Thread.attempts (limit, offset): attempts in chain order.
	AttemptsPage = PageSize{Default: 50, Max: 200}
)

// Hard caps on lists that take no size argument.
const (
	MaxStepsPerThread = 100 // Thread.steps returns at most this many step states
	MaxChainThreads   = 50  // threadChain returns at most this many threads
	MaxProcessItems   = 100 // processMap returns at most this many nodes and edges
	MaxStepGroups     = 100 // Thread.stepGroups and Thread.stepEdges return at most this many
	MaxChainDepth     = 10  // threadChain maxDepth is 1..10
	DefaultChainDepth = 3
)

// Hash-chain verification reads and hashes every recorded step of a thread,
// so it is priced by the thread's step count: one point per
// VerifyStepsPerPoint steps (at least one point per thread verified).
// MaxVerifiedStepsPerRequest is the runtime budget behind that price: the
// steps one request may verify in total, which also bounds the threads whose
// size is not known when the operation is priced (those reached through
// Thread.threadChain).
const (
	VerifyStepsPerPoint        = 10
	MaxVerifiedStepsPerRequest = VerifyStepsPerPoint * MaxQueryComplexity
)

// CostField is one field of an operation with its variables substituted. It
// is transport-neutral: the GraphQL adapter converts its parsed document into
// this shape.
type CostField struct {
	Parent string // the type owning the field, e.g. "Thread"
	Name   string // the field name (not the alias)
	List   bool   // the field returns a list
	// Ints holds the integer arguments that were given (variables resolved).
	// Input-object fields are addressed with a dot: "options.limit". An
	// argument given as null is absent.
	Ints map[string]int
	// Given names the arguments given a non-null value, whatever their type.
	Given []string
	// Enums holds the enum arguments that were given (variables resolved),
	// by name: what a sort argument asks the database to do.
	Enums map[string]string
	// Children is the field's selection set; nil for a leaf.
	Children *CostSet
	// Returned, when set, is how many items the list returned when it was
	// read while pricing (the adapter serves those same items): it is
	// charged that many, never more than its sizing allows.
	Returned *int

	rule *fieldRule // set by CostModel.Bind: the rules for Parent.Name
}

// CostSet is a selection set. Fragments are not copied into the sets that
// spread them: a fragment is one CostSet referenced from every spread, so an
// operation is a graph no larger than its document and its cost is computed
// once per set (memoised), however many times fragments expand.
type CostSet struct {
	Fields []CostField
	Sets   []*CostSet // spread fragments and inline fragments
	// Shared marks a set referenced from more than one place (a fragment):
	// its price is memoised. Other sets are priced once per pricing of the
	// set holding them.
	Shared bool
}

// ListBound ties a list's size to the data of the thread it belongs to.
type ListBound uint8

const (
	// Unbounded lists are charged their size argument (or default).
	Unbounded ListBound = iota
	// PerStep lists return at most one item per step recorded on the
	// thread (Thread.validationResults).
	PerStep
	// StepList is Thread.steps: at most one step state per recorded step;
	// StepShare lists below it share its size.
	StepList
	// StepShare lists hold, together over every item of the enclosing
	// Thread.steps, at most the thread's recorded steps (each attempt
	// belongs to one step identity): StepStateInfo.history.
	StepShare
)

// ListSizing tells how many items a list field is charged for.
type ListSizing struct {
	// Arg names the integer argument that sets the size ("limit",
	// "options.limit"); empty when the list has no size argument.
	Arg string
	// FromParent reads Arg from the parent field instead: a connection's
	// items are sized by the limit given to the query field that returned it.
	FromParent bool
	// Size applies Default and Max to the argument. Without an argument the
	// list is charged Size.Default items.
	Size PageSize
	// Bound caps the size by the thread's recorded steps once they are known.
	Bound ListBound
	// One names arguments that, all given, select at most one item (a step
	// identity: stepName and idempotencyKey).
	One []string
}

// FieldKey names a field of a type.
type FieldKey struct{ Type, Field string }

// CostModel prices an operation: every field costs 1 point, and the cost of
// a list field's children is multiplied by the list's size. Nested lists
// therefore multiply by every enclosing list's size. Every list is charged at
// least one item, so an operation costs at least as many points as it has
// fields once its fragments are expanded: the limit also caps the expanded
// selections.
//
// Lists inside a thread whose size depends on the thread's data (its steps,
// their attempts, its validation results, the hash-chain verification) are
// priced twice: before anything is read, at one item each (Price with no
// reads); then, once the query's root fields have read their thread rows and
// pages (ThreadsRead) and before any nested data is loaded, by the step count
// of each thread read. Threads reached through Thread.threadChain are never
// read before execution and are charged the upper bounds.
type CostModel struct {
	Limit int
	// Lists maps a list field to its sizing. Lists not listed are charged
	// DefaultListSize items.
	Lists           map[FieldKey]ListSizing
	DefaultListSize int
	// Threads names the fields whose items are threads.
	Threads map[FieldKey]bool
	// Verify names the Thread (and step) fields that need the thread's hash
	// chain verified: VerifyCost is charged once per thread that selects any.
	Verify map[FieldKey]bool
	// VerifyRoot names the root fields verifying the thread their argument
	// names: charged VerifyCost of that thread.
	VerifyRoot map[FieldKey]bool
	// PerPoint names fields whose whole selection is charged one point per
	// this many values: introspection, which reads nothing (the schema is in
	// memory) and costs what it writes.
	PerPoint map[FieldKey]int
	// Work prices what a field costs the database beyond the rows it
	// returns: counting every match, sorting every match, skipping rows.
	Work map[FieldKey]DBWork
	// PerRow prices an operation by the rows it returns instead of by the
	// fields it selects: an object or a list item costs one point whatever
	// scalar fields it selects, a scalar costs nothing, a list costs its
	// items; Work is charged as usual. The handler applies it only to the
	// published SDKs' fixed documents (docs/integrators/graphql.md).
	PerRow bool

	rules map[FieldKey]*fieldRule // the maps above in one, built by Compiled
}

// fieldRule is everything the model says about one field.
type fieldRule struct {
	list                   ListSizing
	listed, thread, verify bool
	verifyRoot, stepList   bool
	perPoint               int
	work                   DBWork
}

// DBWork is the price of a field's database work beyond the rows it returns.
type DBWork struct {
	// Points are charged every time the field is priced (totalCount counts
	// every thread matching the filters, however few are returned).
	Points int
	// SortArg names the enum argument choosing a sort; a value not in
	// SortFree (served by an index) costs SortPoints: every match is read
	// and sorted before the first row is returned.
	SortArg    string
	SortFree   []string
	SortPoints int
	// OffsetArg names the argument of rows skipped before the page; each
	// OffsetRowsPerPoint rows skipped (rounded up) cost one point, so a deep
	// offset costs what reading up to it costs.
	OffsetArg string
}

// OffsetRowsPerPoint is how many rows a deep offset skips per point.
const OffsetRowsPerPoint = 100

// Points of the database work priced by QueryCostModel.Work.
const (
	CountPoints = 25 // ThreadConnection.totalCount: a count of every match
	SortPoints  = 25 // a sort no index serves: every match read and sorted
)

// cost is the price of w for field f.
func (w DBWork) cost(f *CostField) int {
	c := w.Points
	if w.SortArg != "" {
		if v, ok := f.Enums[w.SortArg]; ok && !slicesContains(w.SortFree, v) {
			c = satAdd(c, w.SortPoints)
		}
	}
	if w.OffsetArg != "" {
		if n := f.Ints[w.OffsetArg]; n > 0 {
			c = satAdd(c, (n+OffsetRowsPerPoint-1)/OffsetRowsPerPoint)
		}
	}
	return c
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Compiled returns the model with its rules merged into one table, so
// pricing looks each field up once. Price compiles an uncompiled model on
// every call.
func (m CostModel) Compiled() CostModel {
	r := map[FieldKey]fieldRule{}
	get := func(k FieldKey) fieldRule { return r[k] }

	for k, v := range m.Lists {
		x := get(k)
		x.list, x.listed, x.stepList = v, true, v.Bound == StepList
		r[k] = x
	}
	for k, v := range m.Threads {
		x := get(k)
		x.thread = v
		r[k] = x
	}
	for k, v := range m.Verify {
		x := get(k)
		x.verify = v
		r[k] = x
	}
	for k, v := range m.VerifyRoot {
		x := get(k)
		x.verifyRoot = v
		r[k] = x
	}
	for k, v := range m.PerPoint {
		x := get(k)
		x.perPoint = v
		r[k] = x
	}
	for k, v := range m.Work {
		x := get(k)
		x.work = v
		r[k] = x
	}
	m.rules = make(map[FieldKey]*fieldRule, len(r))
	for k, v := range r {
		m.rules[k] = &v
	}
	return m
}

// Bind looks up the rules for f's field once, so that pricing f (an
// operation's field converted with this compiled model) looks nothing up.
func (m CostModel) Bind(f *CostField) {
	if r := m.rules[FieldKey{f.Parent, f.Name}]; r != nil {
		f.rule = r
	} else {
		f.rule = &noRule
	}
}

var noRule fieldRule

// QueryCostModel is the engine's published cost model
// (docs/integrators/graphql.md, "Cost limit").
var QueryCostModel = CostModel{
	Limit:           MaxQueryComplexity,
	DefaultListSize: 10,
	Lists: map[FieldKey]ListSizing{
		{"ThreadConnection", "threads"}:         {Arg: "limit", FromParent: true, Size: ThreadsPage},
		{"Query", "threadChain"}:                {Size: PageSize{Default: MaxChainThreads, Max: MaxChainThreads}},
		{"Thread", "threadChain"}:               {Size: PageSize{Default: MaxChainThreads, Max: MaxChainThreads}},
		{"Query", "stepHistory"}:                {Arg: "limit", Size: HistoryPage},
		{"StepStateInfo", "history"}:            {Arg: "limit", Size: HistoryPage, Bound: StepShare},
		{"Query", "validationResults"}:          {Arg: "limit", Size: ValidationsPage},
		{"Thread", "validationResults"}:         {Arg: "options.limit", Size: ValidationsPage, Bound: PerStep},
		{"Thread", "notifications"}:             {Arg: "options.limit", Size: NotificationsPage},
		{"Thread", "steps"}:                     {Arg: "limit", Size: StepsPage, Bound: StepList, One: []string{"stepName", "idempotencyKey"}},
		{"Thread", "attempts"}:                  {Arg: "limit", Size: AttemptsPage, Bound: PerStep},
		{"Thread", "stepGroups"}:                {Size: PageSize{Default: MaxStepGroups, Max: MaxStepGroups}, Bound: PerStep},
		{"Thread", "linkedFrom"}:                {Size: PageSize{Default: MaxChainThreads, Max: MaxChainThreads}},
		{"Query", "resolveActors"}:              {Size: PageSize{Default: 100, Max: 100}},
		{"Query", "contractStats"}:              {Size: PageSize{Default: 20}},
		{"Query", "stepStats"}:                  {Size: PageSize{Default: 20}},
		{"Overview", "hours"}:                   {Size: PageSize{Default: 168}},
		{"ProblemReport", "groups"}:             {Size: PageSize{Default: 50}},
		{"ProblemReport", "buckets"}:            {Size: PageSize{Default: 12}},
		{"ProblemGroup", "trend"}:               {Size: PageSize{Default: 12}},
		{"ProcessMap", "nodes"}:                 {Size: PageSize{Default: MaxProcessItems}},
		{"ProcessMap", "edges"}:                 {Size: PageSize{Default: MaxProcessItems}},
		{"ProcessMap", "neverReached"}:          {Size: PageSize{Default: MaxProcessItems}},
		{"ContractChange", "details"}:           {Size: PageSize{Default: 7}},
		{"Overview", "steps"}:                   {Arg: "limit", FromParent: true, Size: PageSize{Default: 10, Max: 50}},
		{"StepStateInfo", "subSteps"}:           {Size: PageSize{Default: 10}},
		{"ValidationResultInfo", "validations"}: {Size: PageSize{Default: 3}},
		{"Graph", "nodes"}:                      {Size: PageSize{Default: 20}},
		{"ContractGraph", "transitions"}:        {Size: PageSize{Default: 20}},
	},
	Threads: map[FieldKey]bool{
		{"Query", "thread"}: true, {"Query", "threadChain"}: true,
		{"ThreadConnection", "threads"}: true, {"Thread", "threadChain"}: true, {"Thread", "linkedFrom"}: true,
	},
	Verify: map[FieldKey]bool{
		{"Thread", "hashChainVerified"}: true, {"Thread", "hashChainStatus"}: true,
		{"StepStateInfo", "verified"}: true, {"StepStateInfo", "verificationError"}: true,
	},
	VerifyRoot: map[FieldKey]bool{{"Query", "verifyThreadIntegrity"}: true},
	PerPoint:   map[FieldKey]int{{"Query", "__schema"}: 10, {"Query", "__type"}: 10},
	Work: map[FieldKey]DBWork{
		{"ThreadConnection", "totalCount"}: {Points: CountPoints},
		// The same bounded count (run once for both fields when both are selected).
		{"ThreadConnection", "totalCountIsExact"}: {Points: CountPoints},
		{"Query", "threads"}:                      {SortArg: "orderBy", SortFree: []string{"STARTED_AT"}, SortPoints: SortPoints, OffsetArg: "offset"},
		{"Query", "threadsByContract"}:            {OffsetArg: "offset"},
		{"Query", "threadsByRef"}:                 {OffsetArg: "offset"},
		{"Query", "stepHistory"}:                  {OffsetArg: "offset"},
		{"Thread", "steps"}:                       {OffsetArg: "offset"},
		{"Thread", "attempts"}:                    {OffsetArg: "offset"},
		{"StepStateInfo", "history"}:              {OffsetArg: "offset"},
		{"Thread", "validationResults"}:           {OffsetArg: "options.offset"},
		{"Thread", "notifications"}:               {OffsetArg: "options.offset"},
	},
}

// ThreadsRead holds, for root fields that read threads (by id, a page or a
// chain), the step count of every thread they read.
type ThreadsRead map[*CostField][]int

// Step counts of a thread not (yet) read.
const (
	stepsOutside = -1 // not inside a thread
	stepsLater   = -2 // read before execution: charged one item until then
	stepsUnknown = -3 // never read before execution: upper bounds
)

// VerifyCost is the price of verifying the hash chain of a thread with
// steps recorded steps (negative: not known, one point).
func (m CostModel) VerifyCost(steps int) int {
	if steps <= VerifyStepsPerPoint {
		return 1
	}
	return (steps + VerifyStepsPerPoint - 1) / VerifyStepsPerPoint
}

// Price returns the cost of an operation whose top-level selection set is
// root. Without reads every data-dependent list inside a thread is charged
// one item; with reads the threads read are charged by their step counts.
// The time taken is linear in the size of the graph whatever its expansion.
func (m CostModel) Price(root *CostSet, reads ThreadsRead) int {
	if m.rules == nil {
		m = m.Compiled()
	}
	p := pricer{m: &m, reads: reads}
	return p.set(root, costCtx{steps: stepsOutside, parentLimit: -1})
}

// PriceStatic returns the price of root before anything is read, and whether
// the step counts of the threads its root fields read would change it (if
// not, nothing needs reading before execution).
func (m CostModel) PriceStatic(root *CostSet) (cost int, readsMatter bool) {
	if m.rules == nil {
		m = m.Compiled()
	}
	p := pricer{m: &m}
	cost = p.set(root, costCtx{steps: stepsOutside, parentLimit: -1})
	return cost, p.later
}

// Check returns the refusal of an operation costing more than the limit
// (HTTP 422, code COMPLEXITY_LIMIT_EXCEEDED), or nil.
func (m CostModel) Check(cost int) error {
	if cost > m.Limit {
		return ComplexityExceeded(cost, m.Limit)
	}
	return nil
}

// ComplexityExceeded is the refusal of an operation costing more than limit.
func ComplexityExceeded(cost, limit int) *Error {
	return E(KindUnprocessable, CodeComplexityLimitExceeded,
		"operation has complexity %d, which exceeds the limit of %d", cost, limit).
		WithDetail("complexity", cost).WithDetail("limit", limit)
}

// ComplexityExceededByThreads is the refusal of an operation that fit the
// limit until the threads it reads were counted: it says how to read less.
func ComplexityExceededByThreads(cost, limit int) *Error {
	e := ComplexityExceeded(cost, limit)
	e.Message += "; the threads read hold too many steps for this selection: select fewer step fields, " +
		"filter steps with stepName and idempotencyKey, or page through a step's attempts with " +
		"stepHistory(threadId, stepName, limit, offset)"
	return e
}

// VerificationBudgetExceeded refuses a verification that would take the
// request past MaxVerifiedStepsPerRequest.
func VerificationBudgetExceeded(steps int) *Error {
	e := E(KindUnprocessable, CodeComplexityLimitExceeded,
		"verifying %d more steps would exceed the budget of %d verified steps per request; "+
			"verify one thread at a time with verifyThreadIntegrity", steps, MaxVerifiedStepsPerRequest)
	e.Details = map[string]any{"limit": MaxVerifiedStepsPerRequest}
	return e
}

type costCtx struct {
	steps       int // the enclosing thread's step count, or stepsOutside/Later/Unknown
	parentLimit int // the enclosing field's "limit" argument, -1 when absent
	stepItems   int // the size charged for the enclosing Thread.steps
	page        int // 1 + index into pricer.pages of the threads read by the enclosing connection; 0 none
}

type memoKey struct {
	set *CostSet
	ctx costCtx
}

type pricer struct {
	m      *CostModel
	reads  ThreadsRead
	pages  [][]int
	memo   map[memoKey]int
	verify map[*CostSet]bool
	later  bool // a size or price depended on a thread read later
}

func (p *pricer) set(s *CostSet, ctx costCtx) int {
	if s == nil {
		return 0
	}
	k := memoKey{s, ctx}
	if s.Shared {
		if v, ok := p.memo[k]; ok {
			return v // also breaks cycles, which the adapter does not build
		}
		if p.memo == nil {
			p.memo = map[memoKey]int{}
		}
		p.memo[k] = 0
	}
	total := 0
	for i := range s.Fields {
		total = satAdd(total, p.field(&s.Fields[i], ctx))
	}
	for _, sub := range s.Sets {
		total = satAdd(total, p.set(sub, ctx))
	}
	if s.Shared {
		p.memo[k] = total
	}
	return total
}

func (p *pricer) field(f *CostField, ctx costCtx) int {
	rule := p.rule(f)
	if d := rule.perPoint; d > 1 {
		c := p.fieldCost(rule, f, ctx)
		return c/d + min(1, c%d)
	}
	return p.fieldCost(rule, f, ctx)
}

func (p *pricer) rule(f *CostField) *fieldRule {
	if f.rule != nil {
		return f.rule
	}
	if r := p.m.rules[FieldKey{f.Parent, f.Name}]; r != nil {
		return r
	}
	return &noRule
}

func (p *pricer) fieldCost(rule *fieldRule, f *CostField, ctx costCtx) int {
	return satAdd(p.shapeCost(rule, f, ctx), rule.work.cost(f))
}

// shapeCost is a field's price by what it returns: its fields (or, PerRow,
// its rows) and its lists' items.
func (p *pricer) shapeCost(rule *fieldRule, f *CostField, ctx costCtx) int {
	// own is what the field itself costs, item what each item of a list
	// costs on top of its selection: 1 and 0 by fields; by rows a scalar
	// and a list cost nothing of their own, an object and a list item one.
	own, item := 1, 0
	if p.m.PerRow {
		own, item = 0, 1
		if f.Children != nil && !f.List {
			own = 1
		}
	}
	c := own
	reads, read := p.reads[f]
	if rule.verifyRoot {
		n := stepsLater
		if read && len(reads) == 1 {
			n = reads[0]
		}
		p.later = p.later || n == stepsLater
		c = satAdd(c, p.m.VerifyCost(n))
	}
	if f.Children == nil {
		return c
	}
	if rule.thread {
		size := 1
		if f.List {
			size = p.listSize(rule, f, ctx)
		}
		inner := stepsUnknown
		if ctx.steps == stepsOutside {
			inner = stepsLater
		}
		base := p.thread(f.Children, inner)
		if !f.List {
			item = 0 // the one thread is the field's own row
		}
		c = satAdd(c, satMul(size, satAdd(item, base)))
		if !read && ctx.page > 0 {
			reads, read = p.pages[ctx.page-1], true
		}
		if read && inner == stepsLater {
			for _, n := range reads {
				c = satAdd(c, p.thread(f.Children, n)-base)
			}
		}
		return c
	}
	child := costCtx{steps: ctx.steps, parentLimit: -1, stepItems: ctx.stepItems}
	if v, ok := f.Ints["limit"]; ok {
		child.parentLimit = v
	}
	if read && !rule.verifyRoot {
		// A connection: its threads list charges what the page read.
		p.pages = append(p.pages, reads)
		child.page = len(p.pages)
	}
	if !f.List {
		return satAdd(c, p.set(f.Children, child))
	}
	size := p.listSize(rule, f, ctx)
	if rule.stepList {
		child.stepItems = size
	}
	return satAdd(c, satMul(size, satAdd(item, p.set(f.Children, child))))
}

// thread prices one thread's selection set with steps recorded steps,
// verification included.
func (p *pricer) thread(s *CostSet, steps int) int {
	c := p.set(s, costCtx{steps: steps, parentLimit: -1})
	if p.needsVerify(s) {
		p.later = p.later || steps == stepsLater
		c = satAdd(c, p.m.VerifyCost(steps))
	}
	return c
}

// needsVerify reports whether a thread's selection set selects a field that
// needs its hash chain verified (threads nested in it are their own).
func (p *pricer) needsVerify(s *CostSet) bool {
	if v, ok := p.verify[s]; ok {
		return v
	}
	if p.verify == nil {
		p.verify = map[*CostSet]bool{}
	}
	p.verify[s] = false
	v := false
	for i := range s.Fields {
		f := &s.Fields[i]
		rule := p.rule(f)
		if rule.verify || (f.Children != nil && !rule.thread && p.needsVerify(f.Children)) {
			v = true
			break
		}
	}
	for _, sub := range s.Sets {
		if v {
			break
		}
		v = p.needsVerify(sub)
	}
	p.verify[s] = v
	return v
}

func (p *pricer) listSize(rule *fieldRule, f *CostField, ctx costCtx) int {
	if !rule.listed {
		return max(1, p.m.DefaultListSize)
	}
	s := &rule.list
	size := s.Size.Effective(nil)
	if s.Arg != "" {
		v, ok := f.Ints[s.Arg]
		if s.FromParent {
			v, ok = ctx.parentLimit, ctx.parentLimit != -1
		}
		if ok {
			size = s.Size.Effective(&v)
		}
	}
	if len(s.One) > 0 && given(f, s.One) {
		size = 1
	}
	switch n := ctx.steps; s.Bound {
	case PerStep, StepList:
		switch {
		case n >= 0:
			size = min(size, n)
		case n == stepsLater:
			p.later = p.later || size > 1
			size = 1
		}
	case StepShare:
		switch {
		case n >= 0:
			share := (n + max(1, ctx.stepItems) - 1) / max(1, ctx.stepItems)
			size = min(size, share)
		case n == stepsLater:
			p.later = p.later || size > 1
			size = 1
		}
	}
	if f.Returned != nil {
		size = min(size, *f.Returned)
	}
	return max(1, size)
}

func given(f *CostField, names []string) bool {
	for _, n := range names {
		found := false
		for _, g := range f.Given {
			if g == n {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func satAdd(a, b int) int {
	if a+b > costCeiling {
		return costCeiling
	}
	return a + b
}

func satMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > costCeiling/b {
		return costCeiling
	}
	return a * b
}
