package opshttp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ExportJSON is one exported thread: the body of GET /v1/threads/:id/export
// and one line of GET /v1/threads/export. Stored JSON (context, metadata,
// payloads, issues, details) is passed through as stored.
type ExportJSON struct {
	Thread        ThreadJSON         `json:"thread"`
	Steps         []StepJSON         `json:"steps"`
	Attempts      []AttemptJSON      `json:"attempts"`
	SubSteps      []SubStepJSON      `json:"sub_steps"`
	Validations   []ValidationJSON   `json:"validations"`
	Notifications []NotificationJSON `json:"notifications"`
	Chain         ChainJSON          `json:"chain"`
	// Log proves the thread's steps are in the transparency log (absent
	// when the engine runs without one); see docs/integrators/verification.md.
	Log *ExportLogJSON `json:"log,omitempty"`
}

type ThreadJSON struct {
	ID              string            `json:"id"`
	ContractName    *string           `json:"contract_name"`
	ContractVersion *int              `json:"contract_version"`
	Label           *string           `json:"label"`
	OwnerKind       string            `json:"owner_kind"`
	OwnerID         string            `json:"owner_id"`
	ServiceName     *string           `json:"service_name"`
	Status          string            `json:"status"`
	Error           *string           `json:"error"`
	LastHash        string            `json:"last_hash"`
	StepCount       int               `json:"step_count"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	CompletedAt     *time.Time        `json:"completed_at"`
	Refs            map[string]string `json:"refs"`
}

type StepJSON struct {
	StepName       string          `json:"step_name"`
	IdempotencyKey string          `json:"idempotency_key"`
	Status         string          `json:"status"`
	RetryCount     int             `json:"retry_count"`
	LatestStepID   string          `json:"latest_step_id"`
	PreviousStep   *string         `json:"previous_step"`
	Actor          string          `json:"actor"`
	ActorService   string          `json:"actor_service"`
	LatestContext  json.RawMessage `json:"latest_context"`
	FirstSeenAt    time.Time       `json:"first_seen_at"`
	LastUpdatedAt  time.Time       `json:"last_updated_at"`
	StartedAt      *time.Time      `json:"started_at"`
	FinishedAt     *time.Time      `json:"finished_at"`
}

type AttemptJSON struct {
	ID             string          `json:"id"`
	Seq            int             `json:"seq"`
	StepName       string          `json:"step_name"`
	IdempotencyKey string          `json:"idempotency_key"`
	Status         string          `json:"status"`
	Attempt        int             `json:"attempt"`
	Actor          string          `json:"actor"`
	ActorService   string          `json:"actor_service"`
	Context        json.RawMessage `json:"context"`
	Metadata       json.RawMessage `json:"metadata"`
	StartedAt      *time.Time      `json:"started_at"`
	FinishedAt     *time.Time      `json:"finished_at"`
	RecordedAt     time.Time       `json:"recorded_at"`
	ContentHash    string          `json:"content_hash"`
	Hash           string          `json:"hash"`
	PrevHash       string          `json:"prev_hash"`
}

type SubStepJSON struct {
	ID         string          `json:"id"`
	StepID     string          `json:"step_id"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	Payload    json.RawMessage `json:"payload"`
	RecordedAt time.Time       `json:"recorded_at"`
}

type ValidationJSON struct {
	ID             string          `json:"id"`
	StepID         string          `json:"step_id"`
	StepName       string          `json:"step_name"`
	IdempotencyKey string          `json:"idempotency_key"`
	OverallStatus  string          `json:"overall_status"`
	Issues         json.RawMessage `json:"issues"`
	CreatedAt      time.Time       `json:"created_at"`
}

