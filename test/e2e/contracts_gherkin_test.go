package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// The Threadify Gherkin examples are kept with the parser's tests.
const gherkinFixtures = "../../domain/gherkin/testdata/threadify-gherkin"

// sendSource posts or puts a contract source as text/plain.
func sendSource(t *testing.T, e *enginetest.Engine, method, path, src string) (*http.Response, []byte) {
	t.Helper()
	return e.DoWith(t, method, path, src, func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+e.AdminKey)
		r.Header.Set("Content-Type", "text/plain; charset=utf-8")
	})
}

type previewBody struct {
	Valid        bool                     `json:"valid"`
	SourceFormat string                   `json:"source_format"`
	Problems     []domain.ContractProblem `json:"problems"`
	Warnings     []domain.ContractProblem `json:"warnings"`
	Errors       []string                 `json:"errors"`
	ContentHash  string                   `json:"content_hash"`
	Contract     *struct {
		Name  string `json:"name"`
		Steps []struct {
			Name         string `json:"name"`
			ContentRules []struct {
				Field    string `json:"field"`
				Operator string `json:"operator"`
			} `json:"content_rules"`
		} `json:"steps"`
	} `json:"contract"`
	Graph *struct {
		Nodes []struct {
			ID   string   `json:"id"`
			Type string   `json:"type"`
			Next []string `json:"next"`
		} `json:"nodes"`
		EntryPoints []string `json:"entry_points"`
	} `json:"graph"`
}

