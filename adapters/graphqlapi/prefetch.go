package graphqlapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Pricing what is read: after the static price, the root fields whose price
// depends on their threads' step counts (thread, the thread lists,
// threadChain, verifyThreadIntegrity) read their thread rows or pages here,
// before graph-gophers runs; the operation is priced again with those step
// counts and refused (422) before any nested data is loaded. The root
// resolvers then serve what was read instead of reading it again.

// request is the per-request state the resolvers share: the rows read while
// pricing and the hash-chain verification budget.
type request struct {
	threads    map[string]*ports.ThreadView // by id; nil: does not exist
	threadsErr error
	pages      map[string]pageRead
	chains     map[string]chainRead
	steps      map[string]map[string][]ports.StepView // by thread id + "\x00" + stepsKey
	verifyLeft atomic.Int64
	priced     bool // the data-dependent roots were read while pricing
}

type pageRead struct {
	page readmodel.ThreadPage
	err  error
}

type chainRead struct {
	threads []ports.ThreadView
	err     error
}

type requestKey struct{}

func withRequest(ctx context.Context, r *request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

func requestOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// chargeVerify takes steps from the request's verification budget.
func chargeVerify(ctx context.Context, steps int) error {
	r := requestOf(ctx)
	if r == nil || steps <= 0 {
		return nil
	}
	if r.verifyLeft.Add(-int64(steps)) < 0 {
		return domain.VerificationBudgetExceeded(steps)
	}
	return nil
}

// readRoots reads the rows of the data-dependent root fields and returns
// their threads' step counts for pricing. A read that fails is kept: its
// resolver returns the same error rather than reading unpriced data.
func (h *Handler) readRoots(ctx context.Context, roots []rootField, c *costConv, r *request) domain.ThreadsRead {
	type pending struct {
		f   *domain.CostField
		ids []string
	}
	var byID []pending
	var ids []string
	reads := domain.ThreadsRead{}
	for _, rf := range roots {
		switch rf.sel.name {
		case "thread", "verifyThreadIntegrity", "threads", "threadsByContract", "threadsByRef", "threadChain":
		default:
			continue
		}
		args := c.args(rf.sel)
		switch rf.sel.name {
		case "thread", "verifyThreadIntegrity":
			name := "id"
			if rf.sel.name == "verifyThreadIntegrity" {
				name = "threadId"
			}
			id, ok := args.id(name)
			if !ok {
				continue
			}
			byID = append(byID, pending{rf.f, []string{id}})
			if _, dup := r.threads[id]; !dup {
				r.threads[id] = nil
				ids = append(ids, id)
			}
		case "threads", "threadsByContract", "threadsByRef":
			s, err, ok := searchOf(rf.sel.name, args)
			if !ok {
				continue
			}
			key := searchKey(s)
			pr, done := r.pages[key]
			if !done {
				if err == nil {
					pr.page, pr.err = h.queries.Search.Handle(ctx, s)
				} else {
					pr.err = err
				}
				r.pages[key] = pr
			}
			reads[rf.f] = stepCounts(pr.page.Threads)
		case "threadChain":
			root, ok := args.id("rootId")
			depth, ok2 := args.i32("maxDepth")
			if !ok || !ok2 {
				continue
			}
			key := chainKey(root, depth)
			cr, done := r.chains[key]
			if !done {
				m, err := h.queries.Chains.Handle(ctx, []string{root}, i32(depth))
				cr = chainRead{threads: m[root], err: err}
				r.chains[key] = cr
			}
			reads[rf.f] = stepCounts(cr.threads)
		}
	}
	if len(ids) > 0 {
		rows, err := h.queries.Threads.Handle(ctx, ids)
		r.threadsErr = err
		for i := range rows {
			r.threads[rows[i].ID] = &rows[i]
		}
		for _, p := range byID {
			if t := r.threads[p.ids[0]]; t != nil {
				reads[p.f] = []int{t.StepCount}
			} else {
				reads[p.f] = nil
			}
		}
	}
	return reads
}

func stepCounts(ts []ports.ThreadView) []int {
	out := make([]int, len(ts))
	for i := range ts {
		out[i] = ts[i].StepCount
	}
	return out
}

func chainKey(root string, depth *int32) string {
	return fmt.Sprintf("%q|%d", root, deref32(i32(depth)))
}

// searchKey identifies a thread search: the resolvers look their page up by it.
func searchKey(s readmodel.ThreadSearch) string {
	return fmt.Sprintf("%q|%q|%d|%q|%q|%q|%q|%q|%q|%q|%q|%q|%q|%q|%t|%d|%d|%q|%q|%q|%q", s.Actor, s.ContractName, deref32(s.ContractVersion),
		s.Status, s.StartedAfter, s.StartedBefore, s.CompletedAfter, s.CompletedBefore, s.RefKey, s.RefValue,
		fmt.Sprint(s.Health), s.Tag, s.IDPrefix, s.OrderBy, s.Ascending, deref32(s.Limit), deref32(s.Offset), s.After, s.Before, s.IssueType, s.IssueStep)
}

// searchOf builds the search a thread-list root field runs, as its resolver
// does: the arguments are decoded into the resolver's own argument struct
// (so a filter added there is read here too); ok is false when an argument
// has a type graph-gophers will refuse.
func searchOf(field string, a argMap) (readmodel.ThreadSearch, error, bool) {
	b, err := json.Marshal(a)
	if err != nil {
		return readmodel.ThreadSearch{}, nil, false
	}
	decode := func(dst any) bool {
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		return d.Decode(dst) == nil
	}
	switch field {
	case "threads":
		var args threadsArgs
		if !decode(&args) {
			return readmodel.ThreadSearch{}, nil, false
		}
		s, err := args.search()
		return s, err, true
	case "threadsByContract":
		var args byContractArgs
		if !decode(&args) {
			return readmodel.ThreadSearch{}, nil, false
		}
		s, err := args.search()
		return s, err, true
	case "threadsByRef":
		var args byRefArgs
		if !decode(&args) {
			return readmodel.ThreadSearch{}, nil, false
		}
		s, err := args.search()
		return s, err, true
	}
	return readmodel.ThreadSearch{}, nil, false
}

// argMap holds a field's argument values, variables resolved, as JSON-like
// Go values (string, float64, bool, nil, []any, map[string]any).
type argMap map[string]any

func (c *costConv) args(s *selection) argMap {
	m := make(argMap, len(s.args))
	for _, a := range s.args {
		m[a.name] = c.valueOf(a.val)
	}
	return m
}

func (c *costConv) valueOf(v value) any {
	switch x := v.(type) {
	case varRef:
		if g, ok := c.vars[string(x)]; ok {
			return g
		}
		if d, ok := c.defaults[string(x)]; ok {
			return c.valueOf(d)
		}
		return nil
	case intVal:
		return float64(x)
	case floatVal:
		return float64(x)
	case strVal:
		return string(x)
	case enumVal:
		return string(x)
	case boolVal:
		return bool(x)
	case listVal:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.valueOf(e)
		}
		return out
	case objVal:
		out := make(map[string]any, len(x))
		for _, a := range x {
			out[a.name] = c.valueOf(a.val)
		}
		return out
	}
	return nil
}

