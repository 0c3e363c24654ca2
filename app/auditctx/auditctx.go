// Package auditctx gives the write of an audit line its own context. A
// line records an action that has already committed; written with the
// request's or the job's context, it was lost when that ended first (a
// client disconnecting after its answer was decided, the engine stopping
// mid-sweep), leaving a change nobody can find in the audit log.
package auditctx

import (
	"context"
	"time"
)

// WriteTimeout bounds writing the line once ctx has ended.
const WriteTimeout = 10 * time.Second

// Detached is ctx's values (principal, trace) without its cancellation,
// for WriteTimeout at most.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
}
