// Package graphqlapi serves the query API: POST /graphql (graph-gophers
// graphql-go) with a cost limit checked before any resolver runs, batched
// resolvers over readmodel.Queries, and a small explorer page at GET /graphql.
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
	"sync/atomic"

	graphql "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/graphqlapi/sdkdocs"
	"github.com/threadengine/engine/adapters/httperr"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/decisions"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/schema"
)

// Limits on one request.
const (
	MaxQueryBytes = 64 << 10 // longer query strings are refused with QUERY_TOO_LARGE
	MaxBodyBytes  = 1 << 20  // the whole JSON body, variables included
	MaxDepth      = 12       // selection nesting; the deepest useful query is 6
	// MaxOverlapPairs and MaxSelections bound the library's validation of a
	// whole document (see parseSchema); a query within the 1000-point
	// limit stays far below both.
	MaxOverlapPairs = 20000
	MaxSelections   = 5000
	// MaxParallelism is how many resolvers of one operation run at once
	// (graph-gophers' default is 10): with the read gate's per-principal
	// cap it bounds the read connections one principal holds (2 × 2 of
	// the pool's 8). Batching needs no parallelism (loader.go).
	MaxParallelism = 2
)

// The single company of this engine, as the reference's companyId fields.
const (
	CompanyID   = "default"
	CompanyName = "default"
)

// Every errors[].extensions.code is a public code of domain's registry,
// the same code REST, WebSocket and MCP answer for the same error. These are
// the GraphQL request's own (the first four follow gqlgen, which the
// reference engine uses).
const (
	CodeParseFailed      = string(domain.CodeGraphQLParseFailed)
	CodeValidationFailed = string(domain.CodeGraphQLValidationFailed)
	CodeComplexity       = string(domain.CodeComplexityLimitExceeded)
	CodeBadRequest       = string(domain.CodeGraphQLBadRequest)
	CodeQueryTooLarge    = string(domain.CodeGraphQLQueryTooLarge)
	CodeBadUserInput     = string(domain.CodeGraphQLBadUserInput)
)

// The request-level refusals (their HTTP status is their kind's).
var (
	errNoQuery      = domain.NewBase(domain.KindInvalid, domain.CodeGraphQLBadRequest, "a query string is required")
	errBadVariables = domain.NewBase(domain.KindInvalid, domain.CodeGraphQLBadRequest, "variables must be a JSON object")
	errBadBody      = domain.NewBase(domain.KindInvalid, domain.CodeGraphQLBadRequest,
		"the body must be a JSON object {\"query\": …, \"variables\": {…}}")
	errUnreadableBody = domain.NewBase(domain.KindInvalid, domain.CodeGraphQLBadRequest, "cannot read the request body")
	errMethod         = domain.NewBase(domain.KindMethodNotAllowed, domain.CodeMethodNotAllowed, "use POST (or GET with ?query=)")
	errBodyTooLarge   = domain.NewBase(domain.KindTooLarge, domain.CodeGraphQLQueryTooLarge,
		"request body exceeds %d bytes", MaxBodyBytes)
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

	// refusal is the public view of the error that refused the whole
	// request, for its HTTP headers (Retry-After, WWW-Authenticate).
	refusal *domain.PublicError
}

// Handler executes GraphQL operations for the principal in the context.
type Handler struct {
	// decisions serve can, should and next (nil: they are unavailable).
	decisions *decisions.Decisions

	// queries answer the root fields; threadReads the fields of the threads
	// and steps they return.
	queries     *readmodel.Queries
	threadReads *threadReads
	schema      *graphql.Schema
	idx         *schemaIndex
	model       domain.CostModel
	// rowModel prices the published SDKs' documents by the rows they
	// return (domain.CostModel.PerRow).
	rowModel domain.CostModel
	log      *slog.Logger
	cache    analysisCache
	misses   atomic.Int64 // root resolvers that read data the pricing did not read (tests expect 0)
	// verifyBudget is the hash-chain steps one request may verify.
	verifyBudget int64
	metrics      ports.Metrics
	actors       *readmodel.Actors
	tracer       trace.Tracer
	limits       Limits
}

// SetMetrics reports operation costs and refusals to m. Call it before serving.
func (h *Handler) SetMetrics(m ports.Metrics) { h.metrics = m }

// SetTracer traces each operation with tp's tracer. Call it before serving.
func (h *Handler) SetTracer(tp trace.TracerProvider) { h.tracer = tracing.Tracer(tp, "graphqlapi") }

