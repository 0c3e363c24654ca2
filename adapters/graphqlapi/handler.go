// Package graphqlapi serves the query API: POST /graphql (graph-gophers
// graphql-go) with a cost limit checked before any resolver runs, batched
// resolvers over app.Queries, and a small explorer page at GET /graphql.
package graphqlapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	graphql "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"
	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/schema"
)

// Limits on one request.
const (
	MaxQueryBytes = 64 << 10 // longer query strings are refused with QUERY_TOO_LARGE
	MaxBodyBytes  = 1 << 20  // the whole JSON body, variables included
	MaxDepth      = 12       // selection nesting; the deepest useful query is 6
)

// The single company of this engine, as the reference's companyId fields.
const (
	CompanyID   = "default"
	CompanyName = "default"
)

// Error codes in errors[].extensions.code. The first four follow gqlgen,
// which the reference engine uses.
const (
	CodeParseFailed      = "GRAPHQL_PARSE_FAILED"
	CodeValidationFailed = "GRAPHQL_VALIDATION_FAILED"
	CodeComplexity       = string(domain.CodeComplexityLimitExceeded)
	CodeBadRequest       = "BAD_REQUEST"
	CodeQueryTooLarge    = "QUERY_TOO_LARGE"
	CodeBadUserInput     = "BAD_USER_INPUT"
	CodeNotFound         = "NOT_FOUND"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeForbidden        = "FORBIDDEN"
	CodeUnavailable      = "SERVICE_UNAVAILABLE"
	CodeInternal         = "INTERNAL_SERVER_ERROR"
)

// Request is a GraphQL-over-HTTP request body.
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
}

// Response is a GraphQL response. Extensions.cost is the operation's cost in
// points for every operation that was executed.
type Response struct {
	Errors     []*gqlerrors.QueryError `json:"errors,omitempty"`
	Data       json.RawMessage         `json:"data,omitempty"`
	Extensions map[string]any          `json:"extensions,omitempty"`
}

// Handler executes GraphQL operations for the principal in the context.
type Handler struct {
	queries *app.Queries
	schema  *graphql.Schema
	idx     *schemaIndex
	model   domain.CostModel
	log     *slog.Logger
	cache   analysisCache
}

// New parses the schema and binds it to the read use cases.
func New(q *app.Queries, log *slog.Logger) (*Handler, error) {
	if log == nil {
		log = slog.Default()
	}
	h := &Handler{queries: q, model: domain.QueryCostModel, log: log}
	s, err := graphql.ParseSchema(schema.GraphQL, &queryResolver{h: h},
		graphql.UseStringDescriptions(),
		graphql.UseFieldResolvers(),
		graphql.MaxDepth(MaxDepth),
		graphql.MaxQueryLength(MaxQueryBytes),
		graphql.PanicHandler(panicHandler{log: log}),
	)
	if err != nil {
		return nil, fmt.Errorf("graphql schema: %w", err)
	}
	h.schema = s
	h.idx = newSchemaIndex(s.ASTSchema())
	return h, nil
}

type panicHandler struct{ log *slog.Logger }

func (p panicHandler) MakePanicError(ctx context.Context, value any) *gqlerrors.QueryError {
	p.log.ErrorContext(ctx, "graphql resolver panic", "panic", fmt.Sprint(value))
	return &gqlerrors.QueryError{Message: "an internal error occurred", Extensions: map[string]any{"code": CodeInternal}}
}

func errorResponse(status int, code, msg string, ext map[string]any) (*Response, int) {
	e := map[string]any{"code": code}
	for k, v := range ext {
		e[k] = v
	}
	return &Response{Errors: []*gqlerrors.QueryError{{Message: msg, Extensions: e}}}, status
}

// Cost returns the cost of req's operation without executing it (0 when the
// operation cannot be chosen), or the parse error.
func (h *Handler) Cost(req Request) (int, error) {
	a := h.analyse(req.Query, req.OperationName)
	if a.err != nil || a.op == nil {
		return 0, a.err
	}
	return h.model.Cost(costFields(a.doc, a.op, h.idx, req.Variables)), nil
}

