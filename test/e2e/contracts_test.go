package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

const e2eContract = `contract_name: order_flow
version: %d
description: Orders from checkout to delivery
entry_points: [validate]
parties: [checkout, warehouse]
steps:
  - id: validate
    owner: checkout
    timeout: 30s
    business_context: {required: [items], optional: [coupon]}
  - id: ship
    owner: warehouse
    type: human_in_loop
transitions:
  - {from: validate, to: ship, max_retries: 3}
terminal_steps: [ship]
validation: {max_duration: 1h30m}
`

func contractYAML(v int) string { return strings.Replace(e2eContract, "%d", strconv.Itoa(v), 1) }

// postYAML uploads src with the given content type.
func postYAML(t *testing.T, e *enginetest.Engine, key, contentType string, src string) (*http.Response, []byte) {
	t.Helper()
	return e.DoWith(t, http.MethodPost, "/v1/contracts", src, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", contentType)
	})
}

type contractJSON struct {
	Name          string   `json:"name"`
	Version       int      `json:"version"`
	LatestVersion int      `json:"latest_version"`
	EntryPoints   []string `json:"entry_points"`
	MaxDuration   string   `json:"max_duration"`
	CreatedBy     string   `json:"created_by"`
	Source        *string  `json:"source"`
	Steps         []struct {
		Name     string   `json:"name"`
		Timeout  string   `json:"timeout"`
		Required []string `json:"required"`
	} `json:"steps"`
	Transitions []struct {
		From       string   `json:"from"`
		To         []string `json:"to"`
		MaxRetries int      `json:"max_retries"`
		CanRetry   bool     `json:"can_retry"`
	} `json:"transitions"`
}

func TestContractsUploadAndRead(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		member, memberKey := e.NewUser(t, domain.RoleMember)
		_, viewerKey := e.NewUser(t, domain.RoleViewer)

		// A member uploads version 1 as YAML.
		resp, body := postYAML(t, e, memberKey, "application/yaml", contractYAML(1))
		wantStatus(t, resp, body, http.StatusCreated)
		c := decode[contractJSON](t, body)
		if c.Name != "order_flow" || c.Version != 1 || c.CreatedBy != member.ID || c.MaxDuration != "1h30m" ||
			len(c.Steps) != 2 || c.Steps[0].Timeout != "30s" || c.Steps[0].Required[0] != "items" ||
			c.Transitions[0].MaxRetries != 3 || !c.Transitions[0].CanRetry || c.Source != nil {
			t.Fatalf("created contract = %s", body)
		}
		if loc := resp.Header.Get("Location"); loc != "/v1/contracts/order_flow/versions/1" {
			t.Errorf("Location = %q", loc)
		}

		// The same version again, or an older one, is a conflict.
		resp, body = postYAML(t, e, memberKey, "text/yaml", contractYAML(1))
		p := wantProblem(t, resp, body, http.StatusConflict, string(domain.CodeContractVersionConflict))
		if p.Field != "version" || !strings.Contains(p.Detail, "already exists") {
			t.Errorf("conflict problem = %+v", p)
		}

		// The admin uploads version 2 as JSON {"source": ...}.
		resp, body = e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"source": contractYAML(2)})
		wantStatus(t, resp, body, http.StatusCreated)
		resp, body = postYAML(t, e, memberKey, "application/yaml", contractYAML(1))
		wantProblem(t, resp, body, http.StatusConflict, string(domain.CodeContractVersionConflict))

		// A viewer may read but not upload, whatever the body.
		resp, body = postYAML(t, e, viewerKey, "application/yaml", contractYAML(9))
		wantProblem(t, resp, body, http.StatusForbidden, string(domain.CodeForbidden))
		resp, body = postYAML(t, e, viewerKey, "application/yaml", "not: [valid")
		wantProblem(t, resp, body, http.StatusForbidden, string(domain.CodeForbidden))
		resp, body = postYAML(t, e, "", "application/yaml", contractYAML(9))
		wantProblem(t, resp, body, http.StatusUnauthorized, string(domain.CodeUnauthenticated))

		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow", viewerKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		c = decode[contractJSON](t, body)
		if c.Version != 2 || c.LatestVersion != 2 || c.CreatedBy != e.Admin.ID || c.Source == nil || *c.Source != contractYAML(2) {
			t.Errorf("latest = %s", body)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/1", viewerKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if c = decode[contractJSON](t, body); c.Version != 1 || c.LatestVersion != 2 || *c.Source != contractYAML(1) {
			t.Errorf("v1 = %s", body)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/3", viewerKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions/zero", viewerKey, nil)
		wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeValidationFailed))
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/nope", viewerKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))

		resp, body = e.Do(t, http.MethodGet, "/v1/contracts", viewerKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		list := decode[struct {
			Contracts []struct {
				Name      string `json:"name"`
				Version   int    `json:"version"`
				StepCount int    `json:"step_count"`
			} `json:"contracts"`
		}](t, body)
		if len(list.Contracts) != 1 || list.Contracts[0].Version != 2 || list.Contracts[0].StepCount != 2 {
			t.Errorf("list = %s", body)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow/versions", viewerKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `"version":2`) || strings.Index(string(body), `"version":2`) > strings.Index(string(body), `"version":1`) {
			t.Errorf("versions (newest first) = %s", body)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts", "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, string(domain.CodeUnauthenticated))
	})
}

