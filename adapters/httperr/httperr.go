// Package httperr is where every transport turns an error into what its
// caller sees: domain.Public's view, with the error it hides logged once
// (Report), and that view written as an RFC 9457 problem (WriteProblem)
// with the headers it asks for (SetHeaders). REST, GraphQL, OTLP, MCP and
// the WebSocket protocol all call Report, so "hide internal errors and log
// them" is written here only.
package httperr

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/threadengine/engine/domain"
)

// Report returns err's public view. An error the view hides (internal) is
// logged here at error level with its cause, ctx and attrs; an unavailable
// one at warning level with its cause (the dependency that failed). The
// caller renders the view and logs nothing more about err.
func Report(ctx context.Context, log *slog.Logger, err error, attrs ...any) domain.PublicError {
	p := domain.Public(err)
	if log == nil {
		log = slog.Default()
	}
	switch {
	case p.Internal:
		log.ErrorContext(ctx, "request failed: internal error", append(attrs, "err", err)...)
	case p.Kind == domain.KindUnavailable:
		log.WarnContext(ctx, "request failed: unavailable", append(attrs, "err", err)...)
	}
	return p
}

// SetHeaders sets what every HTTP error answer carries: Retry-After (in
// seconds) when retrying may succeed, the Bearer challenge on 401, and
// no-store.
func SetHeaders(h http.Header, p domain.PublicError) {
	if s := p.RetryAfterSeconds(); s > 0 {
		h.Set("Retry-After", strconv.Itoa(s))
	}
	if p.Kind == domain.KindUnauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="threadengine"`)
	}
	h.Set("Cache-Control", "no-store")
}

// ProblemContentType is the media type of a problem body (RFC 9457).
const ProblemContentType = "application/problem+json"

// problemTypeBase prefixes the problem "type" URI; the suffix is the code.
const problemTypeBase = "urn:threadengine:problem:"

// Problem is an RFC 9457 problem body: the standard members, the engine's
// code and field, and the view's details as extension members.
type Problem struct {
	Type   string
	Title  string
	Status int
	Detail string
	Code   domain.Code
	Field  string
	// Extensions are written at the top level; the members above win.
	Extensions map[string]any
}

// NewProblem is p's problem body.
func NewProblem(p domain.PublicError) Problem {
	return Problem{Type: problemTypeBase + string(p.Code), Title: http.StatusText(p.Status), Status: p.Status,
		Detail: p.Message, Code: p.Code, Field: p.Field, Extensions: p.Details}
}

// MarshalJSON writes the extension members and the standard ones in one
// object.
func (pr Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(pr.Extensions)+6)
	for k, v := range pr.Extensions {
		m[k] = v
	}
	m["type"], m["title"], m["status"], m["detail"], m["code"] = pr.Type, pr.Title, pr.Status, pr.Detail, pr.Code
	if pr.Field != "" {
		m["field"] = pr.Field
	} else {
		delete(m, "field")
	}
	return json.Marshal(m)
}

// WriteProblem writes p as application/problem+json with its headers (no
// body for HEAD).
func WriteProblem(w http.ResponseWriter, r *http.Request, p domain.PublicError) error {
	SetHeaders(w.Header(), p)
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(p.Status)
	if r != nil && r.Method == http.MethodHead {
		return nil
	}
	return json.NewEncoder(w).Encode(NewProblem(p))
}
