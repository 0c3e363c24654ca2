package readmodel

// The thread reads: rows by id, the search and its total (search.go), the
// list's version, refs, sizes, links and chains.

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ThreadRows reads thread rows by id.
type ThreadRows interface {
	// GetThreads returns the threads with these ids that exist, in any order.
	GetThreads(ctx context.Context, ids []string) ([]ports.ThreadView, error)
}

// ThreadsHandler returns the threads with some ids that exist, in the order
// asked.
type ThreadsHandler struct {
	store ThreadRows
	scope Scope
}

// NewThreadsHandler builds the Threads query.
func NewThreadsHandler(store ThreadRows, scope Scope) ThreadsHandler {
	return ThreadsHandler{store: store, scope: scope}
}

// Handle returns the visible threads of ids, in the order asked.
func (h ThreadsHandler) Handle(ctx context.Context, ids []string) ([]ports.ThreadView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	// An id that cannot exist (NUL, invalid UTF-8…) is simply not found,
	// on every store (PostgreSQL would refuse the query).
	rows, err := v.threads(ctx, h.store, domain.ValidIDs(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]ports.ThreadView, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]ports.ThreadView, 0, len(rows))
	for _, id := range ids {
		if t, ok := byID[id]; ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// ThreadHandler returns one thread, or nil when it does not exist.
type ThreadHandler struct{ threads ThreadsHandler }

// NewThreadHandler builds the Thread query over Threads.
func NewThreadHandler(threads ThreadsHandler) ThreadHandler { return ThreadHandler{threads: threads} }

// Handle returns thread id, or nil.
func (h ThreadHandler) Handle(ctx context.Context, id string) (*ports.ThreadView, error) {
	ts, err := h.threads.Handle(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, nil
	}
	return &ts[0], nil
}

// VersionReader reads the threads' version.
type VersionReader interface {
	// ThreadsVersion changes whenever a thread is started or updated.
	ThreadsVersion(ctx context.Context) (string, error)
}

// ThreadsVersionHandler answers GET /v1/threads/version: a thread list polls
// it (with ETag) and reloads only when it moved.
type ThreadsVersionHandler struct {
	store VersionReader
	scope Scope
}

// NewThreadsVersionHandler builds the ThreadsVersion query.
func NewThreadsVersionHandler(store VersionReader, scope Scope) ThreadsVersionHandler {
	return ThreadsVersionHandler{store: store, scope: scope}
}

// Handle returns the installation's version: it tells a party-scoped reader
// only that some thread changed, not which, and its list query then shows
// only its own threads.
func (h ThreadsVersionHandler) Handle(ctx context.Context) (string, error) {
	if _, err := h.scope.open(ctx); err != nil {
		return "", err
	}
	return h.store.ThreadsVersion(ctx)
}

// RefReader reads thread refs.
type RefReader interface {
	// Refs returns each thread's refs (key → value).
	Refs(ctx context.Context, threadIDs []string) (map[string]map[string]string, error)
}

// RefsHandler returns the refs of each thread.
type RefsHandler struct {
	store RefReader
	scope Scope
}

// NewRefsHandler builds the Refs loader.
func NewRefsHandler(store RefReader, scope Scope) RefsHandler {
	return RefsHandler{store: store, scope: scope}
}

// Handle returns the refs of each visible thread.
func (h RefsHandler) Handle(ctx context.Context, threadIDs []string) (map[string]map[string]string, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string]map[string]string, error) {
		return h.store.Refs(ctx, ids)
	})
}

// CountReader reads the sizes of threads.
type CountReader interface {
	// Counts returns the sizes of each thread's step and validation lists.
	Counts(ctx context.Context, threadIDs []string) (map[string]ports.ThreadCounts, error)
}

// CountsHandler returns the sizes of each thread's step and validation lists.
type CountsHandler struct {
	store CountReader
	scope Scope
}

// NewCountsHandler builds the Counts loader.
func NewCountsHandler(store CountReader, scope Scope) CountsHandler {
	return CountsHandler{store: store, scope: scope}
}

// Handle returns the sizes of each visible thread.
func (h CountsHandler) Handle(ctx context.Context, threadIDs []string) (map[string]ports.ThreadCounts, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string]ports.ThreadCounts, error) {
		return h.store.Counts(ctx, ids)
	})
}

