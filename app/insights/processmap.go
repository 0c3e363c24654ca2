package insights

import (
	"context"
	"sort"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// MaxProcessMapWindow bounds a process map's window as asked; widening its
// ends to whole hours, and old ends to whole days, reads at most two days
// more (ProcessMapHandler.Handle).
const MaxProcessMapWindow = 400 * 24 * time.Hour

// ProcessNode is a contract step as threads ran it in the window.
type ProcessNode struct {
	Step       string
	Count      int64 // step identities that reached it (first attempts)
	P50, P95   int64 // attempt duration, ms (0: unknown)
	InContract bool  // false: a step the contract does not define
}

// ProcessEdge is a step order threads took in the window.
type ProcessEdge struct {
	From, To string // From "" for a thread's first step
	Count    int64
	P50, P95 int64 // time since the previous activity, ms (0: unknown)
	Allowed  bool  // the contract allows it
	Example  string
}

// ProcessMap is how a contract version's threads really ran.
type ProcessMap struct {
	Contract     domain.Contract
	Since, Until time.Time
	Started      int64 // threads that recorded a first step in the window
	Nodes        []ProcessNode
	Edges        []ProcessEdge
	NeverReached []string // contract steps no thread reached in the window
}

// ContractReader reads contract versions (the process map judges edges
// against one).
type ContractReader interface {
	// GetContract returns one version; version 0 means the latest.
	GetContract(ctx context.Context, name string, version int) (domain.Contract, error)
}

// ProcessMapHandler reads process maps from the roll-up (flat in data size).
type ProcessMapHandler struct {
	store     ports.ProcessMapReads // nil: not found
	contracts ContractReader
	clock     ports.Clock
}

// NewProcessMapHandler builds the process map query (store may be nil).
func NewProcessMapHandler(store ports.ProcessMapReads, contracts ContractReader, clock ports.Clock) ProcessMapHandler {
	return ProcessMapHandler{store: store, contracts: contracts, clock: clock}
}

// Handle returns the process map of a contract version (0: the latest) over
// [from, to) (ISO-8601; defaults: the last 24 hours), widened to whole UTC
// hours, or to whole UTC days for an end more than ports.ProcessMapHourlyKept
// ago; the window asked is at most MaxProcessMapWindow.
func (q ProcessMapHandler) Handle(ctx context.Context, name string, version int, from, to string) (ProcessMap, error) {
	if err := companyWide(ctx); err != nil {
		return ProcessMap{}, err
	}
	if q.store == nil || q.contracts == nil {
		return ProcessMap{}, domain.NotFound("process map")
	}
	f, err := domain.ParseTimeArg("from", from)
	if err != nil {
		return ProcessMap{}, err
	}
	t, err := domain.ParseTimeArg("to", to)
	if err != nil {
		return ProcessMap{}, err
	}
	until := q.clock.Now().UTC()
	if t != nil {
		until = *t
	}
	since := until.Add(-24 * time.Hour)
	if f != nil {
		since = *f
	}
	const day = 24 * time.Hour
	switch {
	case !since.Before(until):
		return ProcessMap{}, domain.Invalid("from", "from must be before to")
	case until.Sub(since) > MaxProcessMapWindow:
		// The limit is on the window asked, as a dashboard's "last 400
		// days" means it: the widening below adds less than a day at each
		// end, so at most 402 days are read.
		return ProcessMap{}, domain.Invalid("from", "the window is at most %d days", int(MaxProcessMapWindow/day))
	}
	since = since.Truncate(time.Hour)
	if u := until.Truncate(time.Hour); !u.Equal(until) {
		until = u.Add(time.Hour)
	}
	// Ends older than the hour rows kept are widened to whole UTC days:
	// those hours are only in the day rows (ports.ProcessMapHourlyKept).
	horizon := ports.ProcessMapHourlyHorizon(q.clock.Now())
	if since.Before(horizon) {
		since = since.Truncate(day)
	}
	if until.Before(horizon) {
		if u := until.Truncate(day); !u.Equal(until) {
			until = u.Add(day)
		}
	}
	c, err := q.contracts.GetContract(ctx, name, version)
	if err != nil {
		return ProcessMap{}, err
	}
	rows, err := q.store.ProcessMapRows(ctx, c.Name, c.Version, since, until)
	if err != nil {
		return ProcessMap{}, err
	}
	return buildProcessMap(c, since, until, rows), nil
}

// buildProcessMap folds the roll-up rows into nodes and edges with their
// percentiles and judges each edge against the contract.
func buildProcessMap(c domain.Contract, since, until time.Time, rows []ports.ProcessMapRow) ProcessMap {
	type acc struct {
		n       int64
		h       domain.DurationHistogram
		example string
	}
	nodes, edges := map[string]*acc{}, map[[2]string]*acc{}
	get := func(m map[[2]string]*acc, k [2]string) *acc {
		a := m[k]
		if a == nil {
			a = &acc{h: domain.DurationHistogram{}}
			m[k] = a
		}
		return a
	}
	for _, r := range rows {
		var a *acc
		if r.Kind == "N" {
			if a = nodes[r.To]; a == nil {
				a = &acc{h: domain.DurationHistogram{}}
				nodes[r.To] = a
			}
		} else {
			a = get(edges, [2]string{r.From, r.To})
		}
		a.n += r.Count
		a.h[r.Bucket] += r.Count
		if r.Example > a.example {
			a.example = r.Example
		}
	}
	pm := ProcessMap{Contract: c, Since: since, Until: until}
	q := func(h domain.DurationHistogram, p float64) int64 { v, _ := h.Quantile(p); return v }
	for _, s := range c.Steps {
		a := nodes[s.Name]
		if a == nil {
			pm.NeverReached = append(pm.NeverReached, s.Name)
			continue
		}
		pm.Nodes = append(pm.Nodes, ProcessNode{Step: s.Name, Count: a.n, P50: q(a.h, 0.5), P95: q(a.h, 0.95), InContract: true})
		delete(nodes, s.Name)
	}
	var extra []string
	for name := range nodes {
		extra = append(extra, name)
	}
	sort.Strings(extra)
	for _, name := range extra {
		a := nodes[name]
		pm.Nodes = append(pm.Nodes, ProcessNode{Step: name, Count: a.n, P50: q(a.h, 0.5), P95: q(a.h, 0.95)})
	}
	for k, a := range edges {
		pm.Edges = append(pm.Edges, ProcessEdge{From: k[0], To: k[1], Count: a.n, P50: q(a.h, 0.5), P95: q(a.h, 0.95),
			Allowed: c.EdgeAllowed(k[0], k[1]), Example: a.example})
		if k[0] == "" {
			pm.Started += a.n
		}
	}
	sort.Slice(pm.Edges, func(i, j int) bool {
		a, b := pm.Edges[i], pm.Edges[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
	if len(pm.Edges) > domain.MaxProcessItems {
		pm.Edges = pm.Edges[:domain.MaxProcessItems]
	}
	if len(pm.Nodes) > domain.MaxProcessItems {
		pm.Nodes = pm.Nodes[:domain.MaxProcessItems]
	}
	if len(pm.NeverReached) > domain.MaxProcessItems {
		pm.NeverReached = pm.NeverReached[:domain.MaxProcessItems]
	}
	return pm
}