// Execute runs one operation for the principal in ctx and returns the
// response with its HTTP status: 200 once executed (resolver errors
// included), 422 when the document does not parse or validate or costs more
// than the limit (nothing was executed), 413 for an oversized query, 400 for
// an empty one, 401/403 without a principal allowed to read threads. The MCP
// graphql_query tool calls this too, so both apply the same limit.
func (h *Handler) Execute(ctx context.Context, req Request) (*Response, int) {
	if strings.TrimSpace(req.Query) == "" {
		return errorResponse(http.StatusBadRequest, CodeBadRequest, "a query string is required", nil)
	}
	if len(req.Query) > MaxQueryBytes {
		return errorResponse(http.StatusRequestEntityTooLarge, CodeQueryTooLarge,
			fmt.Sprintf("query length %d exceeds the maximum allowed query length of %d bytes", len(req.Query), MaxQueryBytes),
			map[string]any{"limit": MaxQueryBytes})
	}
	if _, err := app.Require(ctx, domain.PermThreadsRead); err != nil {
		de := domain.AsError(err)
		code, status := codeOf(de.Kind)
		return errorResponse(status, code, de.Message, nil)
	}
	a := h.analyse(req.Query, req.OperationName)
	if a.err != nil {
		var se *syntaxError
		errors.As(a.err, &se)
		r, status := errorResponse(http.StatusUnprocessableEntity, CodeParseFailed, se.msg, nil)
		r.Errors[0].Locations = []gqlerrors.Location{{Line: se.line, Column: se.col}}
		return r, status
	}
	if a.tooDeep != "" {
		return errorResponse(http.StatusUnprocessableEntity, CodeValidationFailed, a.tooDeep, nil)
	}
	cost := 0
	if a.op != nil {
		var err error
		cost, err = h.model.Check(costFields(a.doc, a.op, h.idx, req.Variables))
		if err != nil {
			return errorResponse(http.StatusUnprocessableEntity, CodeComplexity, domain.AsError(err).Message,
				map[string]any{"complexity": cost, "limit": h.model.Limit})
		}
	}
	query := a.query
	res := h.schema.Exec(ctx, query, req.OperationName, req.Variables)
	out := &Response{Data: res.Data, Errors: res.Errors, Extensions: map[string]any{"cost": cost}}
	status := http.StatusOK
	for _, e := range out.Errors {
		h.classify(ctx, e)
	}
	if len(res.Errors) > 0 && noData(res.Data) && !anyResolverError(res.Errors) {
		// Nothing ran: the document failed validation, named no runnable
		// operation, or its variables could not be coerced.
		status = http.StatusUnprocessableEntity
		out.Data, out.Extensions = nil, nil
	}
	return out, status
}

func noData(d json.RawMessage) bool {
	s := strings.TrimSpace(string(d))
	return s == "" || s == "null" || s == "{}"
}

func anyResolverError(errs []*gqlerrors.QueryError) bool {
	for _, e := range errs {
		if e.ResolverError != nil {
			return true
		}
	}
	return false
}

// Messages graph-gophers produces outside its validation rules for a
// document that cannot run.
var requestErrorPrefixes = []string{"no mutations are offered", "graphql-ws protocol header is missing",
	"more than one operation", "no operation with name", "executable document must contain"}

// analyse parses query and prepares what does not depend on variables.
func (h *Handler) analyse(query, operationName string) *analysis {
	key := operationName + "\x00" + query
	if a := h.cache.get(key); a != nil {
		return a
	}
	a := &analysis{query: query}
	a.doc, a.err = parseDocument(query)
	if a.err == nil {
		if a.op = a.doc.pickOperation(operationName); a.op != nil {
			if name, depth := a.doc.tooDeep(a.op.sel, 1, MaxDepth, map[string]bool{}); name != "" {
				a.tooDeep = fmt.Sprintf("Field %q has depth %d that exceeds max depth %d", name, depth, MaxDepth)
			}
			a.query = relaxIDs(query, a.doc, a.op, h.idx)
		}
	}
	h.cache.put(key, a)
	return a
}

// ExecuteJSON runs one operation like Execute and returns the response body
// ({"data":…,"errors":[…],"extensions":{"cost":N}}) whatever the outcome, so
// callers without HTTP (the MCP graphql_query tool) see exactly what POST
// /graphql answers, the cost limit included. It matches
// mcpapi.GraphQLFunc.
func (h *Handler) ExecuteJSON(ctx context.Context, query, operationName string, variables map[string]any) (json.RawMessage, error) {
	res, _ := h.Execute(ctx, Request{Query: query, OperationName: operationName, Variables: variables})
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("graphql: encode response: %w", err)
	}
	return b, nil
}