// LinkReader reads the threads linking to others, and their rows.
type LinkReader interface {
	ThreadRows
	// LinkedFrom returns, for each thread, the ids of the threads whose
	// "linkedThread:*" refs point at it (at most limit per thread).
	LinkedFrom(ctx context.Context, threadIDs []string, limit int) (map[string][]string, error)
}

// LinkedFromHandler returns, for each thread, the threads that link to it
// through a "linkedThread:*" ref (at most domain.MaxChainThreads each),
// oldest first.
type LinkedFromHandler struct {
	store LinkReader
	scope Scope
}

// NewLinkedFromHandler builds the LinkedFrom loader.
func NewLinkedFromHandler(store LinkReader, scope Scope) LinkedFromHandler {
	return LinkedFromHandler{store: store, scope: scope}
}

// Handle keeps visible targets and, among the threads linking to them,
// only those the principal sees too.
func (h LinkedFromHandler) Handle(ctx context.Context, threadIDs []string) (map[string][]ports.ThreadView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	links, err := perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]string, error) {
		return h.store.LinkedFrom(ctx, ids, domain.MaxChainThreads)
	})
	if err == nil && v.party != nil {
		links, err = keepVisible(ctx, v, links, func(id string) string { return id })
	}
	if err != nil {
		return nil, err
	}
	return rowsOfLinks(ctx, v, h.store, threadIDs, links, func(id string) string { return id })
}

// rowsOfLinks reads the rows of the threads links name (once each) and
// lists them under each key in links' order; a thread the read did not
// return is left out. Every key gets a list, empty if need be.
func rowsOfLinks[L any](ctx context.Context, v view, store ThreadRows, keys []string, links map[string][]L, idOf func(L) string) (map[string][]ports.ThreadView, error) {
	var ids []string
	seen := map[string]bool{}
	for _, ls := range links {
		for _, l := range ls {
			if id := idOf(l); !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	threads, err := v.threads(ctx, store, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]ports.ThreadView, len(threads))
	for _, t := range threads {
		byID[t.ID] = t
	}
	out := make(map[string][]ports.ThreadView, len(keys))
	for _, key := range keys {
		list := []ports.ThreadView{}
		for _, l := range links[key] {
			if t, ok := byID[idOf(l)]; ok {
				list = append(list, t)
			}
		}
		out[key] = list
	}
	return out, nil
}

// ChainReader reads the threads linked from roots, and their rows.
type ChainReader interface {
	ThreadRows
	// Chains returns, for each root, the root (depth 1) and the threads
	// linked from it, breadth first, up to maxDepth and at most limit per
	// root.
	Chains(ctx context.Context, rootIDs []string, maxDepth, limit int) (map[string][]ports.ChainLink, error)
}

// ThreadChainsHandler returns, for each root, the root and the threads
// linked from it ("linkedThread:*" refs), breadth first.
type ThreadChainsHandler struct {
	store ChainReader
	scope Scope
}

// NewThreadChainsHandler builds the ThreadChains query.
func NewThreadChainsHandler(store ChainReader, scope Scope) ThreadChainsHandler {
	return ThreadChainsHandler{store: store, scope: scope}
}

// Handle answers the chains of rootIDs; maxDepth nil means 3, it must be
// 1..10. At most domain.MaxChainThreads threads per root. Of each visible
// root's chain the threads the principal sees are kept: a chain through a
// thread it may not see still reaches the visible threads beyond it.
func (h ThreadChainsHandler) Handle(ctx context.Context, rootIDs []string, maxDepth *int) (map[string][]ports.ThreadView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	depth := domain.DefaultChainDepth
	if maxDepth != nil {
		depth = *maxDepth
	}
	if depth < 1 || depth > domain.MaxChainDepth {
		return nil, domain.Invalid("maxDepth", "maxDepth must be between 1 and %d", domain.MaxChainDepth)
	}
	links, err := perThread(ctx, v, domain.ValidIDs(rootIDs), func(ids []string) (map[string][]ports.ChainLink, error) {
		return h.store.Chains(ctx, ids, depth, domain.MaxChainThreads)
	})
	if err == nil && v.party != nil {
		links, err = keepVisible(ctx, v, links, func(l ports.ChainLink) string { return l.ThreadID })
	}
	if err != nil {
		return nil, err
	}
	return rowsOfLinks(ctx, v, h.store, rootIDs, links, func(l ports.ChainLink) string { return l.ThreadID })
}
