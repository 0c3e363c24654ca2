package app

import (
	"context"
	"time"

	"github.com/threadengine/engine/domain"
)

// checkVisible answers a thread outside p's read scope exactly as an unknown
// one: a party-scoped service account sees only the threads it started or
// holds an unexpired grant on (the read side applies the same rule, see
// Queries.reader).
func checkVisible(p domain.Principal, th *domain.Thread, now time.Time) error {
	if p.PartyScoped() && th.HiddenFrom(p.ID, now) {
		return domain.NotFound("thread") // exactly what an unknown id gets
	}
	return nil
}

// checkVisibleID is checkVisible for a thread id; it costs a read only for
// party-scoped callers.
func (t *Threads) checkVisibleID(ctx context.Context, p domain.Principal, threadID string) error {
	if !p.PartyScoped() {
		return nil
	}
	th, err := t.store.GetThread(ctx, threadID)
	if err != nil {
		return err
	}
	return checkVisible(p, &th, t.now())
}

// checkJoinByID keeps a party-scoped service account from joining, by id
// alone, a thread it is not already a party of: joining would make the thread
// visible to it. With an invitation token the inviter chose to share the
// thread, and the join goes on.
func checkJoinByID(p domain.Principal, th *domain.Thread, token string, now time.Time) error {
	if token != "" {
		return nil
	}
	return checkVisible(p, th, now)
}