// New parses the schema and binds it to the read use cases.
func New(q *readmodel.Queries, log *slog.Logger) (*Handler, error) {
	if log == nil {
		log = slog.Default()
	}
	h := &Handler{queries: q, threadReads: newThreadReads(q), model: domain.QueryCostModel, log: log, verifyBudget: domain.MaxVerifiedStepsPerRequest,
		metrics: ports.NopMetrics{}, tracer: tracing.Tracer(nil, "graphqlapi"), limits: Limits{Refused: func(string) {}}}
	s, err := h.parseSchema()
	if err != nil {
		return nil, err
	}
	h.schema = s
	h.idx = newSchemaIndex(s.AST())
	h.model = introspectionModel(domain.QueryCostModel, s.Inspect())
	h.idx.bind(h.model)
	h.rowModel = h.model
	h.rowModel.PerRow = true
	return h, nil
}

func (h *Handler) parseSchema(opts ...graphql.SchemaOpt) (*graphql.Schema, error) {
	s, err := graphql.ParseSchema(schema.GraphQL, &queryResolver{h: h}, append([]graphql.SchemaOpt{
		graphql.UseStringDescriptions(),
		graphql.UseFieldResolvers(),
		graphql.MaxDepth(MaxDepth),
		graphql.MaxQueryLength(MaxQueryBytes),
		// The library validates every operation and fragment of a
		// document, also those our cost analysis does not price (another
		// operation than the one run, an unused fragment); its
		// overlapping-fields check is quadratic in same-named fields, so
		// both it and the expansion are capped.
		graphql.OverlapValidationLimit(MaxOverlapPairs),
		graphql.MaxSelections(MaxSelections),
		graphql.MaxParallelism(MaxParallelism),
		graphql.PanicHandler(panicHandler{}),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("graphql schema: %w", err)
	}
	return s, nil
}

// panicHandler turns a resolver's panic into that resolver's internal
// error (classify logs it, with its path).
type panicHandler struct{}

func (panicHandler) MakePanicError(_ context.Context, value any) *gqlerrors.QueryError {
	return &gqlerrors.QueryError{Message: domain.InternalMessage, ResolverError: fmt.Errorf("graphql resolver panic: %v", value)}
}

// queryError is a GraphQL error from a public view: the message, and in
// extensions the code (also as reason, which carried it before code did),
// the field, the details and, when a retry may succeed, retryAfter in
// seconds.
func queryError(p domain.PublicError) *gqlerrors.QueryError {
	ext := make(map[string]any, len(p.Details)+4)
	for k, v := range p.Details {
		ext[k] = v
	}
	ext["code"], ext["reason"] = string(p.Code), string(p.Code)
	if p.Field != "" {
		ext["field"] = p.Field
	}
	if s := p.RetryAfterSeconds(); s > 0 {
		ext["retryAfter"] = s
	}
	return &gqlerrors.QueryError{Message: p.Message, Extensions: ext}
}

// refuse answers a request refused as a whole by err: its public view as
// the one error, with the view's HTTP status (an internal error is logged
// once, here).
func (h *Handler) refuse(ctx context.Context, err error) (*Response, int) {
	p := httperr.Report(ctx, h.log, err)
	return &Response{Errors: []*gqlerrors.QueryError{queryError(p)}, refusal: &p}, p.Status
}

// Cost returns the static price of req's operation (data-dependent lists
// at one item) without reading or executing anything, 0 when the operation
// cannot be chosen, or the parse error.
func (h *Handler) Cost(req Request) (int, error) {
	a := h.analyse(req.Query, req.OperationName)
	if a.err != nil {
		return 0, a.err
	}
	if a.op == nil || a.invalid != "" {
		return 0, nil
	}
	root, _, _ := costSet(a.doc, a.op, h.idx, req.Variables)
	return h.modelFor(a).Price(root, nil), nil
}

// Execute runs one operation for the principal in ctx and returns the
// response with its HTTP status (see execute), counted by operation name
// and traced (adapters/graphqlapi/observe.go).
func (h *Handler) Execute(ctx context.Context, req Request) (*Response, int) {
	return h.observe(ctx, req, h.execute)
}

// execute runs one operation for the principal in ctx and returns the
// response with its HTTP status: 200 once executed (resolver errors
// included), 422 when the document does not parse or validate or costs more
// than the limit (nothing was executed), 413 for an oversized query, 400 for
// an empty one, 401/403 without a principal allowed to read threads. The MCP
// graphql_query tool calls this too, so both apply the same limit.
func (h *Handler) execute(ctx context.Context, req Request) (*Response, int) {
	if strings.TrimSpace(req.Query) == "" {
		return h.refuse(ctx, errNoQuery)
	}
	if len(req.Query) > MaxQueryBytes {
		h.metrics.GraphQLRefused("size")
		return h.refuse(ctx, domain.E(domain.KindTooLarge, domain.CodeGraphQLQueryTooLarge,
			"query length %d exceeds the maximum allowed query length of %d bytes", len(req.Query), MaxQueryBytes).
			WithDetail("limit", MaxQueryBytes))
	}
	if err := readmodel.AuthorizeRead(ctx); err != nil {
		return h.refuse(ctx, err)
	}
	a := h.analyse(req.Query, req.OperationName)
	switch {
	case a.err != nil:
		r, status := h.refuse(ctx, domain.E(domain.KindUnprocessable, domain.CodeGraphQLParseFailed, "%s", a.err.msg))
		r.Errors[0].Locations = []gqlerrors.Location{{Line: a.err.line, Column: a.err.col}}
		return r, status
	case a.invalid != "":
		h.metrics.GraphQLRefused("invalid")
		return h.refuse(ctx, domain.E(domain.KindUnprocessable, domain.CodeGraphQLValidationFailed, "%s", a.invalid))
	}
	root, roots, conv := costSet(a.doc, a.op, h.idx, req.Variables)
	model := h.modelFor(a)
	cost, readsMatter := model.PriceStatic(root)
	if err := model.Check(cost); err != nil {
		h.metrics.GraphQLRefused("complexity")
		return h.refuse(ctx, err)
	}
	leave, err := h.limits.Gate.Enter(ctx, principalKey(ctx), cost)
	if err != nil {
		h.metrics.GraphQLRefused("limit")
		return h.refuse(ctx, err)
	}
	defer leave()
	parent := ctx
	if h.limits.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.limits.MaxDuration)
		defer cancel()
	}
	r := &request{}
	r.verifyLeft.Store(h.verifyBudget)
	if readsMatter {
		r.priced = true
		r.threads, r.pages, r.chains = map[string]*ports.ThreadView{}, map[string]pageRead{}, map[string]chainRead{}
		static := cost
		reads := h.readRoots(ctx, roots, conv, r)
		if model.PerRow {
			h.readStepLists(ctx, roots, conv, r)
		}
		cost = model.Price(root, reads)
		if cost > model.Limit {
			h.metrics.GraphQLRefused("complexity")
			return h.refuse(ctx, domain.ComplexityExceededByThreads(cost, model.Limit))
		}
		// Admitted at its static price; what it runs beyond is charged now
		// (a refusal above read only the thread rows).
		h.limits.Gate.Charge(principalKey(ctx), cost-static)
	}
	h.metrics.GraphQLCost(cost)
	res := h.schema.Exec(withRequest(ctx, r), a.query, req.OperationName, req.Variables)
	if cut(parent, ctx) {
		h.limits.Refused(LimitDuration)
		return h.refuse(parent, h.errQueryTimeout())
	}
	if n := len(res.Data); h.limits.MaxResponseBytes > 0 && n > h.limits.MaxResponseBytes {
		h.limits.Refused(LimitResponseBytes)
		return h.refuse(parent, h.errTooLarge(n))
	}
	out := &Response{Data: res.Data, Errors: res.Errors, Extensions: map[string]any{"cost": cost}}
	// Executed: 200, errors of resolvers included (GraphQL over HTTP).
	status := http.StatusOK
	var first domain.PublicError
	for i, e := range out.Errors {
		if p := h.classify(ctx, e); i == 0 {
			first = p
		}
	}
	if len(res.Errors) > 0 && noData(res.Data) && !anyResolverError(res.Errors) {
		// Nothing ran: the document failed validation or its variables
		// could not be coerced; the status is the first refusal's.
		status = first.Status
		out.Data, out.Extensions = nil, nil
	}
	return out, status
}

