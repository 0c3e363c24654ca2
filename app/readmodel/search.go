package readmodel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// The thread search (GraphQL threads, threadsByContract, threadsByRef; the
// UI's list; MCP search_threads). A page is an index range scan: it pages by
// cursor (a thread's position in the list's order) or by a capped offset,
// and its total is a separate count, asked only when a client wants it and
// bounded by MaxTotalCount.

// MaxThreadsOffset is the largest offset a search accepts: deeper pages are
// reached with cursors, which cost the same at any depth.
const MaxThreadsOffset = 10000

// MaxTotalCount bounds a search's total: past it the total is reported as
// MaxTotalCount, not exact (Total.Exact false), so a count never reads more
// than this many index entries.
const MaxTotalCount = 10000

// ThreadSearch is the input of the thread search queries. Empty strings and
// nil pointers mean "no filter"; times are ISO-8601 strings.
type ThreadSearch struct {
	Actor           string
	ContractName    string
	ContractVersion *int
	Status          string
	StartedAfter    string
	StartedBefore   string
	CompletedAfter  string
	CompletedBefore string
	RefKey          string
	RefValue        string
	Health          []domain.HealthStatus
	Tag             string
	IDPrefix        string
	// IssueType and IssueStep keep threads whose first issue is of this
	// rule (validation issue type or step_failed) and at this step.
	IssueType, IssueStep string
	OrderBy              string // ports.OrderStartedAt (default) or ports.OrderDuration
	Ascending            bool
	// After and Before are cursors from a page of the same search (its
	// EndCursor / StartCursor): the page after, or before, that thread.
	After, Before string
	Limit         *int // default 50, at most 100
	Offset        *int // at most MaxThreadsOffset
	// WithTotal also counts the matching threads (bounded, see Total).
	WithTotal bool
}

// ThreadPage is one page of threads.
type ThreadPage struct {
	Threads []ports.ThreadView
	// HasNext: more threads follow the page's last; HasPrevious: threads
	// come before its first (true whenever the page started after a cursor
	// or an offset).
	HasNext, HasPrevious bool
	// StartCursor and EndCursor are the first and last threads' positions
	// ("" on an empty page).
	StartCursor, EndCursor string
	// Total is set when the search asked WithTotal.
	Total Total
}

// Total is a bounded count: Count is exact when Exact, else there are more
// than MaxTotalCount matching threads and Count is MaxTotalCount.
type Total struct {
	Count int
	Exact bool
}

// ThreadLister pages and counts a thread search.
type ThreadLister interface {
	ThreadCounter
	// ListThreads returns one page in f's order (newest first by default).
	ListThreads(ctx context.Context, f ports.ThreadFilter) ([]ports.ThreadView, error)
}

// ThreadCounter counts a thread search.
type ThreadCounter interface {
	// CountThreads counts the threads matching f (its paging ignored), but
	// stops at upTo.
	CountThreads(ctx context.Context, f ports.ThreadFilter, upTo int) (int, error)
}

// SearchThreadsHandler returns one page of a thread search.
type SearchThreadsHandler struct {
	store ThreadLister
	scope Scope
}

// NewSearchThreadsHandler builds the thread search.
func NewSearchThreadsHandler(store ThreadLister, scope Scope) SearchThreadsHandler {
	return SearchThreadsHandler{store: store, scope: scope}
}

// Handle returns one page of threads, newest first by default.
func (h SearchThreadsHandler) Handle(ctx context.Context, s ThreadSearch) (ThreadPage, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return ThreadPage{}, err
	}
	f, err := s.filter()
	if err != nil {
		return ThreadPage{}, err
	}
	f = v.filter(f)
	limit := f.Limit
	f.Limit++ // one more tells whether a next page exists
	threads, err := h.store.ListThreads(ctx, f)
	if err != nil {
		return ThreadPage{}, err
	}
	page := ThreadPage{}
	more := len(threads) > limit
	if f.Before != nil {
		// Rows come in list order; the extra one is the farthest from the
		// cursor, at the start.
		if more {
			threads = threads[1:]
		}
		page.HasPrevious, page.HasNext = more, true
	} else {
		if more {
			threads = threads[:limit]
		}
		page.HasNext, page.HasPrevious = more, f.After != nil || f.Offset > 0
	}
	page.Threads = threads
	if n := len(threads); n > 0 {
		tag := s.orderTag()
		page.StartCursor, page.EndCursor = encodeCursor(tag, threads[0].Position()), encodeCursor(tag, threads[n-1].Position())
	}
	if s.WithTotal {
		if t, ok := page.WholeTotal(); ok {
			page.Total = t
		} else if page.Total, err = count(ctx, h.store, f); err != nil {
			return ThreadPage{}, err
		}
	}
	return page, nil
}

// WholeTotal is the search's total when the page holds every match: a
// first page (no cursor, no offset) with no next page. The count would
// read those same matches again (for a ref search its trigram candidates
// a second time), so the page answers it.
func (p ThreadPage) WholeTotal() (Total, bool) {
	if p.HasNext || p.HasPrevious {
		return Total{}, false
	}
	// A page holds at most domain.ThreadsPage.Max threads, far below
	// MaxTotalCount: its length is exact.
	return Total{Count: len(p.Threads), Exact: true}, true
}

// CountThreadsHandler counts the threads a search matches (its paging
// ignored), up to MaxTotalCount: a page's totalCount, asked apart.
type CountThreadsHandler struct {
	store ThreadCounter
	scope Scope
}

// NewCountThreadsHandler builds the search's count.
func NewCountThreadsHandler(store ThreadCounter, scope Scope) CountThreadsHandler {
	return CountThreadsHandler{store: store, scope: scope}
}