// Every published example through preview and upload, on both stores:
// valid ones preview valid (with the compiled graph) and upload (201, as
// text/plain and as JSON); invalid ones preview with their expected first
// error and line, and uploading them is refused with it.
func TestGherkinFixturesOverHTTP(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(gherkinFixtures + "/*.feature")
	if err != nil || len(files) != 11 {
		t.Fatalf("fixtures %v %v", files, err)
	}
	lines := map[string]int{"invalid_dependency_cycle": 7, "invalid_group_single_member": 13, "invalid_optional_checked_field": 15,
		"invalid_regex_malformed": 15, "invalid_scenario": 15, "invalid_unknown_sentence": 15}
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".feature")
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			resp, body := sendSource(t, e, http.MethodPost, "/v1/contracts/preview", string(src))
			wantStatus(t, resp, body, http.StatusOK)
			p := decode[previewBody](t, body)
			if p.SourceFormat != "gherkin" {
				t.Errorf("%s: format %q", name, p.SourceFormat)
			}
			if strings.HasPrefix(name, "valid_") {
				if !p.Valid || len(p.Problems) != 0 || len(p.Errors) != 0 || p.Contract == nil || p.Graph == nil || p.ContentHash == "" ||
					len(p.Graph.Nodes) < len(p.Contract.Steps) || len(p.Graph.EntryPoints) == 0 {
					t.Errorf("%s: preview %s", name, body)
				}
				// Two upload as JSON {"source": …}, the others as text/plain.
				if strings.Contains(name, "payment") || strings.Contains(name, "legacy") {
					resp, body = e.Do(t, http.MethodPost, "/v1/contracts", e.AdminKey, map[string]string{"source": string(src)})
				} else {
					resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts", string(src))
				}
				wantStatus(t, resp, body, http.StatusCreated)
				if !strings.Contains(string(body), `"source_format":"gherkin"`) {
					t.Errorf("%s: upload %s", name, body)
				}
				continue
			}
			want, _ := os.ReadFile(strings.TrimSuffix(f, ".feature") + ".expect.txt")
			if p.Valid || len(p.Errors) == 0 || p.Errors[0] != strings.TrimSpace(string(want)) || p.Problems[0].Line != lines[name] || p.Contract != nil {
				t.Errorf("%s: preview %s\nwant first error %q on line %d", name, body, want, lines[name])
			}
			resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts", string(src))
			wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeInvalidContract))
			var refused struct {
				Problems []domain.ContractProblem `json:"problems"`
			}
			if err := json.Unmarshal(body, &refused); err != nil || len(refused.Problems) == 0 ||
				refused.Problems[0] != p.Problems[0] || refused.Problems[0].ReferenceText() != strings.TrimSpace(string(want)) {
				t.Errorf("%s: upload refused with %s", name, body)
			}
		}
		// The payment example's compiled rules, read back with its source.
		resp, body := e.Do(t, http.MethodGet, "/v1/contracts/payment_processing", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		src, _ := os.ReadFile(gherkinFixtures + "/valid_payment_processing.feature")
		var got struct {
			Source       string `json:"source"`
			SourceFormat string `json:"source_format"`
			MaxDuration  string `json:"max_duration"`
			FreeOrder    bool   `json:"free_order"`
			Steps        []struct {
				Name         string               `json:"name"`
				DependsOn    []string             `json:"depends_on"`
				ContentRules []domain.ContentRule `json:"content_rules"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(body, &got); err != nil || got.Source != string(src) || got.SourceFormat != "gherkin" || got.MaxDuration != "1h" || !got.FreeOrder ||
			len(got.Steps) != 2 || got.Steps[1].DependsOn[0] != "approval" || got.Steps[1].ContentRules[0].Operator != domain.OpGT {
			t.Errorf("read back %s", body)
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `"source_format":"gherkin"`) {
			t.Errorf("list %s", body)
		}
	})
}

const gherkinPayment = `Feature: pay_flow
Version: %s
Background:
  Given the thread must finish within "2d"
Rule: Approve
  When step "approval" is submitted
  Then owner must be "reviewer"
  And this step is an entry point
Rule: Charge
  When step "charge" is submitted
  Then owner must be "reviewer"
  And step "approval" must have succeeded
  And content "amount" must be a number greater than %s
  And this step is terminal
`

func payFlow(version, bound string) string {
	return strings.Replace(strings.Replace(gherkinPayment, "%s", version, 1), "%s", bound, 1)
}

// PUT publishes a new version of an existing contract: the Feature name
// must match the path, the version must be higher, the content changed.
func TestGherkinPutNewVersion(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := sendSource(t, e, http.MethodPut, "/v1/contracts/pay_flow", payFlow("2", "0"))
		wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))
		resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts", payFlow("2", "0"))
		wantStatus(t, resp, body, http.StatusCreated)
		if resp.Header.Get("Location") != "/v1/contracts/pay_flow/versions/2" {
			t.Errorf("POST keeps the source's Version: %s %s", resp.Header.Get("Location"), body)
		}
		// Only formatting, comments and the description differ.
		reformatted := "# reformatted\n" + strings.ReplaceAll(payFlow("3", "0"), "  ", "\t") + "\n\n"
		resp, body = sendSource(t, e, http.MethodPut, "/v1/contracts/pay_flow", reformatted)
		wantProblem(t, resp, body, http.StatusConflict, string(domain.CodeContractUnchanged))
		resp, body = sendSource(t, e, http.MethodPut, "/v1/contracts/pay_flow", payFlow("2", "5"))
		wantProblem(t, resp, body, http.StatusConflict, string(domain.CodeContractVersionConflict))
		resp, body = sendSource(t, e, http.MethodPut, "/v1/contracts/other_flow", payFlow("3", "5"))
		p := wantProblem(t, resp, body, http.StatusBadRequest, string(domain.CodeInvalidContract))
		if p.Field != "contract_name" || !strings.Contains(string(body), `"line":1`) {
			t.Errorf("name mismatch: %s", body)
		}
		resp, body = sendSource(t, e, http.MethodPut, "/v1/contracts/pay_flow", payFlow("3", "5"))
		wantStatus(t, resp, body, http.StatusCreated)
		resp, body = e.Do(t, http.MethodGet, "/v1/contracts/pay_flow/versions", e.AdminKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `"version":3`) || !strings.Contains(string(body), `"version":2`) {
			t.Errorf("versions %s", body)
		}
		// Viewers may preview but not publish.
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		resp, body = e.DoWith(t, http.MethodPut, "/v1/contracts/pay_flow", payFlow("4", "6"), func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+viewerKey)
			r.Header.Set("Content-Type", "text/plain")
		})
		wantProblem(t, resp, body, http.StatusForbidden, string(domain.CodeForbidden))
	})
}

// A name no contract can have gets the same coded answer on every store.
func TestContractNameNotFoundOnEveryStore(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		for _, path := range []string{"/v1/contracts/%00", "/v1/contracts/%00/versions", "/v1/contracts/a%20b/versions/1", "/v1/contracts/" + strings.Repeat("x", 300)} {
			resp, body := e.Do(t, http.MethodGet, path, e.AdminKey, nil)
			wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))
		}
		resp, body := e.Do(t, http.MethodDelete, "/v1/contracts/%00/versions/1", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))
		resp, body = sendSource(t, e, http.MethodPut, "/v1/contracts/%00", payFlow("1", "0"))
		wantProblem(t, resp, body, http.StatusNotFound, string(domain.CodeNotFound))
	})
}

// A thread on a Gherkin contract is judged by its rules: steps without
// next-step rules may come in any order, a prerequisite must have
// succeeded first, and the terminal step completes the thread.
func TestGherkinContractThread(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := sendSource(t, e, http.MethodPost, "/v1/contracts", payFlow("1", "0"))
		wantStatus(t, resp, body, http.StatusCreated)
		c := connectWS(t, e, e.AdminKey)
		r := c.ok(map[string]any{"action": "startThread", "contractName": "pay_flow", "refs": map[string]any{}, "role": "reviewer"})
		tid := r["threadId"].(string)
		r = c.ok(step(tid, "approval", "success", "a1", nil))
		if v, _ := r["validation"].(map[string]any); v["overallStatus"] != "passed" {
			t.Fatalf("approval %v", r)
		}
		// Approving twice is fine: no transition rules.
		r = c.ok(step(tid, "approval", "success", "a2", nil))
		if v, _ := r["validation"].(map[string]any); v["overallStatus"] != "passed" {
			t.Fatalf("second approval %v", r)
		}
		r = c.ok(step(tid, "charge", "success", "c1", map[string]any{"amount": "5"}))
		if r["threadStatus"] != "completed" {
			t.Fatalf("charge %v", r)
		}

		r = c.ok(map[string]any{"action": "startThread", "contractName": "pay_flow", "refs": map[string]any{}, "role": "reviewer"})
		tid = r["threadId"].(string)
		r = c.ok(step(tid, "charge", "success", "c2", map[string]any{"amount": "5"}))
		v, _ := r["validation"].(map[string]any)
		if v["overallStatus"] != "violated" || !strings.Contains(mustJSON(t, v), domain.IssueMissingDependency) {
			t.Fatalf("charge before approval %v", r)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
