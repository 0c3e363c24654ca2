// Package contracthttp is the REST transport for contracts:
//
//	POST /v1/contracts                         upload a new version (Gherkin or YAML body, or JSON {"source": "..."})
//	PUT  /v1/contracts/:name                   publish a new version of an existing contract (changed content, higher Version)
//	POST /v1/contracts/preview                 compile without storing: problems with lines, warnings, graph
//	POST /v1/contracts/:name/replay            judge the contract's latest threads again under a draft (replay.go)
//	GET  /v1/contracts                         latest version of every contract
//	GET  /v1/contracts/:name                   latest version, with its source
//	GET  /v1/contracts/:name/versions          every version, newest first
//	GET  /v1/contracts/:name/versions/:version one version, with its source
//	DELETE /v1/contracts/:name/versions/:version delete an unused version
//
// Handlers return errors; the server's error handler (httpapi.ErrorHandler)
// writes them as problem+json. An invalid contract is a
// 400 whose "problems" member lists every problem as {line, field, message}.
package contracthttp

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Handler serves the contract routes.
type Handler struct {
	Contracts contracts.Application
}

// Mount adds the routes to e behind the authentication middleware mw.
func (h *Handler) Mount(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.POST("/v1/contracts", h.upload, mw)
	e.PUT("/v1/contracts/:name", h.update, mw)
	e.POST("/v1/contracts/preview", h.preview, mw)
	e.POST("/v1/contracts/:name/replay", h.replay, mw)
	e.GET("/v1/contracts", h.list, mw)
	e.GET("/v1/contracts/:name", h.get, mw)
	e.GET("/v1/contracts/:name/versions", h.versions, mw)
	e.GET("/v1/contracts/:name/versions/:version", h.get, mw)
	e.DELETE("/v1/contracts/:name/versions/:version", h.deleteVersion, mw)
}

// Media types accepted for a raw contract body, whatever its language: the
// language is read from the source (a first statement "Feature:" is
// Gherkin). A missing Content-Type is accepted too, so
// `curl --data-binary @file -H 'Content-Type:'` works.
var sourceTypes = map[string]bool{
	"application/yaml": true, "application/x-yaml": true, "text/yaml": true, "text/x-yaml": true, "text/plain": true, "": true,
	"text/x-gherkin": true,
}

var errTooLarge = domain.NewBase(domain.KindTooLarge, domain.CodeBodyTooLarge,
	"the contract is larger than %d bytes", domain.MaxContractSourceBytes)