// Handle counts the threads s matches, up to MaxTotalCount.
func (h CountThreadsHandler) Handle(ctx context.Context, s ThreadSearch) (Total, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return Total{}, err
	}
	s.After, s.Before, s.Offset = "", "", nil
	f, err := s.filter()
	if err != nil {
		return Total{}, err
	}
	return count(ctx, h.store, v.filter(f))
}

func count(ctx context.Context, st ThreadCounter, f ports.ThreadFilter) (Total, error) {
	f.After, f.Before, f.Offset = nil, nil, 0
	n, err := st.CountThreads(ctx, f, MaxTotalCount+1)
	if err != nil {
		return Total{}, err
	}
	if n > MaxTotalCount {
		return Total{Count: MaxTotalCount}, nil
	}
	return Total{Count: n, Exact: true}, nil
}

// MaxFilterBytes bounds a text filter of a thread search: longer than
// any value a filter can usefully match (ids are at most 200 bytes), and
// far below what a store refuses by itself (SQLite's LIKE pattern limit
// of 50,000 bytes would otherwise surface as an internal error on one
// store only).
const MaxFilterBytes = 4096

// checkLengths refuses a text filter over MaxFilterBytes, the same on
// every store and transport.
func (s ThreadSearch) checkLengths() error {
	for _, f := range []struct{ name, v string }{
		{"actor", s.Actor}, {"contractName", s.ContractName}, {"status", s.Status}, {"refKey", s.RefKey},
		{"refValue", s.RefValue}, {"tag", s.Tag}, {"idPrefix", s.IDPrefix},
	} {
		if len(f.v) > MaxFilterBytes {
			return domain.Invalid(f.name, "%s is %d bytes long; at most %d are accepted", f.name, len(f.v), MaxFilterBytes).
				WithDetail("limit", MaxFilterBytes)
		}
	}
	return nil
}

// filter validates the search and turns it into the store's filter.
func (s ThreadSearch) filter() (ports.ThreadFilter, error) {
	if err := s.checkLengths(); err != nil {
		return ports.ThreadFilter{}, err
	}
	f := ports.ThreadFilter{Actor: s.Actor, ContractName: s.ContractName, ContractVersion: s.ContractVersion,
		Status: s.Status, RefKey: s.RefKey, RefValue: s.RefValue, Health: s.Health, Tag: s.Tag,
		IDPrefix: strings.TrimSpace(s.IDPrefix), IssueType: s.IssueType, IssueStep: s.IssueStep, OrderBy: s.OrderBy, Ascending: s.Ascending,
		Limit: domain.ThreadsPage.Effective(s.Limit)}
	switch f.OrderBy {
	case "", ports.OrderStartedAt, ports.OrderDuration:
	default:
		return f, domain.Invalid("orderBy", "orderBy must be STARTED_AT or DURATION, not %q", f.OrderBy)
	}
	if s.ContractName == "" {
		f.ContractVersion = nil // reference: the version filters only together with a name
	}
	if s.Offset != nil && *s.Offset > 0 {
		if *s.Offset > MaxThreadsOffset {
			return f, domain.Invalid("offset", "offset may be at most %d; page deeper with after/before cursors", MaxThreadsOffset)
		}
		f.Offset = *s.Offset
	}
	if s.After != "" && s.Before != "" {
		return f, domain.Invalid("after", "give after or before, not both")
	}
	var err error
	for _, c := range []struct {
		field, v string
		dst      **ports.ThreadPosition
	}{{"after", s.After, &f.After}, {"before", s.Before, &f.Before}} {
		if c.v == "" {
			continue
		}
		if *c.dst, err = decodeCursor(c.field, s.orderTag(), c.v); err != nil {
			return f, err
		}
	}
	for _, p := range []struct {
		field, v string
		dst      **time.Time
	}{
		{"startedAfter", s.StartedAfter, &f.StartedAfter}, {"startedBefore", s.StartedBefore, &f.StartedBefore},
		{"completedAfter", s.CompletedAfter, &f.CompletedAfter}, {"completedBefore", s.CompletedBefore, &f.CompletedBefore},
	} {
		if *p.dst, err = domain.ParseTimeArg(p.field, p.v); err != nil {
			return f, err
		}
	}
	return f, nil
}

// orderTag names the search's order; a cursor carries it so that a cursor
// from one order is not read as a position in another.
func (s ThreadSearch) orderTag() string {
	tag := "s"
	if s.OrderBy == ports.OrderDuration {
		tag = "d"
	}
	if s.Ascending {
		tag += "a"
	}
	if s.RefValue != "" {
		tag += "x"
	}
	return tag
}

// cursor is a position as a client holds it: opaque (base64url of this
// JSON), to be passed back unchanged.
type cursor struct {
	Order     string    `json:"o"`
	Exact     bool      `json:"x,omitempty"`
	Duration  int64     `json:"d,omitempty"`
	CreatedAt time.Time `json:"c"`
	ID        string    `json:"i"`
}

func encodeCursor(order string, p ports.ThreadPosition) string {
	b, _ := json.Marshal(cursor{Order: order, Exact: p.Exact, Duration: p.DurationMs, CreatedAt: p.CreatedAt.UTC(), ID: p.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(field, order, s string) (*ports.ThreadPosition, error) {
	bad := domain.Invalid(field, "%s is not a cursor of this list (pass a page's startCursor or endCursor back unchanged, with the same orderBy, order and refValue)", field)
	if len(s) > 512 {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Order != order || !domain.ValidID(c.ID) {
		return nil, bad
	}
	return &ports.ThreadPosition{Exact: c.Exact, DurationMs: c.Duration, CreatedAt: c.CreatedAt, ID: c.ID}, nil
}