// classify gives every error a code and keeps internal details out of
// messages.
func (h *Handler) classify(ctx context.Context, e *gqlerrors.QueryError) {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	if _, ok := e.Extensions["code"]; ok {
		return
	}
	cause := e.ResolverError
	if cause == nil {
		cause = e.Err
	}
	var de *domain.Error
	switch {
	case cause != nil && errors.As(cause, &de):
		code, _ := codeOf(de.Kind)
		e.Extensions["code"] = code
		e.Extensions["reason"] = string(de.Code)
		if de.Field != "" {
			e.Extensions["field"] = de.Field
		}
		e.Message = de.Message
		if de.Kind == domain.KindInternal {
			h.log.ErrorContext(ctx, "graphql resolver failed", "err", de.Error(), "path", e.Path)
			e.Message = "an internal error occurred"
		}
	case e.ResolverError != nil:
		h.log.ErrorContext(ctx, "graphql resolver failed", "err", e.ResolverError.Error(), "path", e.Path)
		e.Extensions["code"] = CodeInternal
		e.Message = "an internal error occurred"
	case strings.HasPrefix(e.Message, "syntax error"):
		e.Extensions["code"] = CodeParseFailed
	case strings.HasPrefix(e.Message, "could not unmarshal"):
		// A variable's value does not fit its declared type.
		e.Extensions["code"] = CodeBadUserInput
	case e.Rule != "" || hasAnyPrefix(e.Message, requestErrorPrefixes):
		e.Extensions["code"] = CodeValidationFailed
	default:
		e.Extensions["code"] = CodeBadRequest
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func codeOf(k domain.Kind) (string, int) {
	switch k {
	case domain.KindInvalid:
		return CodeBadUserInput, http.StatusBadRequest
	case domain.KindNotFound:
		return CodeNotFound, http.StatusNotFound
	case domain.KindUnauthenticated:
		return CodeUnauthenticated, http.StatusUnauthorized
	case domain.KindForbidden:
		return CodeForbidden, http.StatusForbidden
	case domain.KindUnavailable:
		return CodeUnavailable, http.StatusServiceUnavailable
	case domain.KindUnprocessable:
		return CodeComplexity, http.StatusUnprocessableEntity
	case domain.KindTooLarge:
		return CodeQueryTooLarge, http.StatusRequestEntityTooLarge
	}
	return CodeInternal, http.StatusInternalServerError
}

// ServeHTTP answers POST (JSON body, or application/graphql) and GET
// (?query=…) for the principal already in the request context.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, res, status := decodeRequest(w, r)
	if res == nil {
		res, status = h.Execute(r.Context(), req)
	}
	writeJSON(w, status, res)
}

func decodeRequest(w http.ResponseWriter, r *http.Request) (Request, *Response, int) {
	var req Request
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		req.Query, req.OperationName = q.Get("query"), q.Get("operationName")
		if v := q.Get("variables"); v != "" {
			if err := json.Unmarshal([]byte(v), &req.Variables); err != nil {
				res, st := errorResponse(http.StatusBadRequest, CodeBadRequest, "variables must be a JSON object", nil)
				return req, res, st
			}
		}
		return req, nil, 0
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		res, st := errorResponse(http.StatusMethodNotAllowed, CodeBadRequest, "use POST (or GET with ?query=)", nil)
		return req, res, st
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			res, st := errorResponse(http.StatusRequestEntityTooLarge, CodeQueryTooLarge,
				fmt.Sprintf("request body exceeds %d bytes", MaxBodyBytes), map[string]any{"limit": MaxBodyBytes})
			return req, res, st
		}
		res, st := errorResponse(http.StatusBadRequest, CodeBadRequest, "cannot read the request body", nil)
		return req, res, st
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/graphql") {
		req.Query = string(body)
		return req, nil, 0
	}
	if err := json.Unmarshal(body, &req); err != nil {
		res, st := errorResponse(http.StatusBadRequest, CodeBadRequest,
			"the body must be a JSON object {\"query\": …, \"variables\": {…}}", nil)
		return req, res, st
	}
	return req, nil, 0
}

func writeJSON(w http.ResponseWriter, status int, res *Response) {
	b, err := res.MarshalJSON()
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"errors":[{"message":"an internal error occurred","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// MarshalJSON writes the response with data copied as is: graph-gophers
// produced it as valid JSON, and encoding/json would re-scan and compact it.
func (r *Response) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(r.Data) + 64)
	b.WriteByte('{')
	sep := false
	if len(r.Errors) > 0 {
		e, err := json.Marshal(r.Errors)
		if err != nil {
			return nil, err
		}
		b.WriteString(`"errors":`)
		b.Write(e)
		sep = true
	}
	if len(r.Data) > 0 {
		if sep {
			b.WriteByte(',')
		}
		b.WriteString(`"data":`)
		b.Write(r.Data)
		sep = true
	}
	if len(r.Extensions) > 0 {
		e, err := json.Marshal(r.Extensions)
		if err != nil {
			return nil, err
		}
		if sep {
			b.WriteByte(',')
		}
		b.WriteString(`"extensions":`)
		b.Write(e)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

//go:embed explorer.html
var explorerHTML []byte

// wantsHTML reports a browser navigation (GET asking for HTML, no query).
func wantsHTML(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Get("query") == "" &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
}

// Authenticate resolves a request's principal (API key, bearer token or
// session cookie with its origin check).
type Authenticate func(c echo.Context) (domain.Principal, error)

// Mount registers GET and POST /graphql. The explorer page is public (it
// holds no data; its requests authenticate like any other); everything else
// requires a principal, and authentication failures are GraphQL-shaped.
func (h *Handler) Mount(e *echo.Echo, authenticate Authenticate) {
	serve := func(c echo.Context) error {
		r := c.Request()
		if wantsHTML(r) {
			c.Response().Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
			return c.Blob(http.StatusOK, "text/html; charset=utf-8", explorerHTML)
		}
		p, err := authenticate(c)
		if err != nil {
			de := domain.AsError(err)
			code, status := codeOf(de.Kind)
			res, _ := errorResponse(status, code, de.Message, map[string]any{"reason": string(de.Code)})
			writeJSON(c.Response(), status, res)
			return nil
		}
		h.ServeHTTP(c.Response(), r.WithContext(app.WithPrincipal(r.Context(), p)))
		return nil
	}
	e.GET("/graphql", serve)
	e.POST("/graphql", serve)
}
