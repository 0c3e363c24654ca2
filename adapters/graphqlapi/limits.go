package graphqlapi

import (
	"context"
	"errors"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readgate"
	"github.com/threadengine/engine/domain"
)

// Limits bound one operation's database work and bytes (config
// limits.graphql, docs/operators/limits.md). The zero value bounds
// nothing beyond the cost limit.
type Limits struct {
	// MaxDuration is the operation's deadline, pricing reads included: an
	// operation still running then is stopped and answered query_timeout.
	MaxDuration time.Duration
	// MaxResponseBytes refuses an answer larger than this
	// (limit_exceeded, graphql_response_bytes).
	MaxResponseBytes int
	// Gate admits operations (concurrency and per-principal budget).
	Gate *readgate.Gate
	// Refused counts refusals by limit name.
	Refused func(limit string)
}

// LimitResponseBytes names the response byte budget.
const LimitResponseBytes = "graphql_response_bytes"

// LimitDuration names the deadline (counted when an operation is cut).
const LimitDuration = "graphql_duration"

// SetLimits applies l to every operation. Call it before serving.
func (h *Handler) SetLimits(l Limits) {
	if l.Refused == nil {
		l.Refused = func(string) {}
	}
	h.limits = l
}

// principalKey names the principal of ctx for the gate.
func principalKey(ctx context.Context) string {
	p, _ := authz.PrincipalFrom(ctx)
	return p.Key()
}

// errQueryTimeout is the answer of an operation cut by its deadline.
func (h *Handler) errQueryTimeout() *domain.Error {
	e := domain.E(domain.KindUnavailable, domain.CodeQueryTimeout,
		"the operation ran longer than %s and was stopped: ask for less (fewer aliases or list items, no totalCount, "+
			"no sort by DURATION, no deep offset) or retry later", h.limits.MaxDuration).
		WithDetail("limit", LimitDuration)
	e.RetryAfter = time.Second
	return e
}

// cut reports whether the operation's own deadline ended it (not the
// client going away).
func cut(parent, op context.Context) bool {
	return parent.Err() == nil && errors.Is(op.Err(), context.DeadlineExceeded)
}

// errTooLarge refuses an answer of n bytes.
func (h *Handler) errTooLarge(n int) *domain.Error {
	return domain.LimitExceeded(domain.KindTooLarge, LimitResponseBytes,
		"the answer holds %d bytes, more than the %d allowed: select fewer fields or a smaller page", n, h.limits.MaxResponseBytes).
		WithDetail("max", h.limits.MaxResponseBytes)
}
