package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

const replayPublished = `Feature: refund
Version: 1

Rule: Refund
  When step "refund" is submitted
  Then owner must be "support"
  And this step is an entry point
  And this step is terminal
`

// The draft judges the refund's amount.
const replayDraft = `Feature: refund
Version: 2

Rule: Refund
  When step "refund" is submitted
  Then owner must be "support"
  And content "amount" must be a number greater than 0
  And this step is an entry point
  And this step is terminal
`

type replayBody struct {
	Contract string `json:"contract"`
	Complete bool   `json:"complete"`
	Threads  struct {
		Requested, Judged, Refused, Violated, Passed int
		NewlyFailing                                 int      `json:"newly_failing"`
		NewlyFailingExamples                         []string `json:"newly_failing_examples"`
	} `json:"threads"`
	Rules []domain.ReplayRule `json:"rules"`
}

// POST /v1/contracts/{name}/replay judges the contract's latest threads
// under a draft, for any reader; a bad draft is invalid_contract with its
// lines, an unknown contract 404.
func TestContractReplayOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		resp, body := sendSource(t, e, http.MethodPost, "/v1/contracts", replayPublished)
		wantStatus(t, resp, body, http.StatusCreated)
		cmd := e.Server.Threads.Application().Commands
		var ids []string
		for _, amount := range []string{"10", "0", "-3", "7.5"} {
			e.Clock.Advance(time.Second) // newest first is by start time
			th, err := cmd.StartThread.Handle(adminCtx(e), threads.StartThreadInput{Contract: "refund", Role: "support"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, th.ID)
			if _, err := cmd.RecordStep.Handle(adminCtx(e), threads.RecordStepInput{ThreadID: th.ID, Role: "support", StepName: "refund",
				Status: "success", IdempotencyKey: "r", Context: map[string]string{"amount": amount}}); err != nil {
				t.Fatal(err)
			}
		}
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		resp, body = e.DoWith(t, http.MethodPost, "/v1/contracts/refund/replay?threads=3", replayDraft, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+viewerKey)
			r.Header.Set("Content-Type", "text/plain")
		})
		wantStatus(t, resp, body, http.StatusOK)
		r := decode[replayBody](t, body)
		// The newest three: 7.5 passes, -3 and 0 are refused.
		if r.Contract != "refund" || !r.Complete || r.Threads.Requested != 3 || r.Threads.Judged != 3 || r.Threads.Refused != 2 ||
			r.Threads.Passed != 1 || r.Threads.NewlyFailing != 2 || strings.Join(r.Threads.NewlyFailingExamples, ",") != ids[2]+","+ids[1] {
			t.Fatalf("replay %s", body)
		}
		if len(r.Rules) != 1 || r.Rules[0].Type != "content_rule_failed" || r.Rules[0].Field != "amount" || r.Rules[0].Threads != 2 ||
			!strings.Contains(r.Rules[0].Message, `content field "amount" violates gt rule`) {
			t.Fatalf("rules %+v", r.Rules)
		}
		// As JSON {"source": …} too, with the default number of threads.
		resp, body = e.Do(t, http.MethodPost, "/v1/contracts/refund/replay", e.AdminKey, map[string]string{"source": replayDraft})
		wantStatus(t, resp, body, http.StatusOK)
		if r := decode[replayBody](t, body); r.Threads.Requested != 1000 || r.Threads.Judged != 4 || r.Threads.Refused != 2 {
			t.Fatalf("default replay %s", body)
		}
		resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts/nope/replay", replayDraft)
		wantStatus(t, resp, body, http.StatusNotFound)
		resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts/refund/replay", strings.Replace(replayDraft, "Then owner", "Then the owner", 1))
		wantStatus(t, resp, body, http.StatusBadRequest)
		if p := decode[struct {
			Code     string                   `json:"code"`
			Problems []domain.ContractProblem `json:"problems"`
		}](t, body); p.Code != "invalid_contract" || len(p.Problems) == 0 || p.Problems[0].Line != 6 {
			t.Fatalf("bad draft %s", body)
		}
		resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts/refund/replay?threads=0", replayDraft)
		wantStatus(t, resp, body, http.StatusBadRequest)
		resp, body = sendSource(t, e, http.MethodPost, "/v1/contracts/refund/replay?threads=10001", replayDraft)
		wantStatus(t, resp, body, http.StatusBadRequest)
	})
}
