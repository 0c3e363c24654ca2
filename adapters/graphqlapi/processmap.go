package graphqlapi

import (
	"context"

	"github.com/graph-gophers/graphql-go"

	"github.com/threadengine/engine/app/insights"
)

// Query.processMap: a contract version as its threads really ran.

func (r *queryResolver) ProcessMap(ctx context.Context, a struct {
	ContractName string
	Version      *int32
	From, To     *string
}) (*processMapResolver, error) {
	v := 0
	if a.Version != nil {
		v = int(*a.Version)
	}
	pm, err := r.h.queries.ProcessMap.Handle(ctx, a.ContractName, v, deref(a.From), deref(a.To))
	if err != nil {
		return nil, err
	}
	return &processMapResolver{pm}, nil
}

type processMapResolver struct{ m insights.ProcessMap }

func (r *processMapResolver) ContractName() string   { return r.m.Contract.Name }
func (r *processMapResolver) Version() int32         { return int32(r.m.Contract.Version) }
func (r *processMapResolver) Since() string          { return rfc3339(r.m.Since) }
func (r *processMapResolver) Until() string          { return rfc3339(r.m.Until) }
func (r *processMapResolver) Started() float64       { return float64(r.m.Started) }
func (r *processMapResolver) NeverReached() []string { return append([]string{}, r.m.NeverReached...) }
func (r *processMapResolver) Nodes() []*processNodeResolver {
	out := make([]*processNodeResolver, len(r.m.Nodes))
	for i := range r.m.Nodes {
		out[i] = &processNodeResolver{r.m.Nodes[i]}
	}
	return out
}
func (r *processMapResolver) Edges() []*processEdgeResolver {
	out := make([]*processEdgeResolver, len(r.m.Edges))
	for i := range r.m.Edges {
		out[i] = &processEdgeResolver{r.m.Edges[i]}
	}
	return out
}

func msPtr(v int64) *float64 {
	if v <= 0 {
		return nil
	}
	f := float64(v)
	return &f
}

type processNodeResolver struct{ n insights.ProcessNode }

func (r *processNodeResolver) Step() string     { return r.n.Step }
func (r *processNodeResolver) Count() float64   { return float64(r.n.Count) }
func (r *processNodeResolver) P50Ms() *float64  { return msPtr(r.n.P50) }
func (r *processNodeResolver) P95Ms() *float64  { return msPtr(r.n.P95) }
func (r *processNodeResolver) InContract() bool { return r.n.InContract }

type processEdgeResolver struct{ e insights.ProcessEdge }

func (r *processEdgeResolver) From() string                 { return r.e.From }
func (r *processEdgeResolver) To() string                   { return r.e.To }
func (r *processEdgeResolver) Count() float64               { return float64(r.e.Count) }
func (r *processEdgeResolver) P50Ms() *float64              { return msPtr(r.e.P50) }
func (r *processEdgeResolver) P95Ms() *float64              { return msPtr(r.e.P95) }
func (r *processEdgeResolver) Allowed() bool                { return r.e.Allowed }
func (r *processEdgeResolver) ExampleThreadID() *graphql.ID { return idPtr(r.e.Example) }
