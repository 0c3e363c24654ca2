// Package contracthttp is the REST transport for contracts:
//
//	POST /v1/contracts                         upload a new version (YAML body, or JSON {"source": "..."})
//	POST /v1/contracts/preview                 parse without storing
//	GET  /v1/contracts                         latest version of every contract
//	GET  /v1/contracts/:name                   latest version, with its source
//	GET  /v1/contracts/:name/versions          every version, newest first
//	GET  /v1/contracts/:name/versions/:version one version, with its source
//
// Handlers return errors; the server's error handler (httpapi.ErrorHandler)
// writes them as problem+json. An invalid contract is a
// 400 whose "problems" member lists every problem as {field, message}.
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

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Handler serves the contract routes.
type Handler struct {
	Contracts *app.Contracts
}

// Mount adds the routes to e behind the authentication middleware mw.
func (h *Handler) Mount(e *echo.Echo, mw echo.MiddlewareFunc) {
	e.POST("/v1/contracts", h.upload, mw)
	e.POST("/v1/contracts/preview", h.preview, mw)
	e.GET("/v1/contracts", h.list, mw)
	e.GET("/v1/contracts/:name", h.get, mw)
	e.GET("/v1/contracts/:name/versions", h.versions, mw)
	e.GET("/v1/contracts/:name/versions/:version", h.get, mw)
	e.DELETE("/v1/contracts/:name/versions/:version", h.deleteVersion, mw)
}

// YAML media types accepted for a contract body. A missing Content-Type is
// read as YAML too, so `curl --data-binary @file -H 'Content-Type:'` works.
var yamlTypes = map[string]bool{
	"application/yaml": true, "application/x-yaml": true, "text/yaml": true, "text/x-yaml": true, "text/plain": true, "": true,
}

var errTooLarge = domain.NewBase(domain.KindTooLarge, domain.CodeBodyTooLarge,
	"the contract is larger than %d bytes", domain.MaxContractSourceBytes)

// source reads the contract YAML from the body, raw or wrapped in JSON.
func source(c echo.Context) ([]byte, error) {
	r := c.Request()
	mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil && r.Header.Get(echo.HeaderContentType) != "" {
		return nil, domain.Invalid("Content-Type", "malformed Content-Type header")
	}
	switch {
	case mt == "application/json":
		// JSON escaping can double the size; the YAML limit applies after decoding.
		var body struct {
			Source *string `json:"source"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(c.Response(), r.Body, 2*domain.MaxContractSourceBytes+64))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errTooLarge
			}
			return nil, domain.Invalid("source", "the body must be a JSON object {\"source\": \"<contract YAML>\"}")
		}
		if body.Source == nil {
			return nil, domain.Invalid("source", "source is required: the contract YAML as a string")
		}
		if len(*body.Source) > domain.MaxContractSourceBytes {
			return nil, errTooLarge
		}
		return []byte(*body.Source), nil
	case yamlTypes[mt]:
		b, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, domain.MaxContractSourceBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errTooLarge
			}
			return nil, domain.Invalid("", "could not read the request body")
		}
		return b, nil
	}
	return nil, domain.Invalid("Content-Type", "unsupported Content-Type %q: send the contract as application/yaml (or text/yaml), or as JSON {\"source\": \"...\"}", mt)
}

func (h *Handler) upload(c echo.Context) error {
	src, err := source(c)
	if err != nil {
		return err
	}
	ct, sum, err := h.Contracts.UploadContract(c.Request().Context(), src)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/contracts/"+ct.Name+"/versions/"+strconv.Itoa(ct.Version))
	return c.JSON(http.StatusCreated, toJSON(ct, sum, nil))
}

func (h *Handler) preview(c echo.Context) error {
	src, err := source(c)
	if err != nil {
		return err
	}
	ct, err := h.Contracts.CheckContract(c.Request().Context(), src)
	if domain.CodeOf(err) == domain.CodeInvalidContract {
		return c.JSON(http.StatusOK, map[string]any{"valid": false, "problems": domain.ContractProblems(err)})
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"valid": true, "problems": []domain.ContractProblem{}, "contract": toJSON(ct, ports.ContractSummary{}, nil)})
}

func (h *Handler) list(c echo.Context) error {
	l, err := h.Contracts.ListContracts(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"contracts": summaries(l)})
}

func (h *Handler) versions(c echo.Context) error {
	l, err := h.Contracts.ListContractVersions(c.Request().Context(), c.Param("name"))
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
	if err := h.Contracts.DeleteContractVersion(c.Request().Context(), c.Param("name"), n); err != nil {
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
	ct, src, sum, err := h.Contracts.GetContractSource(c.Request().Context(), c.Param("name"), version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toJSON(ct, sum, src))
}

// ContractJSON is a contract version on the wire. Durations are Go duration
// strings ("30s", "1h30m"), empty when unbounded.
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
	LatestVersion             int              `json:"latest_version,omitempty"`
	CreatedBy                 string           `json:"created_by,omitempty"`
	CreatedAt                 *time.Time       `json:"created_at,omitempty"`
	Source                    *string          `json:"source,omitempty"`
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
}

// TransitionJSON is one transition on the wire.
type TransitionJSON struct {
	From       string   `json:"from"`
	To         []string `json:"to"`
	CanRetry   bool     `json:"can_retry"`
	MaxRetries int      `json:"max_retries"`
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
}

func summaries(l []ports.ContractSummary) []SummaryJSON {
	out := make([]SummaryJSON, 0, len(l))
	for _, s := range l {
		out = append(out, SummaryJSON{Name: s.Name, Version: s.Version, LatestVersion: s.LatestVersion, Description: s.Description,
			StepCount: s.StepCount, CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt.UTC()})
	}
	return out
}

func toJSON(c domain.Contract, sum ports.ContractSummary, src []byte) ContractJSON {
	out := ContractJSON{
		Name: c.Name, Version: c.Version, Description: c.Description, EntryPoints: nonNil(c.EntryPoints), Parties: nonNil(c.Parties),
		TerminalSteps: nonNil(c.TerminalSteps), MaxDuration: FormatDuration(c.MaxDuration),
		AllowMultipleTerminals: c.AllowMultipleTerminals, MultipleTerminalsSeverity: string(c.MultipleTerminalsSeverity),
		LatestVersion: sum.LatestVersion, CreatedBy: sum.CreatedBy,
		Steps: make([]StepJSON, 0, len(c.Steps)), Transitions: make([]TransitionJSON, 0, len(c.Transitions)),
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
		out.Steps = append(out.Steps, StepJSON{Name: s.Name, Owner: s.Owner, Type: s.Type, Timeout: FormatDuration(s.Timeout),
			Required: nonNil(s.Required), Optional: nonNil(s.Optional), Description: s.Description})
	}
	for _, t := range c.Transitions {
		out.Transitions = append(out.Transitions, TransitionJSON{From: t.From, To: nonNil(t.To), CanRetry: t.CanRetry, MaxRetries: t.MaxRetries})
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
