package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// Defect 7: the three contract YAMLs published in the Threadify docs
// (testdata/threadify-docs, copied unchanged) are each refused only for the
// real errors in them, every one named; transition timeout is accepted.
func TestContractsFromTheThreadifyDocs(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		// Steps its transitions and terminal steps name are never defined,
		// and one owner is not a listed party.
		"inventory_delivery_v3.yaml": {"steps[2].owner", "terminal_steps[0]", "terminal_steps[1]",
			"transitions[1].to[0]", "transitions[1].to[1]"},
		"order_fulfillment.yaml": {"terminal_steps[0]", "terminal_steps[1]", "transitions[1].to[1]"},
		// The Node SDK docs' sketch uses another shape: name, a decimal
		// version and steps as a mapping. Its entry point is one of those
		// steps, so it is not reported as unknown as well.
		"node-sdk-documentation-order_fulfillment.yaml": {"contract_name", "name", "steps", "version"},
	}
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		for file, fields := range want {
			src, err := os.ReadFile("testdata/threadify-docs/" + file)
			if err != nil {
				t.Fatal(err)
			}
			resp, body := postYAML(t, e, e.AdminKey, "application/yaml", string(src))
			wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeInvalidContract))
			var p struct {
				Problems []domain.ContractProblem `json:"problems"`
			}
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pr := range p.Problems {
				got = append(got, pr.Field)
				if strings.Contains(pr.Message, `"timeout"`) {
					t.Errorf("%s: transition timeout refused: %+v", file, pr)
				}
			}
			sort.Strings(got)
			if strings.Join(got, " ") != strings.Join(fields, " ") {
				t.Errorf("%s: problems at %v, want exactly %v (%s)", file, got, fields, body)
			}
		}
		// With its undefined steps added, order_fulfillment uploads as is
		// (transition and thread timeouts included).
		src, _ := os.ReadFile("testdata/threadify-docs/order_fulfillment.yaml")
		fixed := strings.Replace(string(src), "# Transitions", `  - id: order_cancelled
    owner: merchant
  - id: order_delivered
    owner: logistics

# Transitions`, 1)
		fixed = strings.Replace(fixed, "      - order_cancelled\n", "      - order_cancelled\n    timeout: 2m\n", 1)
		resp, body := postYAML(t, e, e.AdminKey, "application/yaml", fixed)
		wantStatus(t, resp, body, http.StatusCreated)
		c := connectWS(t, e, e.AdminKey)
		c.ok(map[string]any{"action": "startThread", "contractName": "order_fulfillment:v1", "role": "merchant", "refs": map[string]any{}})
	})
}

// Defect 7: a contract with no parties and no owners uploads and every SDK
// can start a thread on it, with whatever role it sends (or none).
func TestOpenContractThreads(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := postYAML(t, e, e.AdminKey, "application/yaml", `contract_name: open_flow
version: 1
entry_points: [a]
steps:
  - id: a
  - id: b
transitions:
  - from: a
    to: b
    timeout: 5m
terminal_steps: [b]
`)
		wantStatus(t, resp, body, http.StatusCreated)
		c := connectWS(t, e, e.AdminKey)
		for _, role := range []any{"participant", nil} {
			tid := c.ok(map[string]any{"action": "startThread", "contractName": "open_flow", "role": role, "refs": map[string]any{}})["threadId"].(string)
			c.ok(step(tid, "a", "success", "a", nil))
			if r := c.ok(step(tid, "b", "success", "b", nil)); r["threadStatus"] != "completed" {
				t.Fatalf("open contract thread (role %v): %v", role, r)
			}
		}
	})
}
