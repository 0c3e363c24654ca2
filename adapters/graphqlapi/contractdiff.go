package graphqlapi

import (
	"context"
	"encoding/json"

	"github.com/threadengine/engine/domain"
)

// contractDiffView is Query.contractDiff's answer. It is JSON text rather
// than GraphQL types because the schema's whole introspection (the
// explorer's) must stay within the cost limit, and two more types would
// push it over.
type contractDiffView struct {
	From    int                  `json:"from"`
	To      int                  `json:"to"`
	Changes []contractChangeView `json:"changes"`
}

type contractChangeView struct {
	Part    string   `json:"part"` // step | transition | rule | setting
	Kind    string   `json:"kind"` // added | removed | changed
	Name    string   `json:"name"`
	Details []string `json:"details"`
}

// ContractDiff: what changed between two versions of a contract
// (domain.DiffContracts), part by part.
func (r *queryResolver) ContractDiff(ctx context.Context, a struct {
	Name     string
	From, To int32
}) (JSON, error) {
	d, err := r.h.queries.ContractDiff.Handle(ctx, a.Name, int(a.From), int(a.To))
	if err != nil {
		return "", err
	}
	v := contractDiffView{From: d.From, To: d.To, Changes: []contractChangeView{}}
	for _, p := range []struct {
		part string
		l    []domain.ContractChange
	}{{"step", d.Steps}, {"transition", d.Transitions}, {"rule", d.Rules}, {"setting", d.Settings}} {
		for _, c := range p.l {
			v.Changes = append(v.Changes, contractChangeView{Part: p.part, Kind: string(c.Kind), Name: c.Name, Details: append([]string{}, c.Details...)})
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return JSON(b), nil
}