type NotificationJSON struct {
	ID               string          `json:"id"`
	StepID           string          `json:"step_id"`
	StepName         string          `json:"step_name"`
	Source           string          `json:"source"`
	NotificationType string          `json:"notification_type"`
	StepStatus       string          `json:"step_status"`
	ValidationStatus string          `json:"validation_status"`
	ViolationType    string          `json:"violation_type"`
	Severity         string          `json:"severity"`
	Message          string          `json:"message"`
	Details          json.RawMessage `json:"details"`
	CreatedAt        time.Time       `json:"created_at"`
}

type ChainJSON struct {
	Verified     bool       `json:"verified"`
	Code         string     `json:"code,omitempty"`
	TotalEvents  int        `json:"total_events"`
	BrokenStepID string     `json:"broken_step_id,omitempty"`
	BrokenAt     *time.Time `json:"broken_at,omitempty"`
	Error        string     `json:"error,omitempty"`
}

// raw passes stored JSON through, falling back when a column is empty.
func raw(s, empty string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		s = empty
	}
	return json.RawMessage(s)
}

func toExportJSON(x readmodel.ThreadExport) ExportJSON {
	t := x.Thread
	refs := t.Refs
	if refs == nil {
		refs = map[string]string{}
	}
	out := ExportJSON{
		Thread: ThreadJSON{ID: t.ID, ContractName: t.ContractName, ContractVersion: t.ContractVersion, Label: t.Label,
			OwnerKind: t.OwnerKind, OwnerID: t.OwnerID, ServiceName: t.ServiceName, Status: t.Status, Error: t.Error,
			LastHash: t.LastHash, StepCount: t.StepCount, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
			CompletedAt: t.CompletedAt, Refs: refs},
		Steps: []StepJSON{}, Attempts: []AttemptJSON{}, SubSteps: []SubStepJSON{}, Validations: []ValidationJSON{},
		Notifications: []NotificationJSON{},
		Chain: ChainJSON{Verified: x.Chain.Verified, Code: string(x.Chain.Code), TotalEvents: x.Chain.TotalEvents, BrokenStepID: x.Chain.BrokenStepID,
			BrokenAt: x.Chain.BrokenAt, Error: x.Chain.Error},
	}
	for _, s := range x.Steps {
		out.Steps = append(out.Steps, StepJSON{StepName: s.StepName, IdempotencyKey: s.IdempotencyKey, Status: s.Status,
			RetryCount: s.RetryCount, LatestStepID: s.LatestStepID, PreviousStep: s.PreviousStep, Actor: s.Actor,
			ActorService: s.ActorService, LatestContext: raw(s.LatestContext, "{}"), FirstSeenAt: s.FirstSeenAt,
			LastUpdatedAt: s.LastUpdatedAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt})
	}
	for _, a := range x.Attempts {
		out.Attempts = append(out.Attempts, AttemptJSON{ID: a.ID, Seq: a.Seq, StepName: a.StepName,
			IdempotencyKey: a.IdempotencyKey, Status: a.Status, Attempt: a.Attempt, Actor: a.Actor,
			ActorService: a.ActorService, Context: raw(a.Context, "{}"), Metadata: raw(a.Metadata, "{}"),
			StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, RecordedAt: a.RecordedAt, ContentHash: a.ContentHash,
			Hash: a.Hash, PrevHash: a.PrevHash})
	}
	for _, s := range x.SubSteps {
		out.SubSteps = append(out.SubSteps, SubStepJSON{ID: s.ID, StepID: s.StepID, Name: s.Name, Status: s.Status,
			Payload: raw(s.Payload, "{}"), RecordedAt: s.RecordedAt})
	}
	for _, v := range x.Validations {
		out.Validations = append(out.Validations, ValidationJSON{ID: v.ID, StepID: v.StepID, StepName: v.StepName,
			IdempotencyKey: v.IdempotencyKey, OverallStatus: v.OverallStatus, Issues: raw(v.Issues, "[]"), CreatedAt: v.CreatedAt})
	}
	for _, n := range x.Notifications {
		out.Notifications = append(out.Notifications, NotificationJSON{ID: n.ID, StepID: n.StepID, StepName: n.StepName,
			Source: n.Source, NotificationType: n.NotificationType, StepStatus: n.StepStatus,
			ValidationStatus: n.ValidationStatus, ViolationType: n.ViolationType, Severity: n.Severity, Message: n.Message,
			Details: raw(n.Details, "{}"), CreatedAt: n.CreatedAt})
	}
	return out
}