func TestContractsInvalidUploadListsEveryProblem(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		src := `contract_name: "bad name"
version: 0
parties: [checkout]
entry_points: [start]
steps:
  - id: validate
    owner: nobody
    timeout: soon
  - id: validate
transitions:
  - {from: validate, to: [ghost]}
terminal_steps: [ghost]
colour: blue
`
		resp, body := postYAML(t, e, e.AdminKey, "application/yaml", src)
		wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeInvalidContract))
		var p struct {
			Problems []domain.ContractProblem `json:"problems"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		fields := map[string]bool{}
		for _, pr := range p.Problems {
			fields[pr.Field] = true
			if pr.Message == "" {
				t.Errorf("problem without message: %+v", pr)
			}
		}
		for _, f := range []string{"contract_name", "version", "entry_points[0]", "steps[0].owner", "steps[0].timeout",
			"steps[1].id", "transitions[0].to[0]", "terminal_steps[0]", "colour"} {
			if !fields[f] {
				t.Errorf("no problem for %s in %s", f, body)
			}
		}

		// Same through JSON, and through the preview endpoint (200, valid false).
		resp, body = e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"source": src})
		wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeInvalidContract))
		resp, body = postPreview(t, e, src)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `"valid":false`) || !strings.Contains(string(body), `"field":"colour"`) {
			t.Errorf("preview of invalid = %s", body)
		}
		resp, body = postPreview(t, e, contractYAML(1))
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `"valid":true`) {
			t.Errorf("preview of valid = %s", body)
		}
		// Preview stores nothing.
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/order_flow", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))

		// Body problems.
		resp, body = postYAML(t, e, e.AdminKey, "application/xml", contractYAML(1))
		wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeValidationFailed))
		resp, body = e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"yaml": contractYAML(1)})
		wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeValidationFailed))
		resp, body = postYAML(t, e, e.AdminKey, "application/yaml", "contract_name: x\n#"+strings.Repeat("x", domain.MaxContractSourceBytes))
		wantProblem(t, resp, body, http.StatusRequestEntityTooLarge, string(domain.CodeBodyTooLarge))
		resp, body = postYAML(t, e, e.AdminKey, "application/yaml", "")
		wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeInvalidContract))
	})
}

func postPreview(t *testing.T, e *enginetest.Engine, src string) (*http.Response, []byte) {
	t.Helper()
	return e.DoWith(t, http.MethodPost, "/v1/contracts/preview", src, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+e.AdminKey)
		r.Header.Set("Content-Type", "application/yaml")
	})
}
