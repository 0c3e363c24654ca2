package graphqlapi

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/threadengine/engine/adapters/tracing"
)

// KnownOperations are the operation names the SDKs send (sdk-wire-protocol
// §6); their metric series exist from the start.
// (graphqltest holds their text); the web UI's are named by the first
// clients to send them.
var KnownOperations = []string{"GetThread", "GetThreadByRef", "GetThreadsByRef", "GetThreadChain", "GetThreadSteps",
	"GetThreadValidations", "GetCompleteThread", "GetStepHistory", "GetStepSubSteps"}

// observe runs exec as one traced, counted operation: a span "graphql
// <operation>" and threadengine_graphql_operations_* by operation name,
// with the code of every error in the response — an executed operation's
// resolver errors (HTTP 200) are errors too.
func (h *Handler) observe(ctx context.Context, req Request, exec func(context.Context, Request) (*Response, int)) (*Response, int) {
	start := time.Now()
	ctx, sp := h.tracer.Start(ctx, "graphql")
	res, status := exec(ctx, req)
	name := h.operationName(req)
	if name != "" {
		sp.SetName("graphql " + name)
		sp.SetAttributes(tracing.AttrOperation.String(name))
	}
	var errCodes []string
	for _, e := range res.Errors {
		c, _ := e.Extensions["code"].(string)
		errCodes = append(errCodes, c)
	}
	h.metrics.GraphQLOperation(name, errCodes, time.Since(start))
	if cost, ok := res.Extensions["cost"].(int); ok {
		sp.SetAttributes(tracing.AttrGraphQLCost.Int(cost))
	}
	if len(errCodes) > 0 {
		sp.SetAttributes(tracing.AttrErrorCode.StringSlice(errCodes))
		msg := errCodes[0]
		if status != http.StatusOK {
			msg = http.StatusText(status) + ": " + msg
		}
		sp.SetStatus(codes.Error, msg)
	}
	sp.End()
	return res, status
}

// operationName is the name of the operation req ran: the operationName
// it gives, else the name of the document's only operation as execute
// analysed it ("" when anonymous, or refused before the analysis: nothing
// is parsed here).
func (h *Handler) operationName(req Request) string {
	if req.OperationName != "" {
		return req.OperationName
	}
	if a := h.cache.get("\x00" + req.Query); a != nil && a.op != nil {
		return a.op.name
	}
	return ""
}