// source reads the contract source from the body, raw or wrapped in JSON.
func source(c echo.Context) ([]byte, error) {
	r := c.Request()
	mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil && r.Header.Get(echo.HeaderContentType) != "" {
		return nil, domain.Invalid("Content-Type", "malformed Content-Type header")
	}
	switch {
	case mt == "application/json":
		// JSON escaping can double the size; the source limit applies after decoding.
		var body struct {
			Source *string `json:"source"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(c.Response(), r.Body, 2*domain.MaxContractSourceBytes+64))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			if terr := limits.BodyTimeout(r.Context(), err); terr != nil {
				return nil, terr
			}
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errTooLarge
			}
			return nil, domain.Invalid("source", "the body must be a JSON object {\"source\": \"<contract source>\"}")
		}
		if body.Source == nil {
			return nil, domain.Invalid("source", "source is required: the contract (Gherkin or YAML) as a string")
		}
		if len(*body.Source) > domain.MaxContractSourceBytes {
			return nil, errTooLarge
		}
		return []byte(*body.Source), nil
	case sourceTypes[mt]:
		b, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, domain.MaxContractSourceBytes))
		if terr := limits.BodyTimeout(r.Context(), err); terr != nil {
			return nil, terr
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errTooLarge
			}
			return nil, domain.Invalid("", "could not read the request body")
		}
		return b, nil
	}
	return nil, domain.Invalid("Content-Type", "unsupported Content-Type %q: send the contract as text/plain (Gherkin or YAML) or application/yaml, or as JSON {\"source\": \"...\"}", mt)
}

func (h *Handler) upload(c echo.Context) error { return h.publish(c, "") }

// update publishes a new version of the contract named in the path.
func (h *Handler) update(c echo.Context) error { return h.publish(c, c.Param("name")) }

func (h *Handler) publish(c echo.Context, name string) error {
	src, err := source(c)
	if err != nil {
		return err
	}
	out, err := h.Contracts.Commands.Publish.Handle(c.Request().Context(), contracts.Publish{Source: src, Name: name})
	if err != nil {
		return err
	}
	ct := out.Contract
	c.Response().Header().Set(echo.HeaderLocation, "/v1/contracts/"+ct.Name+"/versions/"+strconv.Itoa(ct.Version))
	body := toJSON(ct, out.Summary, nil)
	body.Warnings = problems(out.Warnings)
	return c.JSON(http.StatusCreated, body)
}

// PreviewJSON is a checked source. Errors repeats every problem as the
// reference engine's preview words it ("source: Failed to parse Gherkin
// contract: line N: …", "<field>: <message>").
type PreviewJSON struct {
	Valid        bool                     `json:"valid"`
	SourceFormat string                   `json:"source_format"`
	Problems     []domain.ContractProblem `json:"problems"`
	Warnings     []domain.ContractProblem `json:"warnings"`
	Errors       []string                 `json:"errors"`
	Contract     *ContractJSON            `json:"contract,omitempty"`
	Graph        *GraphJSON               `json:"graph,omitempty"`
	ContentHash  string                   `json:"content_hash,omitempty"`
}

func (h *Handler) preview(c echo.Context) error {
	src, err := source(c)
	if err != nil {
		return err
	}
	p, err := h.Contracts.Queries.Preview.Handle(c.Request().Context(), src)
	if err != nil {
		return err
	}
	out := PreviewJSON{Valid: p.Valid(), SourceFormat: string(p.Format), Problems: problems(p.Problems), Warnings: problems(p.Warnings),
		Errors: make([]string, 0, len(p.Problems))}
	for _, pr := range p.Problems {
		out.Errors = append(out.Errors, pr.ReferenceText())
	}
	if p.Valid() {
		ct := toJSON(p.Contract, ports.ContractSummary{SourceFormat: p.Format, ContentHash: p.ContentHash}, nil)
		g := graphJSON(p.Graph)
		out.Contract, out.Graph, out.ContentHash = &ct, &g, p.ContentHash
	}
	return c.JSON(http.StatusOK, out)
}

// GraphJSON is a contract graph on the wire: domain.ContractGraph with
// durations as strings.
type GraphJSON struct {
	domain.ContractGraph
	Nodes       []NodeJSON       `json:"nodes"`
	Transitions []TransitionJSON `json:"transitions"`
}

// NodeJSON is a step (type "step") or a parallel group (type
// "parallel_group", with steps and mode all_of or any_of).
type NodeJSON struct {
	domain.GraphNode
	Timeout     string `json:"timeout,omitempty"`
	MaxDuration string `json:"max_duration,omitempty"`
}

func graphJSON(g domain.ContractGraph) GraphJSON {
	out := GraphJSON{ContractGraph: g, Nodes: make([]NodeJSON, 0, len(g.Nodes)), Transitions: transitionsJSON(g.Transitions)}
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, NodeJSON{GraphNode: n, Timeout: FormatDuration(n.Timeout), MaxDuration: FormatDuration(n.MaxDuration)})
	}
	return out
}

func transitionsJSON(ts []domain.Transition) []TransitionJSON {
	out := make([]TransitionJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, TransitionJSON{From: t.From, To: nonNil(t.To), CanRetry: t.CanRetry, MaxRetries: t.MaxRetries,
			Timeout: FormatDuration(t.Timeout)})
	}
	return out
}

func problems(ps []domain.ContractProblem) []domain.ContractProblem {
	if ps == nil {
		return []domain.ContractProblem{}
	}
	return ps
}

func (h *Handler) list(c echo.Context) error {
	l, err := h.Contracts.Queries.List.Handle(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"contracts": summaries(l)})
}

func (h *Handler) versions(c echo.Context) error {
	l, err := h.Contracts.Queries.ListVersions.Handle(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"name": c.Param("name"), "versions": summaries(l)})
}

// deleteVersion answers 204, 404, or 409 contract_version_in_use.
func (h *Handler) deleteVersion(c echo.Context) error {
	n, err := strconv.Atoi(c.Param("version"))
	if err != nil || n < 1 {
		return domain.Invalid("version", "version must be a positive integer")
	}
	if err := h.Contracts.Commands.DeleteVersion.Handle(c.Request().Context(), c.Param("name"), n); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *Handler) get(c echo.Context) error {
	version := 0
	if v := c.Param("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return domain.Invalid("version", "version must be a positive integer")
		}
		version = n
	}
	v, err := h.Contracts.Queries.Read.Handle(c.Request().Context(), c.Param("name"), version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toJSON(v.Contract, v.Summary, v.Source))
}

// ContractJSON is a contract version on the wire. Durations are Go duration
// strings ("30s", "1h30m", "72h" for 3d), empty when unbounded.
type ContractJSON struct {
	Name                      string           `json:"name"`
	Version                   int              `json:"version"`
	Description               string           `json:"description"`
	EntryPoints               []string         `json:"entry_points"`
	Parties                   []string         `json:"parties"`
	Steps                     []StepJSON       `json:"steps"`
	Transitions               []TransitionJSON `json:"transitions"`
	TerminalSteps             []string         `json:"terminal_steps"`
	MaxDuration               string           `json:"max_duration,omitempty"`
	AllowMultipleTerminals    bool             `json:"allow_multiple_terminals"`
	MultipleTerminalsSeverity string           `json:"multiple_terminals_severity"`
	// FreeOrder: no next-step rules, steps run in any order their
	// prerequisites allow. The derived flags say the entry points or
	// terminal steps were derived from the graph, not declared.
	FreeOrder            bool        `json:"free_order"`
	EntryPointsDerived   bool        `json:"entry_points_derived,omitempty"`
	TerminalStepsDerived bool        `json:"terminal_steps_derived,omitempty"`
	Groups               []GroupJSON `json:"groups"`
	ThreadsLockToVersion bool        `json:"threads_lock_to_version,omitempty"`
	LatestVersion        int         `json:"latest_version,omitempty"`
	CreatedBy            string      `json:"created_by,omitempty"`
	CreatedAt            *time.Time  `json:"created_at,omitempty"`
	SourceFormat         string      `json:"source_format,omitempty"`
	ContentHash          string      `json:"content_hash,omitempty"`
	Source               *string     `json:"source,omitempty"`
	// Warnings are the remarks a publish found (never refusals).
	Warnings []domain.ContractProblem `json:"warnings,omitempty"`
}

// GroupJSON is a parallel group on the wire.
type GroupJSON struct {
	Name                string   `json:"name"`
	Steps               []string `json:"steps"`
	AllMustSucceed      bool     `json:"all_must_succeed"`
	MaxCombinedDuration string   `json:"max_combined_duration,omitempty"`
}

// StepJSON is one contract step on the wire.
type StepJSON struct {
	Name        string   `json:"name"`
	Owner       string   `json:"owner,omitempty"`
	Type        string   `json:"type"`
	Timeout     string   `json:"timeout,omitempty"`
	Required    []string `json:"required"`
	Optional    []string `json:"optional"`
	Description string   `json:"description,omitempty"`

	ContextMeanings map[string]string     `json:"context_meanings,omitempty"`
	DependsOn       []string              `json:"depends_on"`
	FreshDependsOn  []string              `json:"fresh_depends_on"`
	ContentRules    []domain.ContentRule  `json:"content_rules"`
	SemanticRules   []domain.SemanticRule `json:"semantic_rules"`
}

// TransitionJSON is one transition on the wire.
type TransitionJSON struct {
	From       string   `json:"from"`
	To         []string `json:"to"`
	CanRetry   bool     `json:"can_retry"`
	MaxRetries int      `json:"max_retries"`
	Timeout    string   `json:"timeout,omitempty"`
}

// SummaryJSON is a contract version in lists.
type SummaryJSON struct {
	Name          string    `json:"name"`
	Version       int       `json:"version"`
	LatestVersion int       `json:"latest_version"`
	Description   string    `json:"description"`
	StepCount     int       `json:"step_count"`
	CreatedBy     string    `json:"created_by"`
	CreatedAt     time.Time `json:"created_at"`
	SourceFormat  string    `json:"source_format"`
	ContentHash   string    `json:"content_hash"`
}

func summaries(l []ports.ContractSummary) []SummaryJSON {
	out := make([]SummaryJSON, 0, len(l))
	for _, s := range l {
		out = append(out, SummaryJSON{Name: s.Name, Version: s.Version, LatestVersion: s.LatestVersion, Description: s.Description,
			StepCount: s.StepCount, CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt.UTC(), SourceFormat: string(s.SourceFormat),
			ContentHash: s.ContentHash})
	}
	return out
}

func toJSON(c domain.Contract, sum ports.ContractSummary, src []byte) ContractJSON {
	out := ContractJSON{
		Name: c.Name, Version: c.Version, Description: c.Description, EntryPoints: nonNil(c.EntryPoints), Parties: nonNil(c.Parties),
		TerminalSteps: nonNil(c.TerminalSteps), MaxDuration: FormatDuration(c.MaxDuration),
		AllowMultipleTerminals: c.AllowMultipleTerminals, MultipleTerminalsSeverity: string(c.MultipleTerminalsSeverity),
		LatestVersion: sum.LatestVersion, CreatedBy: sum.CreatedBy,
		Steps: make([]StepJSON, 0, len(c.Steps)), Transitions: transitionsJSON(c.Transitions),
		FreeOrder: c.FreeOrder, EntryPointsDerived: c.EntryPointsDerived, TerminalStepsDerived: c.TerminalStepsDerived,
		Groups: make([]GroupJSON, 0, len(c.Groups)), ThreadsLockToVersion: c.ThreadsLockToVersion,
		SourceFormat: string(sum.SourceFormat), ContentHash: sum.ContentHash,
	}
	if !sum.CreatedAt.IsZero() {
		at := sum.CreatedAt.UTC()
		out.CreatedAt = &at
	}
	if src != nil {
		s := string(src)
		out.Source = &s
	}
	for _, s := range c.Steps {
		st := StepJSON{Name: s.Name, Owner: s.Owner, Type: s.Type, Timeout: FormatDuration(s.Timeout),
			Required: nonNil(s.Required), Optional: nonNil(s.Optional), Description: s.Description,
			ContextMeanings: s.ContextMeanings, DependsOn: nonNil(s.DependsOn), FreshDependsOn: nonNil(s.FreshDependsOn),
			ContentRules: s.ContentRules, SemanticRules: s.SemanticRules}
		if st.ContentRules == nil {
			st.ContentRules = []domain.ContentRule{}
		}
		if st.SemanticRules == nil {
			st.SemanticRules = []domain.SemanticRule{}
		}
		out.Steps = append(out.Steps, st)
	}
	for _, g := range c.Groups {
		out.Groups = append(out.Groups, GroupJSON{Name: g.Name, Steps: nonNil(g.Steps), AllMustSucceed: g.AllMustSucceed,
			MaxCombinedDuration: FormatDuration(g.MaxCombinedDuration)})
	}
	return out
}

// FormatDuration writes d as the shortest Go duration ("5m", not "5m0s");
// zero (unbounded) is "".
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
