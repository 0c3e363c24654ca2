package contracthttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/domain"
)

// ReplayJSON is a replay's answer: what the draft would have done to the
// latest threads of the contract.
type ReplayJSON struct {
	Contract     string                   `json:"contract"`
	DraftVersion int                      `json:"draft_version"`
	SourceFormat string                   `json:"source_format"`
	ContentHash  string                   `json:"content_hash"`
	Warnings     []domain.ContractProblem `json:"warnings"`
	Complete     bool                     `json:"complete"`
	Stopped      string                   `json:"stopped,omitempty"`
	Threads      ReplayCountsJSON         `json:"threads"`
	Steps        ReplayStepsJSON          `json:"steps"`
	Rules        []domain.ReplayRule      `json:"rules"`
	// RulesOmitted counts findings beyond the listed maximum.
	RulesOmitted int                 `json:"rules_omitted"`
	Versions     []ReplayVersionJSON `json:"versions"`
	Newest       *time.Time          `json:"newest_started_at,omitempty"`
	Oldest       *time.Time          `json:"oldest_started_at,omitempty"`
	RowsRead     int                 `json:"rows_read"`
	ElapsedMs    int64               `json:"elapsed_ms"`
}

// ReplayVersionJSON counts the judged threads of one contract version.
type ReplayVersionJSON struct {
	Version int `json:"version"`
	Threads int `json:"threads"`
}

// ReplayCountsJSON counts threads.
type ReplayCountsJSON struct {
	Requested            int      `json:"requested"`
	Judged               int      `json:"judged"`
	Refused              int      `json:"refused"`
	Violated             int      `json:"violated"`
	Warned               int      `json:"warned"`
	Passed               int      `json:"passed"`
	RecordedViolated     int      `json:"recorded_violated"`
	WouldNowPass         int      `json:"would_now_pass"`
	WouldNowPassExamples []string `json:"would_now_pass_examples"`
	NewlyFailing         int      `json:"newly_failing"`
	NewlyFailingExamples []string `json:"newly_failing_examples"`
	// Truncated threads had more attempts than are judged per thread.
	Truncated int `json:"truncated"`
}

// ReplayStepsJSON counts step attempts.
type ReplayStepsJSON struct {
	Judged  int `json:"judged"`
	Refused int `json:"refused"`
	// SemanticUnjudged: steps whose semantic questions replay does not put
	// to a classifier.
	SemanticUnjudged int `json:"semantic_unjudged"`
	MaxPerThread     int `json:"max_per_thread"`
}

// replay answers 200 with the counts, 400 invalid_contract for a bad
// draft, 404 for an unknown contract, 429 rate_limited while the caller's
// previous replay runs.
func (h *Handler) replay(c echo.Context) error {
	n := 0
	if v := c.QueryParam("threads"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return domain.Invalid("threads", "threads must be a positive integer")
		}
	}
	src, err := source(c)
	if err != nil {
		return err
	}
	r, err := h.Contracts.Queries.Replay.Handle(c.Request().Context(), contracts.ReplayRequest{Name: c.Param("name"), Source: src, Threads: n})
	if err != nil {
		if de := domain.AsError(err); de.Code == domain.CodeLimitExceeded {
			if name, ok := de.Details["limit"].(string); ok {
				httpapi.Refusals(c).Refused(limits.Name(name))
			}
		}
		return err
	}
	t := r.Tally
	out := ReplayJSON{Contract: r.Contract, DraftVersion: r.DraftVersion, SourceFormat: string(r.Format), ContentHash: r.ContentHash,
		Warnings: problems(r.Warnings), Complete: r.Complete, Stopped: r.Stopped, Rules: r.Rules, RulesOmitted: t.RulesOmitted,
		Versions: make([]ReplayVersionJSON, 0, len(r.Versions)), RowsRead: r.RowsRead, ElapsedMs: r.Elapsed.Milliseconds(),
		Threads: ReplayCountsJSON{Requested: r.Requested, Judged: t.Threads, Refused: t.Refused, Violated: t.Violated, Warned: t.Warned,
			Passed: t.Passed, RecordedViolated: t.RecordedViolated, WouldNowPass: t.NowPass, WouldNowPassExamples: nonNil(t.NowPassExamples),
			NewlyFailing: t.NewlyFailing, NewlyFailingExamples: nonNil(t.NewlyFailingExamples), Truncated: r.Truncated},
		Steps: ReplayStepsJSON{Judged: t.StepsJudged, Refused: t.StepsRefused, SemanticUnjudged: t.SemanticUnjudged, MaxPerThread: r.MaxSteps}}
	for _, v := range r.Versions {
		out.Versions = append(out.Versions, ReplayVersionJSON{Version: v.Version, Threads: v.Threads})
	}
	if !r.Newest.IsZero() {
		newest, oldest := r.Newest.UTC(), r.Oldest.UTC()
		out.Newest, out.Oldest = &newest, &oldest
	}
	return c.JSON(http.StatusOK, out)
}
