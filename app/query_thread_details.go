package app

// The ThreadDetails query: a thread's application key and refs (the
// WebSocket thread reply).

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// ThreadDetails are what a thread reply shows beyond the thread.
type ThreadDetails struct {
	Key  string
	Refs map[string]string
}

// ThreadDetailsHandler returns a thread's key and refs; one of Threads' Queries.
type ThreadDetailsHandler struct{ t *Threads }

// Handle returns a thread's application key and refs.
func (h ThreadDetailsHandler) Handle(ctx context.Context, threadID string) (ThreadDetails, error) {
	t := h.t
	if _, err := Require(ctx, domain.PermThreadsRead); err != nil {
		return ThreadDetails{}, err
	}
	key, err := t.store.ThreadKey(ctx, threadID)
	if err != nil {
		return ThreadDetails{}, err
	}
	refs, err := t.store.ListRefs(ctx, threadID)
	return ThreadDetails{Key: key, Refs: refs}, err
}
