package domain

// MaxQueryComplexity is the largest cost a GraphQL operation may have.
const MaxQueryComplexity = 1000

// costCeiling saturates cost arithmetic so a hostile query (nested lists with
// huge limits) cannot overflow int and wrap around to a small, accepted cost.
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
)

// Hard caps on lists that take no size argument.
const (
	MaxStepsPerThread = 100 // Thread.steps returns at most this many step states
	MaxChainThreads   = 50  // threadChain returns at most this many threads
	MaxChainDepth     = 10  // threadChain maxDepth is 1..10
	DefaultChainDepth = 3
)

// CostField is one field of an operation, after fragments are inlined and
// variables substituted. It is transport-neutral: the GraphQL adapter converts
// its parsed document into this shape.
type CostField struct {
	Parent string // the type owning the field, e.g. "Thread"
	Name   string // the field name (not the alias)
	List   bool   // the field returns a list
	// Ints holds the integer arguments that were given (variables resolved).
	// Input-object fields are addressed with a dot: "options.limit". An
	// argument given as null is absent.
	Ints     map[string]int
	Children []CostField
}

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
}

// CostModel prices an operation: every field costs 1 point, and the cost of
// a list field's children is multiplied by the list's size. Nested lists
// therefore multiply by every enclosing list's size.
type CostModel struct {
	Limit int
	// Lists maps "Type.field" to its sizing. List fields not listed are
	// charged DefaultListSize items.
	Lists           map[string]ListSizing
	DefaultListSize int
	// Flat names fields whose whole subtree costs 1 point per field with no
	// list multiplication (introspection: the schema is small and static).
	Flat map[string]bool
}

// QueryCostModel is the engine's published cost model (README, "GraphQL query API").
var QueryCostModel = CostModel{
	Limit:           MaxQueryComplexity,
	DefaultListSize: 10,
	Lists: map[string]ListSizing{
		"ThreadConnection.threads":         {Arg: "limit", FromParent: true, Size: ThreadsPage},
		"Query.threadChain":                {Size: PageSize{Default: MaxChainThreads, Max: MaxChainThreads}},
		"Thread.threadChain":               {Size: PageSize{Default: MaxChainThreads, Max: MaxChainThreads}},
		"Query.stepHistory":                {Arg: "limit", Size: HistoryPage},
		"StepStateInfo.history":            {Arg: "limit", Size: HistoryPage},
		"Query.validationResults":          {Arg: "limit", Size: ValidationsPage},
		"Thread.validationResults":         {Arg: "options.limit", Size: ValidationsPage},
		"Thread.notifications":             {Arg: "options.limit", Size: NotificationsPage},
		"Thread.steps":                     {Size: PageSize{Default: 2}},
		"StepStateInfo.subSteps":           {Size: PageSize{Default: 10}},
		"ValidationResultInfo.validations": {Size: PageSize{Default: 3}},
		"Graph.nodes":                      {Size: PageSize{Default: 20}},
		"ContractGraph.transitions":        {Size: PageSize{Default: 20}},
	},
	Flat: map[string]bool{"Query.__schema": true, "Query.__type": true},
}

// Cost returns the cost of an operation's top-level fields.
func (m CostModel) Cost(fields []CostField) int {
	return m.cost(fields, nil)
}

// Check returns the cost and, when it exceeds the limit, the error clients
// receive (HTTP 422, code COMPLEXITY_LIMIT_EXCEEDED).
func (m CostModel) Check(fields []CostField) (int, error) {
	c := m.Cost(fields)
	if c > m.Limit {
		return c, ComplexityExceeded(c, m.Limit)
	}
	return c, nil
}

// ComplexityExceeded is the refusal of an operation costing more than limit.
func ComplexityExceeded(cost, limit int) *Error {
	e := E(KindUnprocessable, CodeComplexityLimitExceeded,
		"operation has complexity %d, which exceeds the limit of %d", cost, limit)
	e.Details = map[string]any{"complexity": cost, "limit": limit}
	return e
}

func (m CostModel) cost(fields []CostField, parent *CostField) int {
	total := 0
	for i := range fields {
		f := &fields[i]
		key := f.Parent + "." + f.Name
		if m.Flat[key] {
			total = satAdd(total, countFields(f))
			continue
		}
		c := 1
		if len(f.Children) > 0 {
			children := m.cost(f.Children, f)
			if f.List {
				children = satMul(children, m.listSize(key, f, parent))
			}
			c = satAdd(c, children)
		}
		total = satAdd(total, c)
	}
	return total
}

func (m CostModel) listSize(key string, f, parent *CostField) int {
	s, ok := m.Lists[key]
	if !ok {
		return m.DefaultListSize
	}
	src := f
	if s.FromParent {
		src = parent
	}
	if s.Arg != "" && src != nil {
		if v, ok := src.Ints[s.Arg]; ok {
			return s.Size.Effective(&v)
		}
	}
	return s.Size.Effective(nil)
}

func countFields(f *CostField) int {
	n := 1
	for i := range f.Children {
		n = satAdd(n, countFields(&f.Children[i]))
	}
	return n
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
