package graphqlapi

import (
	"context"

	"github.com/threadengine/engine/ports"
)

// Thread.stepGroups and Thread.stepEdges: the outline of a long thread, one
// statement each for every thread of the list.

type stepGroupResolver struct{ v ports.StepGroupView }

func (r *stepGroupResolver) StepName() string    { return r.v.StepName }
func (r *stepGroupResolver) Steps() int32        { return int32(r.v.Steps) }
func (r *stepGroupResolver) Failed() int32       { return int32(r.v.Failed) }
func (r *stepGroupResolver) Succeeded() int32    { return int32(r.v.Succeeded) }
func (r *stepGroupResolver) FirstSeenAt() string { return rfc3339(r.v.FirstSeenAt) }

func (r *threadResolver) StepGroups(ctx context.Context) ([]*stepGroupResolver, error) {
	g := r.g
	m, err := g.groups.get(func() (map[string][]ports.StepGroupView, error) { return g.q.StepGroups(ctx, g.ids) })
	if err != nil {
		return nil, err
	}
	out := make([]*stepGroupResolver, 0, len(m[r.t.ID]))
	for _, v := range m[r.t.ID] {
		out = append(out, &stepGroupResolver{v})
	}
	return out, nil
}

type stepEdgeResolver struct{ v ports.StepEdgeView }

func (r *stepEdgeResolver) From() string { return r.v.From }
func (r *stepEdgeResolver) To() string   { return r.v.To }
func (r *stepEdgeResolver) Count() int32 { return int32(r.v.Count) }

func (r *threadResolver) StepEdges(ctx context.Context) ([]*stepEdgeResolver, error) {
	g := r.g
	m, err := g.edges.get(func() (map[string][]ports.StepEdgeView, error) { return g.q.StepEdges(ctx, g.ids) })
	if err != nil {
		return nil, err
	}
	out := make([]*stepEdgeResolver, 0, len(m[r.t.ID]))
	for _, v := range m[r.t.ID] {
		out = append(out, &stepEdgeResolver{v})
	}
	return out, nil
}