// modelFor is the cost model pricing a's operation: by rows for the
// published SDKs' documents, by fields for every other.
func (h *Handler) modelFor(a *analysis) domain.CostModel {
	if a.sdk {
		return h.rowModel
	}
	return h.model
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

// analyse parses query and prepares what does not depend on variables:
// the operation graph-gophers will run, and the refusals that need no
// schema validation (a fragment cycle, no runnable operation, too deep).
func (h *Handler) analyse(query, operationName string) *analysis {
	key := operationName + "\x00" + query
	if a := h.cache.get(key); a != nil {
		return a
	}
	a := &analysis{query: query}
	doc, err := parseDocument(query)
	if err != nil {
		a.err = err.(*syntaxError)
		h.cache.put(key, a)
		return a
	}
	a.doc = doc
	switch {
	case doc.spreadCycle() != "":
		a.invalid = fmt.Sprintf("Cannot spread fragment %q within itself.", doc.spreadCycle())
	case len(doc.ops) == 0:
		a.invalid = "executable document must contain at least one operation"
	case operationName == "" && len(doc.ops) > 1:
		a.invalid = "more than one operation in query document and no operation name given"
	default:
		a.op = doc.pickOperation(operationName)
		switch {
		case a.op == nil:
			a.invalid = fmt.Sprintf("no operation with name %q", operationName)
		case a.op.kind != "query":
			a.invalid = fmt.Sprintf("%ss are not offered: the API is read-only", a.op.kind)
		default:
			if name, depth := doc.tooDeep(a.op.sel, 1, MaxDepth, map[string]int{}); name != "" {
				a.invalid = fmt.Sprintf("Field %q has depth %d that exceeds max depth %d", name, depth, MaxDepth)
			}
			a.query = relaxIDs(query, doc, a.op, h.idx)
			a.sdk = sdkdocs.Is(query)
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

// classify renders e from its public view (message, extensions) and
// returns the view. A resolver's error is the engine's own; an error of
// graph-gophers itself (validation, coercion) gets the request code that
// names it. Internal errors are logged once, here.
func (h *Handler) classify(ctx context.Context, e *gqlerrors.QueryError) domain.PublicError {
	var err error
	switch {
	case e.ResolverError != nil:
		err = e.ResolverError
	case e.Err != nil && errors.As(e.Err, new(*domain.Error)):
		err = e.Err
	case e.Rule != "" || errors.Is(e.Err, graphql.ErrTooManySelections):
		err = domain.E(domain.KindUnprocessable, domain.CodeGraphQLValidationFailed, "%s", e.Message)
	case len(e.Locations) > 0:
		// graph-gophers' own parser refused what ours accepted.
		err = domain.E(domain.KindUnprocessable, domain.CodeGraphQLParseFailed, "%s", e.Message)
	default:
		// Not a validation rule, not a resolver: an argument or variable
		// value that cannot be coerced to its type at execution.
		err = domain.E(domain.KindUnprocessable, domain.CodeGraphQLBadUserInput, "%s", e.Message)
	}
	p := httperr.Report(ctx, h.log, err, "path", fmt.Sprint(e.Path))
	q := queryError(p)
	e.Message, e.Extensions = q.Message, q.Extensions
	return p
}

// ServeHTTP answers POST (JSON body, or application/graphql) and GET
// (?query=…) for the principal already in the request context.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var res *Response
	var status int
	// A principal held for its budget is refused before its body is read
	// (readgate.Gate.Held): retrying before its Retry-After costs the
	// engine this answer only.
	if err := h.limits.Gate.Held(principalKey(r.Context())); err != nil {
		res, status = h.observe(r.Context(), Request{}, func(ctx context.Context, _ Request) (*Response, int) {
			h.metrics.GraphQLRefused("limit")
			return h.refuse(ctx, err)
		})
		h.writeJSON(w, r, status, res)
		return
	}
	req, err := decodeRequest(w, r)
	if err != nil {
		res, status = h.refuse(r.Context(), err)
	} else {
		res, status = h.Execute(r.Context(), req)
	}
	h.writeJSON(w, r, status, res)
}

func decodeRequest(w http.ResponseWriter, r *http.Request) (Request, error) {
	var req Request
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		req.Query, req.OperationName = q.Get("query"), q.Get("operationName")
		if v := q.Get("variables"); v != "" {
			if err := json.Unmarshal([]byte(v), &req.Variables); err != nil {
				return req, errBadVariables
			}
		}
		return req, nil
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, POST")
		return req, errMethod
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if terr := limits.BodyTimeout(r.Context(), err); terr != nil {
		return req, terr // 413 and counted, as on every JSON API
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return req, errBodyTooLarge.WithDetail("limit", MaxBodyBytes)
		}
		return req, errUnreadableBody
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/graphql") {
		req.Query = string(body)
		return req, nil
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, errBadBody
	}
	return req, nil
}

// writeJSON writes res with status; a request refused as a whole also gets
// its error's headers.
func (h *Handler) writeJSON(w http.ResponseWriter, r *http.Request, status int, res *Response) {
	b, err := res.MarshalJSON()
	if err != nil {
		res, status = h.refuse(r.Context(), fmt.Errorf("graphql: encode response: %w", err))
		if b, err = res.MarshalJSON(); err != nil {
			panic(err) // a response of one error whose extensions are strings and ints
		}
	}
	if res.refusal != nil {
		httperr.SetHeaders(w.Header(), *res.refusal)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if res.refusal != nil && status >= 400 && writeWithReason(w, r, status, res.refusal.Message, b) {
		return
	}
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
			res, status := h.refuse(r.Context(), err)
			h.writeJSON(c.Response(), r, status, res)
			return nil
		}
		h.ServeHTTP(c.Response(), r.WithContext(authz.WithPrincipal(r.Context(), p)))
		return nil
	}
	e.GET("/graphql", serve)
	e.POST("/graphql", serve)
}
