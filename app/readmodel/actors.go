package readmodel

import (
	"context"
	"strings"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// MaxResolveActors bounds one ResolveActors call so a caller cannot turn it
// into a bulk export of the principal tables.
const MaxResolveActors = 100

// Actor is a principal id (a thread owner, a step actor) resolved to
// something a human or an agent can read.
type Actor struct {
	ID   string
	Name string
	Type domain.PrincipalKind
}

// ResolvedActors is the answer to ResolveActors: the ids that name a known
// principal, and the ones that do not (deleted rows, free-text actors such as
// a service name recorded by an SDK).
type ResolvedActors struct {
	Actors     []Actor
	Unresolved []string
}

// Actors turns principal ids into names. It is the one place transports
// (GraphQL, MCP) resolve actors, so the disclosure rule below lives once.
type Actors struct {
	users ports.Users
	sas   ports.ServiceAccounts
}

// NewActors builds the actor resolver.
func NewActors(users ports.Users, sas ports.ServiceAccounts) *Actors {
	if users == nil || sas == nil {
		panic("readmodel.NewActors: missing dependency")
	}
	return &Actors{users: users, sas: sas}
}

// ResolveActors maps ids to principals, keeping the callers' order and
// dropping duplicates and blanks. Anyone who may read threads may resolve the
// actors that appear on them; a user without a full name is shown by email
// only to callers that may read the user list (users.read), so a service
// account never learns staff emails through this door.
func (a *Actors) ResolveActors(ctx context.Context, ids []string) (ResolvedActors, error) {
	caller, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return ResolvedActors{}, err
	}
	seen := make(map[string]bool, len(ids))
	var uniq []string
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		uniq = append(uniq, id)
	}
	if len(uniq) == 0 {
		return ResolvedActors{}, domain.Invalid("ids", "give at least one non-empty id")
	}
	if len(uniq) > MaxResolveActors {
		return ResolvedActors{}, domain.Invalid("ids", "at most %d ids per call (got %d)", MaxResolveActors, len(uniq))
	}
	showEmail := caller.Can(domain.PermUsersRead)
	out := ResolvedActors{Actors: []Actor{}, Unresolved: []string{}}
	for _, id := range uniq {
		act, ok, err := a.Resolve(ctx, id, showEmail)
		if err != nil {
			return ResolvedActors{}, err
		}
		if ok {
			out.Actors = append(out.Actors, act)
		} else {
			out.Unresolved = append(out.Unresolved, id)
		}
	}
	return out, nil
}

// Resolve names one principal id (false: none has it). A user without a
// full name is named by email only when showEmail (the caller may read the
// user list).
func (a *Actors) Resolve(ctx context.Context, id string, showEmail bool) (Actor, bool, error) {
	u, err := a.users.GetUser(ctx, id)
	switch {
	case err == nil:
		name := u.FullName
		if name == "" && showEmail {
			name = u.Email
		}
		return Actor{ID: u.ID, Name: name, Type: domain.PrincipalUser}, true, nil
	case domain.KindOf(err) != domain.KindNotFound:
		return Actor{}, false, err
	}
	sa, err := a.sas.GetServiceAccount(ctx, id)
	switch {
	case err == nil:
		return Actor{ID: sa.ID, Name: sa.Name, Type: domain.PrincipalServiceAccount}, true, nil
	case domain.KindOf(err) != domain.KindNotFound:
		return Actor{}, false, err
	}
	return Actor{}, false, nil
}