// exportThread: GET /v1/threads/:id/export, one JSON document.
func (h *Handler) exportThread(c echo.Context) error {
	x, err := h.Exports.Thread(c.Request().Context(), c.Param("id"))
	if err != nil {
		if de := domain.AsError(err); de.Details["limit"] == readmodel.LimitExportThreadBytes && h.Refused != nil {
			h.Refused(limits.ExportThreadBytes)
		}
		return err
	}
	since, err := int64Param(c, "since", false)
	if err != nil {
		return err
	}
	out := toExportJSON(x)
	if out.Log, err = h.exportLog(c.Request().Context(), x.Thread.ID, since); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="thread-`+safeName(x.Thread.ID)+`.json"`)
	return c.JSON(http.StatusOK, out)
}

// exportThreads: GET /v1/threads/export streams one ExportJSON per line
// (NDJSON), oldest thread first, of the threads matching every filter of the
// thread list (exportFilter).
func (h *Handler) exportThreads(c echo.Context) error {
	f, err := exportFilter(c)
	if err != nil {
		return err
	}
	since, err := int64Param(c, "since", false)
	if err != nil {
		return err
	}
	after, err := parseExportCursor(c.QueryParam("after"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := h.Exports.AuthorizeStream(ctx); err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "application/x-ndjson")
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="threads-`+strconv.FormatInt(time.Now().Unix(), 10)+`.ndjson"`)
	w.WriteHeader(http.StatusOK)
	counted := &countingWriter{w: w}
	enc := json.NewEncoder(counted)
	n := 0
	var last, cut *ports.ThreadCursor
	err = h.Exports.Stream(ctx, f, after, func(x readmodel.ThreadExport, at ports.ThreadCursor) error {
		if h.MaxExportBytes > 0 && counted.n >= h.MaxExportBytes && last != nil {
			// The budget is spent and another thread follows: a last
			// line says where to go on (after the last one sent).
			cut = last
			return errExportBudget
		}
		last = &at
		if x.TooLarge > 0 {
			if h.Refused != nil {
				h.Refused(limits.ExportThreadBytes)
			}
			return enc.Encode(SkippedJSON{Skipped: Skipped{ID: x.Thread.ID, Limit: readmodel.LimitExportThreadBytes, Bytes: x.TooLarge,
				Max: h.Exports.MaxThreadBytes()}})
		}
		out := toExportJSON(x)
		var err error
		if out.Log, err = h.exportLog(ctx, x.Thread.ID, since); err != nil {
			return err
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
		if n++; n%readmodel.ExportBatch == 0 {
			w.Flush()
		}
		return nil
	})
	if cut != nil {
		if h.Refused != nil {
			h.Refused(limits.ExportBytes)
		}
		_ = enc.Encode(truncatedLine(c.Request().URL, counted.n, h.MaxExportBytes, *cut))
		w.Flush()
		return nil
	}
	if err != nil && ctx.Err() == nil {
		// The status is sent already: a last line says the stream is cut short.
		de := domain.AsError(err)
		_ = enc.Encode(StreamErrorJSON{Error: StreamError{Code: string(de.Code), Message: de.Message}})
	}
	w.Flush()
	return nil
}

// SkippedJSON is the line of an export stream in place of a thread whose
// stored bytes are over limits.graphql.export_thread_max_bytes: the thread
// was not loaded; the stream goes on with the next one.
type SkippedJSON struct {
	Skipped Skipped `json:"skipped"`
}

// Skipped names the thread left out and why.
type Skipped struct {
	ID    string `json:"id"`
	Limit string `json:"limit"` // "export_thread_bytes"
	Bytes int64  `json:"bytes"` // its stored contexts and metadata
	Max   int64  `json:"max"`
}

