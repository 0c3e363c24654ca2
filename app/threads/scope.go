package threads

import (
	"context"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// checkVisibleID is authz.CheckVisible for a thread id; it costs a read only
// for party-scoped callers.
func checkVisibleID(ctx context.Context, threads ports.ThreadGetter, clock ports.Clock, p domain.Principal, threadID string) error {
	if !p.PartyScoped() {
		return nil
	}
	th, err := threads.GetThread(ctx, threadID)
	if err != nil {
		return err
	}
	return authz.CheckVisible(p, &th, now(clock))
}

// checkJoinByID keeps a party-scoped service account from joining, by id
// alone, a thread it is not already a party of: joining would make the thread
// visible to it. With an invitation token the inviter chose to share the
// thread, and the join goes on.
func checkJoinByID(p domain.Principal, th *domain.Thread, token string, now time.Time) error {
	if token != "" {
		return nil
	}
	return authz.CheckVisible(p, th, now)
}
