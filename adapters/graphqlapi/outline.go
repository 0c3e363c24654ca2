package graphqlapi

import (
	"context"

	"github.com/threadengine/engine/ports"
)

// Thread.stepGroups (with each group's previous steps): the outline of a long thread, one
// statement per kind for every thread of the list.

type stepGroupResolver struct {
	v    ports.StepGroupView
	prev []string
}

func (r *stepGroupResolver) StepName() string        { return r.v.StepName }
func (r *stepGroupResolver) Steps() int32            { return int32(r.v.Steps) }
func (r *stepGroupResolver) Failed() int32           { return int32(r.v.Failed) }
func (r *stepGroupResolver) Succeeded() int32        { return int32(r.v.Succeeded) }
func (r *stepGroupResolver) FirstSeenAt() string     { return rfc3339(r.v.FirstSeenAt) }
func (r *stepGroupResolver) PreviousSteps() []string { return append([]string{}, r.prev...) }

// StepGroups carries each group's previous steps (the step orders taken),
// so the graph of a long thread needs one field.
func (r *threadResolver) StepGroups(ctx context.Context) ([]*stepGroupResolver, error) {
	g := r.g
	m, err := g.groups.get(func() (map[string][]ports.StepGroupView, error) { return g.reads.StepGroups.Handle(ctx, g.ids) })
	if err != nil {
		return nil, err
	}
	e, err := g.edges.get(func() (map[string][]ports.StepEdgeView, error) { return g.reads.StepEdges.Handle(ctx, g.ids) })
	if err != nil {
		return nil, err
	}
	prev := map[string][]string{}
	for _, x := range e[r.t.ID] {
		if x.From != "" {
			prev[x.To] = append(prev[x.To], x.From)
		}
	}
	out := make([]*stepGroupResolver, 0, len(m[r.t.ID]))
	for _, v := range m[r.t.ID] {
		out = append(out, &stepGroupResolver{v: v, prev: prev[v.StepName]})
	}
	return out, nil
}