// id returns an ID argument as graph-gophers coerces it (a string or an
// integer); ok is false when it is absent or of another type.
func (a argMap) id(name string) (string, bool) {
	switch v := a[name].(type) {
	case string:
		return v, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), true
		}
	}
	return "", false
}

// i32 returns an Int argument (nil when absent or null); ok is false for a
// value graph-gophers would not coerce to Int.
func (a argMap) i32(name string) (*int32, bool) {
	switch v := a[name].(type) {
	case nil:
		return nil, true
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt32 && v <= math.MaxInt32 {
			n := int32(v)
			return &n, true
		}
	}
	return nil, false
}

// prefetchedThread returns the row read while pricing, if any.
func prefetchedThread(ctx context.Context, id graphql.ID) (t *ports.ThreadView, err error, ok bool) {
	r := requestOf(ctx)
	if r == nil {
		return nil, nil, false
	}
	t, ok = r.threads[string(id)]
	if !ok {
		return nil, nil, false
	}
	return t, r.threadsErr, true
}

func (h *Handler) prefetchedPage(ctx context.Context, s readmodel.ThreadSearch) (pageRead, bool) {
	r := requestOf(ctx)
	if r == nil {
		return pageRead{}, false
	}
	pr, ok := r.pages[searchKey(s)]
	if !ok {
		h.miss(ctx)
	}
	return pr, ok
}

