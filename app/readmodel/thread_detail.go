package readmodel

// The ThreadDetail query: one thread with what explains it, the parts its
// caller asks for. MCP get_thread asks for every part (AllDetailParts);
// GraphQL thread(id) asks for the thread row it read while pricing and the
// argument-free parts its selection names, and loads the parts a client
// passes arguments to (steps, validationResults, notifications,
// threadChain) through the same handlers ThreadDetailHandler is built on
// (Steps, Validations, Notifications, Chains), batched with the thread
// lists.

import (
	"context"
	"strings"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ThreadLocator names one thread: by id, or by a reference (RefValue,
// optionally with RefKey; the newest match wins).
type ThreadLocator struct {
	ThreadID, RefKey, RefValue string
}

// ThreadDetailArgs name the thread and the parts ThreadDetail reads besides
// its row.
type ThreadDetailArgs struct {
	ThreadLocator
	// Located is the thread's row when the caller read it already, through
	// the same scope (GraphQL prices an operation by its rows); the locator
	// is then not read.
	Located *ports.ThreadView
	Parts   DetailParts
}

// DetailParts are the parts of a thread's detail to read; a zero part is
// not read.
type DetailParts struct {
	Refs               bool
	Steps              *StepSelection
	Validations        *ValidationArgs
	Notifications      *NotificationArgs
	NotificationCounts bool
	// LinkDepth reads the threads linked below it (2: its direct children).
	LinkDepth *int
}

// AllDetailParts is every part: the newest validations and notifications
// (this many of each), and the links to linkDepth.
func AllDetailParts(validations, notifications, linkDepth int) DetailParts {
	return DetailParts{Refs: true, Steps: &StepSelection{}, Validations: &ValidationArgs{Limit: &validations},
		Notifications: &NotificationArgs{Limit: &notifications}, NotificationCounts: true, LinkDepth: &linkDepth}
}

// ThreadDetail is one thread and what explains it.
type ThreadDetail struct {
	Thread ports.ThreadView
	// OtherMatches counts the other threads a reference matched.
	OtherMatches       int
	Refs               map[string]string
	Steps              []ports.StepView
	Validations        []ports.ValidationView
	Notifications      []ports.NotificationView
	NotificationCounts ports.NotificationCounts
	// Linked are the threads linked below it (itself excluded).
	Linked []ports.ThreadView
}

// LocateHandler finds one thread by id or by reference.
type LocateHandler struct {
	thread ThreadHandler
	search SearchThreadsHandler
}

// NewLocateHandler builds Locate over the Thread query and the search.
func NewLocateHandler(thread ThreadHandler, search SearchThreadsHandler) LocateHandler {
	return LocateHandler{thread: thread, search: search}
}

// Handle finds the thread l names, and how many other threads a reference
// matched; an argument error names the field.
func (h LocateHandler) Handle(ctx context.Context, l ThreadLocator) (ports.ThreadView, int, error) {
	id := strings.TrimSpace(l.ThreadID)
	refKey, refValue := strings.TrimSpace(l.RefKey), strings.TrimSpace(l.RefValue)
	switch {
	case id != "" && (refKey != "" || refValue != ""):
		return ports.ThreadView{}, 0, domain.Invalid("thread_id", "give thread_id or a reference (ref_key/ref_value), not both")
	case id != "":
		v, err := h.thread.Handle(ctx, id)
		if err != nil {
			return ports.ThreadView{}, 0, err
		}
		if v == nil {
			return ports.ThreadView{}, 0, domain.NotFound("thread " + id)
		}
		return *v, 0, nil
	case refValue != "":
		one := 1
		page, err := h.search.Handle(ctx, ThreadSearch{RefKey: refKey, RefValue: refValue, Limit: &one, WithTotal: true})
		if err != nil {
			return ports.ThreadView{}, 0, err
		}
		if len(page.Threads) == 0 {
			return ports.ThreadView{}, 0, domain.NotFound("thread with reference " + refDescription(refKey, refValue))
		}
		return page.Threads[0], page.Total.Count - 1, nil
	case refKey != "":
		return ports.ThreadView{}, 0, domain.Invalid("ref_value", "ref_value is required with ref_key")
	}
	return ports.ThreadView{}, 0, domain.Invalid("thread_id", "give thread_id, or ref_value (optionally with ref_key)")
}

func refDescription(key, value string) string {
	if key == "" {
		return "value " + value
	}
	return key + "=" + value
}

// ThreadDetailHandler reads one thread and the parts of its detail a
// caller asks for, each through the handler that loads it for a list (so
// GraphQL's thread(id) fields and MCP's get_thread read the same way).
type ThreadDetailHandler struct {
	locate        LocateHandler
	refs          RefsHandler
	steps         StepsHandler
	validations   ValidationsHandler
	notifications NotificationsHandler
	counts        NotificationCountsHandler
	chains        ThreadChainsHandler
}

// NewThreadDetailHandler builds ThreadDetail over the handlers of its parts.
func NewThreadDetailHandler(locate LocateHandler, refs RefsHandler, steps StepsHandler, validations ValidationsHandler,
	notifications NotificationsHandler, counts NotificationCountsHandler, chains ThreadChainsHandler) ThreadDetailHandler {
	return ThreadDetailHandler{locate: locate, refs: refs, steps: steps, validations: validations,
		notifications: notifications, counts: counts, chains: chains}
}

// Handle reads the thread a.ThreadLocator names (or a.Located) and the
// parts a.Parts asks for, each in one statement through the caller's scope.
func (q ThreadDetailHandler) Handle(ctx context.Context, a ThreadDetailArgs) (ThreadDetail, error) {
	var d ThreadDetail
	if a.Located != nil {
		d.Thread = *a.Located
	} else {
		th, others, err := q.locate.Handle(ctx, a.ThreadLocator)
		if err != nil {
			return d, err
		}
		d.Thread, d.OtherMatches = th, others
	}
	th, p := d.Thread, a.Parts
	ids := []string{th.ID}
	if p.Refs {
		refs, err := q.refs.Handle(ctx, ids)
		if err != nil {
			return d, err
		}
		d.Refs = refs[th.ID]
	}
	if p.Steps != nil {
		steps, err := q.steps.Handle(ctx, ids, *p.Steps)
		if err != nil {
			return d, err
		}
		d.Steps = steps[th.ID]
	}
	if p.Validations != nil {
		vals, err := q.validations.Handle(ctx, ids, *p.Validations)
		if err != nil {
			return d, err
		}
		d.Validations = vals[th.ID]
	}
	if p.Notifications != nil {
		notes, err := q.notifications.Handle(ctx, ids, *p.Notifications)
		if err != nil {
			return d, err
		}
		d.Notifications = notes[th.ID]
	}
	if p.NotificationCounts {
		counts, err := q.counts.Handle(ctx, ids)
		if err != nil {
			return d, err
		}
		d.NotificationCounts = counts[th.ID]
	}
	if p.LinkDepth != nil {
		chains, err := q.chains.Handle(ctx, ids, p.LinkDepth)
		if err != nil {
			return d, err
		}
		for _, l := range chains[th.ID] {
			if l.ID != th.ID {
				d.Linked = append(d.Linked, l)
			}
		}
	}
	return d, nil
}
