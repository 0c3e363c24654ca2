package readmodel

import (
	"context"
	"math"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ExportBatch is how many threads a stream lists at a time, and
// ExportStepBudget how many steps' rows it loads at once: a batch is split
// so an export holds about that many steps (or one thread, when a single
// thread has more) in memory, whatever the number of threads it writes.
const (
	ExportBatch      = 50
	ExportStepBudget = 2000
)

// allRows is the per-thread limit of an export's paged reads: everything.
const allRows = math.MaxInt32

// LimitExportThreadBytes names the bound on the bytes one thread's export
// loads (the limit label and the error's "limit" detail).
const LimitExportThreadBytes = "export_thread_bytes"

// ThreadExport is everything stored about one thread.
type ThreadExport struct {
	Thread        ports.ThreadView
	Steps         []ports.StepView
	Attempts      []ports.ActivityView
	SubSteps      []ports.SubStepView
	Validations   []ports.ValidationView
	Notifications []ports.NotificationView
	Chain         domain.ChainStatus
	// TooLarge, in a stream, is the thread's stored bytes when they are
	// over the per-thread bound: only Thread is filled, nothing else was
	// loaded (the transport says so in place of the thread).
	TooLarge int64
}

// Exports reads whole threads for download (threads.read, the same access as
// the query API).
type Exports struct {
	threads ThreadsHandler
	verify  VerifyThreadsHandler
	rows    ExportReader
	scope   Scope
	clock   ports.Clock
	lister  ports.ThreadLister
	// maxThreadBytes bounds what one thread's export loads (0: unbounded).
	maxThreadBytes int64
}

// SetMaxThreadBytes bounds the stored bytes (contexts, metadata, sub-step
// payloads, validations, notifications: ports.ThreadLister.StoredBytes) one
// export loads at once: a thread holding more is refused (Thread) or named
// in place of its export (Stream) before any of its rows is read, and a
// stream loads its threads in groups of at most that many bytes (or one
// thread). The memory of an export is then a small multiple of n, however
// large the threads. Call it before serving.
func (x *Exports) SetMaxThreadBytes(n int64) { x.maxThreadBytes = max(n, 0) }

// MaxThreadBytes is the bound SetMaxThreadBytes set (0: none).
func (x *Exports) MaxThreadBytes() int64 { return x.maxThreadBytes }

// storedBytes is the stored bytes of each of threads (nil when unbounded).
func (x *Exports) storedBytes(ctx context.Context, threads []ports.ThreadView) (map[string]int64, error) {
	if x.maxThreadBytes <= 0 || len(threads) == 0 {
		return nil, nil
	}
	ids := make([]string, len(threads))
	for i, t := range threads {
		ids[i] = t.ID
	}
	return x.lister.StoredBytes(ctx, ids)
}

// tooLarge is the refusal of one thread over the bound.
func (x *Exports) tooLarge(id string, n int64) error {
	return domain.LimitExceeded(domain.KindTooLarge, LimitExportThreadBytes,
		"thread %s holds %d stored bytes (contexts, metadata, sub-steps, validations, notifications); one thread's export is limited to %d (limits.graphql.export_thread_max_bytes)",
		id, n, x.maxThreadBytes).WithDetail("bytes", n).WithDetail("max", x.maxThreadBytes)
}

// ExportReader is what an export reads of its threads besides their rows
// and chains' verdicts: every kind of row, whole.
type ExportReader interface {
	StepReader
	NotificationReader
	ValidationReader
	integrity.SubStepReader
	// Activities returns each thread's whole chain in seq order.
	Activities(ctx context.Context, threadIDs []string) (map[string][]ports.ActivityView, error)
}

// NewExports builds the export use cases over the read side d wires (as
// New does): the threads and their chains' verdicts, read through the
// caller's scope, listed a page at a time by lister.
func NewExports(d Deps, lister ports.ThreadLister) *Exports {
	if d.Clock == nil {
		d.Clock = ports.SystemClock{}
	}
	sc := NewScope(d.Store, d.Clock)
	checker := integrity.Checker{Keys: domain.ChainKeyring{Secrets: d.ChainSecrets, PartialBefore: d.ChainPartialBefore}, Log: d.Log}
	return &Exports{threads: NewThreadsHandler(d.Store, sc), verify: NewVerifyThreadsHandler(d.Store, checker, sc),
		rows: d.Store, scope: sc, clock: d.Clock, lister: lister}
}

// Thread exports one thread; an unknown one is not found.
func (x *Exports) Thread(ctx context.Context, id string) (ThreadExport, error) {
	threads, err := x.threads.Handle(ctx, []string{id})
	if err != nil {
		return ThreadExport{}, err
	}
	sizes, err := x.storedBytes(ctx, threads)
	if err != nil {
		return ThreadExport{}, err
	}
	for _, t := range threads {
		if n := sizes[t.ID]; n > x.maxThreadBytes {
			return ThreadExport{}, x.tooLarge(t.ID, n)
		}
	}
	out, err := x.batch(ctx, threads)
	if err != nil {
		return ThreadExport{}, err
	}
	if len(out) == 0 {
		return ThreadExport{}, domain.NotFound("thread " + id)
	}
	return out[0], nil
}

// Stream exports every thread matching f after the cursor (nil: from the
// first), oldest first, calling emit for each with its cursor (where a
// later stream goes on); it stops at the first error emit returns (the
// client went away, or the transport's byte budget is spent).
func (x *Exports) Stream(ctx context.Context, f ports.ExportFilter, after *ports.ThreadCursor, emit func(ThreadExport, ports.ThreadCursor) error) error {
	if _, err := x.scope.open(ctx); err != nil {
		return err
	}
	if f.Within > 0 {
		f.StartedSince = x.clock.Now().UTC().Add(-f.Within)
	}
	for {
		page, err := x.lister.ListThreadIDs(ctx, f, after, ExportBatch)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		ids := make([]string, len(page))
		at := make(map[string]ports.ThreadCursor, len(page))
		for i, c := range page {
			ids[i] = c.ID
			at[c.ID] = c
		}
		threads, err := x.threads.Handle(ctx, ids)
		if err != nil {
			return err
		}
		sizes, err := x.storedBytes(ctx, threads)
		if err != nil {
			return err
		}
		for _, group := range exportGroups(threads, ExportStepBudget, sizes, x.maxThreadBytes) {
			if n := sizes[group[0].ID]; x.maxThreadBytes > 0 && n > x.maxThreadBytes {
				// Alone in its group (exportGroups): named, not loaded.
				if err := emit(ThreadExport{Thread: group[0], TooLarge: n}, at[group[0].ID]); err != nil {
					return err
				}
				continue
			}
			batch, err := x.batch(ctx, group)
			if err != nil {
				return err
			}
			for _, t := range batch {
				if err := emit(t, at[t.Thread.ID]); err != nil {
					return err
				}
			}
		}
		last := page[len(page)-1]
		after = &last
		if len(page) < ExportBatch {
			return nil
		}
	}
}

// batch reads everything else about threads (rows read through the
// caller's reader, so a party-scoped service account exports only the
// threads it is a party of) with one query per kind of row.
func (x *Exports) batch(ctx context.Context, threads []ports.ThreadView) ([]ThreadExport, error) {
	if len(threads) == 0 {
		return nil, nil
	}
	v, err := x.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(threads))
	for i, t := range threads {
		ids[i] = t.ID
	}
	st := x.rows
	steps, err := perThread(ctx, v, ids, func(ids []string) (map[string][]ports.StepView, error) {
		return st.Steps(ctx, ids, ports.StepFilter{}, allRows)
	})
	if err != nil {
		return nil, err
	}
	acts, err := perThread(ctx, v, ids, func(ids []string) (map[string][]ports.ActivityView, error) { return st.Activities(ctx, ids) })
	if err != nil {
		return nil, err
	}
	var keys []ports.StepKey
	for _, id := range ids {
		for _, s := range steps[id] {
			keys = append(keys, s.StepKey)
		}
	}
	subs, err := scopedSubSteps{v: v, st: st}.SubSteps(ctx, keys)
	if err != nil {
		return nil, err
	}
	vals, err := perThread(ctx, v, ids, func(ids []string) (map[string][]ports.ValidationView, error) {
		return st.Validations(ctx, ids, ports.ValidationFilter{Limit: allRows})
	})
	if err != nil {
		return nil, err
	}
	notes, err := perThread(ctx, v, ids, func(ids []string) (map[string][]ports.NotificationView, error) {
		return st.Notifications(ctx, ids, ports.NotificationFilter{Limit: allRows})
	})
	if err != nil {
		return nil, err
	}
	chains, err := x.verify.Handle(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ThreadExport, len(threads))
	for i, t := range threads {
		e := ThreadExport{Thread: t, Steps: steps[t.ID], Attempts: acts[t.ID], Validations: vals[t.ID],
			Notifications: notes[t.ID], Chain: chains[t.ID]}
		for _, s := range e.Steps {
			e.SubSteps = append(e.SubSteps, subs[s.StepKey]...)
		}
		out[i] = e
	}
	return out, nil
}

// AuthorizeStream refuses a caller that may not export, before the transport
// commits to a response (Stream checks the same again).
func (x *Exports) AuthorizeStream(ctx context.Context) error {
	_, err := authz.Require(ctx, domain.PermThreadsRead)
	return err
}

// exportGroups splits threads, in order, into groups of at most budget
// steps and, when maxBytes > 0, at most maxBytes stored bytes (sizes) each;
// a thread over either is a group of its own.
func exportGroups(threads []ports.ThreadView, budget int, sizes map[string]int64, maxBytes int64) [][]ports.ThreadView {
	var out [][]ports.ThreadView
	var cur []ports.ThreadView
	steps := 0
	var bytes int64
	for _, t := range threads {
		n := sizes[t.ID]
		if len(cur) > 0 && (steps+t.StepCount > budget || maxBytes > 0 && bytes+n > maxBytes) {
			out = append(out, cur)
			cur, steps, bytes = nil, 0, 0
		}
		cur = append(cur, t)
		steps += t.StepCount
		bytes += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
