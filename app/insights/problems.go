package insights

import (
	"context"
	"sort"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Problems limits: a window of at most 30 days, cut into ProblemBuckets
// buckets for the trend; at most MaxProblemGroups causes, read from at most
// maxProblemRows (cause, bucket) rows.
const (
	MaxProblemHours  = 720
	ProblemBuckets   = 12
	MaxProblemGroups = 50
	maxProblemRows   = 20000
)

// ProblemGroup is one cause of unhealthy threads: a contract version's rule
// at a step, or for free-form threads a step and a failure message class.
type ProblemGroup struct {
	ContractName    string // "" for free-form threads
	ContractVersion int
	Rule, Step      string
	MessageClass    string // free-form threads only
	Count           int
	Trend           []int // threads per bucket, oldest first
	Example         string
}

// ProblemReport groups the unhealthy threads started in a window by cause.
type ProblemReport struct {
	Since, Until time.Time
	BucketHours  int
	Buckets      []time.Time // bucket starts
	Groups       []ProblemGroup
	Total        int  // unhealthy threads in the window
	Truncated    bool // more causes than MaxProblemGroups (or rows than read)
}

// ProblemsHandler answers "what broke, and why": the unhealthy threads
// (health FAILED or VIOLATED) started in the last hours, grouped by cause,
// biggest first, with their trend over the window.
type ProblemsHandler struct {
	store ports.ProblemReads // nil: not found
	clock ports.Clock
}

// NewProblemsHandler builds the Problems query (store may be nil).
func NewProblemsHandler(store ports.ProblemReads, clock ports.Clock) ProblemsHandler {
	return ProblemsHandler{store: store, clock: clock}
}

// Handle groups the window's unhealthy threads; hours defaults to 24 and
// is at most MaxProblemHours.
func (q ProblemsHandler) Handle(ctx context.Context, hours *int) (ProblemReport, error) {
	if err := companyWide(ctx); err != nil {
		return ProblemReport{}, err
	}
	if q.store == nil {
		return ProblemReport{}, domain.NotFound("problems")
	}
	h := 24
	if hours != nil {
		if *hours < 1 || *hours > MaxProblemHours {
			return ProblemReport{}, domain.Invalid("hours", "hours must be 1..%d", MaxProblemHours)
		}
		h = *hours
	}
	bucketHours := (h + ProblemBuckets - 1) / ProblemBuckets
	until := q.clock.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	since := until.Add(-time.Duration(bucketHours*ProblemBuckets) * time.Hour)
	rows, err := q.store.ProblemRows(ctx, since, until, time.Duration(bucketHours)*time.Hour, maxProblemRows+1)
	if err != nil {
		return ProblemReport{}, err
	}
	r := ProblemReport{Since: since, Until: until, BucketHours: bucketHours, Truncated: len(rows) > maxProblemRows}
	if r.Truncated {
		rows = rows[:maxProblemRows]
	}
	for i := 0; i < ProblemBuckets; i++ {
		r.Buckets = append(r.Buckets, since.Add(time.Duration(i*bucketHours)*time.Hour))
	}
	type key struct {
		name          string
		version       int
		rule, step, c string
	}
	groups := map[key]*ProblemGroup{}
	for _, row := range rows {
		k := key{row.ContractName, row.ContractVersion, row.Rule, row.Step, row.MessageClass}
		g := groups[k]
		if g == nil {
			g = &ProblemGroup{ContractName: k.name, ContractVersion: k.version, Rule: k.rule, Step: k.step, MessageClass: k.c,
				Trend: make([]int, ProblemBuckets), Example: row.Example}
			groups[k] = g
		}
		b := int(row.Start.Sub(since)/time.Hour) / bucketHours
		if b >= 0 && b < ProblemBuckets {
			g.Trend[b] += row.Count
		}
		g.Count += row.Count
		r.Total += row.Count
		if row.Example > g.Example {
			g.Example = row.Example
		}
	}
	for _, g := range groups {
		r.Groups = append(r.Groups, *g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		a, b := r.Groups[i], r.Groups[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.ContractName != b.ContractName {
			return a.ContractName < b.ContractName
		}
		if a.ContractVersion != b.ContractVersion {
			return a.ContractVersion < b.ContractVersion
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return a.MessageClass < b.MessageClass
	})
	if len(r.Groups) > MaxProblemGroups {
		r.Groups, r.Truncated = r.Groups[:MaxProblemGroups], true
	}
	return r, nil
}
