package graphqlapi

import (
	"context"

	"github.com/threadengine/engine/domain"
)

// Query.contractDiff: what changed between two versions of a contract.

func (r *queryResolver) ContractDiff(ctx context.Context, a struct {
	Name     string
	From, To int32
}) (*contractDiffResolver, error) {
	d, err := r.h.queries.ContractDiff(ctx, a.Name, int(a.From), int(a.To))
	if err != nil {
		return nil, err
	}
	return &contractDiffResolver{d}, nil
}

type contractDiffResolver struct{ d domain.ContractDiff }

func (r *contractDiffResolver) Name() string { return r.d.Name }
func (r *contractDiffResolver) From() int32  { return int32(r.d.From) }
func (r *contractDiffResolver) To() int32    { return int32(r.d.To) }
func (r *contractDiffResolver) Same() bool   { return r.d.Empty() }
func (r *contractDiffResolver) Steps() []*contractChangeResolver {
	return changes(r.d.Steps)
}
func (r *contractDiffResolver) Transitions() []*contractChangeResolver {
	return changes(r.d.Transitions)
}
func (r *contractDiffResolver) Rules() []*contractChangeResolver { return changes(r.d.Rules) }
func (r *contractDiffResolver) Settings() []*contractChangeResolver {
	return changes(r.d.Settings)
}

func changes(l []domain.ContractChange) []*contractChangeResolver {
	out := make([]*contractChangeResolver, len(l))
	for i := range l {
		out[i] = &contractChangeResolver{l[i]}
	}
	return out
}

type contractChangeResolver struct{ c domain.ContractChange }

func (r *contractChangeResolver) Kind() string      { return string(r.c.Kind) }
func (r *contractChangeResolver) Name() string      { return r.c.Name }
func (r *contractChangeResolver) Details() []string { return append([]string{}, r.c.Details...) }
