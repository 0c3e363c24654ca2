package threads

// What the start commands (StartThread, StartThreadWithKey) share: the input
// and the building of a new thread.

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// StartThreadInput is a new thread. Contract is "", "name", "name:N" or
// "name:vN"; Role is the party the caller starts it as (required on contract
// threads).
type StartThreadInput struct {
	Contract    string
	Role        string
	Label       string
	ServiceName string
	Refs        map[string]string
	Tags        []string
}

// newThread checks in and builds the thread (domain.NewThread: the caller
// is its owner party).
func newThread(ctx context.Context, contracts *contractCache, clock ports.Clock, p domain.Principal, in StartThreadInput) (domain.Thread, error) {
	if err := checkRefs(in.Refs); err != nil {
		return domain.Thread{}, err
	}
	if len(in.Tags) > MaxTags {
		return domain.Thread{}, domain.Invalid("tags", "at most %d tags", MaxTags)
	}
	var c *domain.Contract
	if strings.TrimSpace(in.Contract) != "" {
		cc, err := contracts.contractByRef(ctx, in.Contract)
		if err != nil {
			return domain.Thread{}, err
		}
		c = &cc
	}
	th, err := domain.NewThread(uuid.NewString(), authz.Actor(p, in.Role), c, now(clock))
	if err != nil {
		return domain.Thread{}, err
	}
	th.Label, th.ServiceName, th.Tags = in.Label, in.ServiceName, in.Tags
	if th.Label == "" {
		th.Label = in.Refs["label"]
	}
	return th, nil
}
