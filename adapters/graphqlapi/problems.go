package graphqlapi

import (
	"context"

	"github.com/graph-gophers/graphql-go"

	"github.com/threadengine/engine/app/insights"
)

// Query.problems: unhealthy threads grouped by cause.

func (r *queryResolver) Problems(ctx context.Context, a struct{ Hours *int32 }) (*problemReportResolver, error) {
	rep, err := r.h.queries.Problems.Handle(ctx, i32(a.Hours))
	if err != nil {
		return nil, err
	}
	return &problemReportResolver{rep}, nil
}

type problemReportResolver struct{ r insights.ProblemReport }

func (r *problemReportResolver) Since() string      { return rfc3339(r.r.Since) }
func (r *problemReportResolver) Until() string      { return rfc3339(r.r.Until) }
func (r *problemReportResolver) BucketHours() int32 { return int32(r.r.BucketHours) }
func (r *problemReportResolver) Total() int32       { return int32(r.r.Total) }
func (r *problemReportResolver) Truncated() bool    { return r.r.Truncated }
func (r *problemReportResolver) Buckets() []string {
	out := make([]string, len(r.r.Buckets))
	for i, b := range r.r.Buckets {
		out[i] = rfc3339(b)
	}
	return out
}
func (r *problemReportResolver) Groups() []*problemGroupResolver {
	out := make([]*problemGroupResolver, len(r.r.Groups))
	for i := range r.r.Groups {
		out[i] = &problemGroupResolver{r.r.Groups[i]}
	}
	return out
}

type problemGroupResolver struct{ g insights.ProblemGroup }

func (r *problemGroupResolver) ContractName() *string { return strPtr(r.g.ContractName) }
func (r *problemGroupResolver) ContractVersion() *int32 {
	if r.g.ContractName == "" {
		return nil
	}
	v := int32(r.g.ContractVersion)
	return &v
}
func (r *problemGroupResolver) Rule() string                 { return r.g.Rule }
func (r *problemGroupResolver) Step() string                 { return r.g.Step }
func (r *problemGroupResolver) MessageClass() *string        { return strPtr(r.g.MessageClass) }
func (r *problemGroupResolver) Count() int32                 { return int32(r.g.Count) }
func (r *problemGroupResolver) ExampleThreadID() *graphql.ID { return idPtr(r.g.Example) }
func (r *problemGroupResolver) Trend() []int32 {
	out := make([]int32, len(r.g.Trend))
	for i, n := range r.g.Trend {
		out[i] = int32(n)
	}
	return out
}
