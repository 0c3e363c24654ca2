package domain

import (
	"reflect"
	"testing"
	"time"
)

func diffBase() Contract {
	return Contract{
		Name: "order", Version: 1, Parties: []string{"shop", "wh"},
		EntryPoints: []string{"place"}, TerminalSteps: []string{"ship"},
		Steps: []ContractStep{
			{Name: "place", Owner: "shop", Type: StepTypeManaged, Required: []string{"orderId"},
				ContentRules: []ContentRule{{Field: "total", Operator: OpGT, Value: "0"}}},
			{Name: "ship", Owner: "wh", Type: StepTypeManaged},
		},
		Transitions: []Transition{{From: "place", To: []string{"ship"}, CanRetry: true}},
	}
}

func TestDiffContracts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(c *Contract)
		want ContractDiff
	}{
		{"same process", func(c *Contract) {}, ContractDiff{}},
		{"one step added between two", func(c *Contract) {
			c.Steps = append(c.Steps, ContractStep{Name: "pack", Owner: "wh", Type: StepTypeManaged})
			c.Transitions = []Transition{{From: "place", To: []string{"pack"}, CanRetry: true}, {From: "pack", To: []string{"ship"}, CanRetry: true}}
		}, ContractDiff{
			Steps: []ContractChange{{Kind: ChangeAdded, Name: "pack"}},
			Transitions: []ContractChange{
				{Kind: ChangeAdded, Name: "pack → ship"},
				{Kind: ChangeAdded, Name: "place → pack"},
				{Kind: ChangeRemoved, Name: "place → ship"},
			},
		}},
		{"step removed with its rule", func(c *Contract) {
			c.Steps = c.Steps[1:]
			c.Transitions = nil
			c.EntryPoints = []string{"ship"}
		}, ContractDiff{
			Steps:       []ContractChange{{Kind: ChangeRemoved, Name: "place"}},
			Transitions: []ContractChange{{Kind: ChangeRemoved, Name: "place → ship"}},
			Rules:       []ContractChange{{Kind: ChangeRemoved, Name: "place: total gt 0"}},
			Settings:    []ContractChange{{Kind: ChangeChanged, Name: "entry points", Details: []string{"place → ship"}}},
		}},
		{"owner, required fields and retry policy changed", func(c *Contract) {
			c.Steps[0].Owner = "wh"
			c.Steps[0].Required = []string{"orderId", "sku"}
			c.Transitions[0].MaxRetries = 3
			c.Transitions[0].Timeout = time.Minute
		}, ContractDiff{
			Steps:       []ContractChange{{Kind: ChangeChanged, Name: "place", Details: []string{"owner: shop → wh", "required: orderId → orderId, sku"}}},
			Transitions: []ContractChange{{Kind: ChangeChanged, Name: "place → ship", Details: []string{"max retries: 0 → 3", "timeout: 0s → 1m0s"}}},
		}},
		{"a rule edited is one removed and one added", func(c *Contract) {
			c.Steps[0].ContentRules = []ContentRule{{Field: "total", Operator: OpGTE, Value: "1"}}
			c.Steps[1].SemanticRules = []SemanticRule{{Field: "note", Question: "polite?"}}
		}, ContractDiff{
			Rules: []ContractChange{
				{Kind: ChangeRemoved, Name: "place: total gt 0"},
				{Kind: ChangeAdded, Name: "place: total gte 1"},
				{Kind: ChangeAdded, Name: `ship: note asks "polite?"`},
			},
		}},
		{"order of lists does not matter", func(c *Contract) {
			c.Parties = []string{"wh", "shop"}
			c.Steps[0], c.Steps[1] = c.Steps[1], c.Steps[0]
		}, ContractDiff{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := diffBase(), diffBase()
			b.Version = 2
			b.Steps = append([]ContractStep{}, a.Steps...)
			b.Transitions = append([]Transition{}, a.Transitions...)
			tc.edit(&b)
			got := DiffContracts(a, b)
			tc.want.Name, tc.want.From, tc.want.To = "order", 1, 2
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			if got.Empty() != (len(tc.want.Steps)+len(tc.want.Transitions)+len(tc.want.Rules)+len(tc.want.Settings) == 0) {
				t.Fatal("Empty disagrees")
			}
		})
	}
}