// StreamErrorJSON is the last line of an export stream that failed midway.
type StreamErrorJSON struct {
	Error StreamError `json:"error"`
}

type StreamError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// safeName keeps a file name to characters every browser accepts.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// ExportLogJSON is an export's proof of inclusion in the transparency log.
type ExportLogJSON struct {
	// Checkpoint is the signed checkpoint (signed-note text) the proofs are for.
	Checkpoint string `json:"checkpoint"`
	// Leaves are every leaf naming the thread, in log order.
	Leaves []LeafJSON `json:"leaves"`
	// Consistency proves the checkpoint extends the tree of the size asked
	// with ?since= (absent otherwise).
	Consistency *ProofJSON `json:"consistency,omitempty"`
}

// LeafJSON is one leaf with its inclusion proof in the export's checkpoint.
type LeafJSON struct {
	Index int64    `json:"index"`
	Data  string   `json:"data"`
	Proof []string `json:"proof"`
}

// exportLog is the log section of a thread's export (nil without a log).
func (h *Handler) exportLog(ctx context.Context, threadID string, since int64) (*ExportLogJSON, error) {
	if h.Log == nil {
		return nil, nil
	}
	p, err := h.Log.Queries.ThreadProofs.Handle(ctx, []string{threadID}, since)
	if err != nil {
		return nil, err
	}
	out := &ExportLogJSON{Checkpoint: p.Checkpoint.Note, Leaves: []LeafJSON{}}
	for _, l := range p.Leaves[threadID] {
		out.Leaves = append(out.Leaves, LeafJSON{Index: l.Index, Data: string(l.Data), Proof: proofStrings(l.Proof)})
	}
	if since > 0 {
		proof, size, err := h.Log.Queries.Consistency.Handle(ctx, since, p.Checkpoint.Size)
		if err != nil {
			return nil, err
		}
		out.Consistency = &ProofJSON{Old: &since, New: &size, Proof: proofStrings(proof)}
	}
	return out, nil
}

// exportPresets are the thread list's time presets (within=).
var exportPresets = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// exportFilter reads the export's filters: status, contract (name, name:N)
// and contractVersion, started_since and started_before (RFC 3339) or within
// (1h, 24h, 7d, 30d), health (comma-separated, any of), tag, idPrefix,
// refKey, refValue, rule and step (the first issue's type and step).
func exportFilter(c echo.Context) (ports.ExportFilter, error) {
	q := func(k string) string { return strings.TrimSpace(c.QueryParam(k)) }
	f := ports.ExportFilter{Status: q("status"), Tag: q("tag"), IDPrefix: q("idPrefix"), RefKey: q("refKey"), RefValue: q("refValue"),
		IssueType: q("rule"), IssueStep: q("step")}
	if ref := q("contract"); ref != "" {
		name, version, err := domain.ParseContractRef(ref)
		if err != nil {
			return f, err
		}
		f.ContractName, f.ContractVersion = name, version
	}
	if v := q("contractVersion"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || f.ContractName == "" {
			return f, domain.Invalid("contractVersion", "contractVersion must be a positive integer, given with contract")
		}
		f.ContractVersion = n
	}
	for _, v := range strings.Split(q("health"), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		hs, err := domain.ParseHealthStatus(strings.ToUpper(v))
		if err != nil {
			return f, err
		}
		f.Health = append(f.Health, hs)
	}
	var err error
	if f.StartedSince, err = timeParam(c, "started_since"); err != nil {
		return f, err
	}
	if f.StartedBefore, err = timeParam(c, "started_before"); err != nil {
		return f, err
	}
	if w := q("within"); w != "" {
		d, ok := exportPresets[w]
		if !ok {
			return f, domain.Invalid("within", "within must be one of 1h, 24h, 7d, 30d")
		}
		f.Within = d
	}
	return f, nil
}
