package readmodel

// The ThreadDetail query: one thread with everything needed to judge it
// (MCP get_thread). GraphQL reads the same data through the same methods,
// field by field (a client picks its fields), so both answer from one set
// of reads.

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

// ThreadDetailArgs bound what ThreadDetail reads besides the thread and its
// steps.
type ThreadDetailArgs struct {
	ThreadLocator
	Validations, Notifications int // the newest this many
	LinkDepth                  int // 2: the thread and its direct children
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

// Locate finds the thread l names; an argument error names the field.
func (q *Queries) Locate(ctx context.Context, l ThreadLocator) (ports.ThreadView, int, error) {
	id := strings.TrimSpace(l.ThreadID)
	refKey, refValue := strings.TrimSpace(l.RefKey), strings.TrimSpace(l.RefValue)
	switch {
	case id != "" && (refKey != "" || refValue != ""):
		return ports.ThreadView{}, 0, domain.Invalid("thread_id", "give thread_id or a reference (ref_key/ref_value), not both")
	case id != "":
		v, err := q.Thread(ctx, id)
		if err != nil {
			return ports.ThreadView{}, 0, err
		}
		if v == nil {
			return ports.ThreadView{}, 0, domain.NotFound("thread " + id)
		}
		return *v, 0, nil
	case refValue != "":
		one := 1
		page, err := q.SearchThreads(ctx, ThreadSearch{RefKey: refKey, RefValue: refValue, Limit: &one, WithTotal: true})
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

// ThreadDetail reads the thread a.ThreadLocator names with its refs, steps,
// newest validations and notifications, notification counts and linked
// threads, each in one statement through the caller's scope.
func (q *Queries) ThreadDetail(ctx context.Context, a ThreadDetailArgs) (ThreadDetail, error) {
	var d ThreadDetail
	th, others, err := q.Locate(ctx, a.ThreadLocator)
	if err != nil {
		return d, err
	}
	d.Thread, d.OtherMatches = th, others
	ids := []string{th.ID}
	refs, err := q.Refs(ctx, ids)
	if err != nil {
		return d, err
	}
	d.Refs = refs[th.ID]
	steps, err := q.Steps(ctx, ids, StepSelection{})
	if err != nil {
		return d, err
	}
	d.Steps = steps[th.ID]
	nv, nn, depth := a.Validations, a.Notifications, a.LinkDepth
	vals, err := q.Validations(ctx, ids, ValidationArgs{Limit: &nv})
	if err != nil {
		return d, err
	}
	d.Validations = vals[th.ID]
	notes, err := q.Notifications(ctx, ids, NotificationArgs{Limit: &nn})
	if err != nil {
		return d, err
	}
	d.Notifications = notes[th.ID]
	counts, err := q.NotificationCounts(ctx, ids)
	if err != nil {
		return d, err
	}
	d.NotificationCounts = counts[th.ID]
	chains, err := q.ThreadChains(ctx, ids, &depth)
	if err != nil {
		return d, err
	}
	for _, l := range chains[th.ID] {
		if l.ID != th.ID {
			d.Linked = append(d.Linked, l)
		}
	}
	return d, nil
}