func (h *Handler) prefetchedChain(ctx context.Context, root string, depth *int32) (chainRead, bool) {
	r := requestOf(ctx)
	if r == nil {
		return chainRead{}, false
	}
	cr, ok := r.chains[chainKey(root, depth)]
	if !ok {
		h.miss(ctx)
	}
	return cr, ok
}

// miss records a root resolver that found nothing read for it while pricing
// although its price depends on what it reads.
func (h *Handler) miss(ctx context.Context) {
	if r := requestOf(ctx); r != nil && r.priced {
		h.misses.Add(1)
	}
}

// readStepLists reads, for the SDKs' documents (priced by the rows they
// return), the step states that a thread root's steps(stepName: …) list
// returns, so the list is charged those steps rather than up to every step
// of the thread: the SDKs' subSteps() of a step recorded without an
// idempotency key sends idempotencyKey: null and selects the steps of one
// name (one on a thread of distinct steps). The list's resolver serves
// what was read here. A read that fails leaves the list at its static
// price; its resolver reads (and fails) again.
func (h *Handler) readStepLists(ctx context.Context, roots []rootField, c *costConv, r *request) {
	for _, rf := range roots {
		if rf.sel.name != "thread" || rf.f.Children == nil {
			continue
		}
		id, ok := c.args(rf.sel).id("id")
		if !ok || r.threads[id] == nil {
			continue
		}
		sel, f := stepsChild(rf)
		if sel == nil {
			continue
		}
		a, ok := stepsArgsOf(c.args(sel))
		if !ok || deref(a.StepName) == "" {
			continue
		}
		ss := a.selection()
		m, err := h.queries.Steps.Handle(ctx, []string{id}, ss)
		if err != nil {
			continue
		}
		n := len(m[id])
		f.Returned = &n
		if r.steps == nil {
			r.steps = map[string]map[string][]ports.StepView{}
		}
		r.steps[id+"\x00"+stepsKey(ss)] = m
	}
}

// stepsChild returns the one steps field a thread root selects directly
// (the SDK documents' shape), with its cost field; nil when there is not
// exactly one.
func stepsChild(rf rootField) (*selection, *domain.CostField) {
	var sel *selection
	for _, s := range rf.sel.sel {
		if s.kind != selField || s.name != "steps" {
			continue
		}
		if sel != nil {
			return nil, nil
		}
		sel = s
	}
	var f *domain.CostField
	for i := range rf.f.Children.Fields {
		if cf := &rf.f.Children.Fields[i]; cf.Name == "steps" {
			if f != nil {
				return nil, nil
			}
			f = cf
		}
	}
	if sel == nil || f == nil || len(rf.f.Children.Sets) > 0 {
		return nil, nil
	}
	return sel, f
}

// stepsArgsOf decodes a steps field's arguments as its resolver does.
func stepsArgsOf(a argMap) (stepsArgs, bool) {
	var out stepsArgs
	b, err := json.Marshal(a)
	if err != nil {
		return out, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return out, d.Decode(&out) == nil
}

// prefetchedSteps returns the steps read while pricing for a group of one
// thread, if any.
func prefetchedSteps(ctx context.Context, ids []string, key string) (map[string][]ports.StepView, bool) {
	r := requestOf(ctx)
	if r == nil || len(ids) != 1 {
		return nil, false
	}
	m, ok := r.steps[ids[0]+"\x00"+key]
	return m, ok
}
