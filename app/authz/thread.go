package authz

import (
	"time"

	"github.com/threadengine/engine/domain"
)

// Actor is the caller acting on a thread under role (the role its
// connection started or joined the thread with; "" when it declared none).
func Actor(p domain.Principal, role string) domain.Actor {
	return domain.Actor{PrincipalKind: string(p.Kind), PrincipalID: p.ID, Role: role, Scoped: p.PartyScoped()}
}

// CheckVisible answers a thread outside p's read scope exactly as an
// unknown one: a party-scoped service account sees only the threads it
// started or holds an unexpired grant on (the read side applies the same
// rule, see readmodel.Scope).
func CheckVisible(p domain.Principal, th *domain.Thread, now time.Time) error {
	if p.PartyScoped() && th.HiddenFrom(p.ID, now) {
		return domain.NotFound("thread") // exactly what an unknown id gets
	}
	return nil
}
