package threads

// The ThreadDetails query: a thread's application key and refs (the
// WebSocket thread reply).

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ThreadDetails are what a thread reply shows beyond the thread.
type ThreadDetails struct {
	Key  string
	Refs map[string]string
}

// ThreadDetailsHandler returns a thread's key and refs; one of the Queries.
type ThreadDetailsHandler struct{ details ports.ThreadDetailsReader }

// NewThreadDetailsHandler builds ThreadDetails.
func NewThreadDetailsHandler(details ports.ThreadDetailsReader) ThreadDetailsHandler {
	return ThreadDetailsHandler{details: details}
}

// Handle returns a thread's application key and refs.
func (h ThreadDetailsHandler) Handle(ctx context.Context, threadID string) (ThreadDetails, error) {
	if _, err := authz.Require(ctx, domain.PermThreadsRead); err != nil {
		return ThreadDetails{}, err
	}
	key, err := h.details.ThreadKey(ctx, threadID)
	if err != nil {
		return ThreadDetails{}, err
	}
	refs, err := h.details.ListRefs(ctx, threadID)
	return ThreadDetails{Key: key, Refs: refs}, err
}
