// Package httpapi is the REST/HTTP transport: RFC 9457 problem responses,
// authentication middleware, cookies, metrics, request logs and the identity
// routes (/v1/users, /v1/api-keys, /auth/*).
package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/httperr"
	"github.com/threadengine/engine/domain"
)

// ProblemContentType is the media type of every error body (RFC 9457).
const ProblemContentType = httperr.ProblemContentType

// Problem is err's HTTP status and problem body, for a refusal answered
// outside echo's error handler. It logs nothing: pass refusals, never an
// error that may be internal (those go through the error handler).
func Problem(err error) (int, httperr.Problem) {
	p := domain.Public(err)
	return p.Status, httperr.NewProblem(p)
}

// writeError writes err as application/problem+json: its public view, the
// cause of an internal error logged once (httperr.Report). Only the error
// handler calls it: handlers and middleware return their errors.
func writeError(c echo.Context, err error) error {
	r := c.Request()
	p := httperr.Report(r.Context(), logger(c), err, "method", r.Method, "path", c.Path())
	return httperr.WriteProblem(c.Response(), r, p)
}

// loggerKey is where the request logger stores the server's logger.
const loggerKey = "threadengine.logger"

func logger(c echo.Context) *slog.Logger {
	if l, ok := c.Get(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// ErrorHandler is the echo HTTPErrorHandler: domain errors and echo's own
// errors (unknown route, wrong method, body limit) all become problems.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var he *echo.HTTPError
		if errors.As(err, &he) {
			err = fromEchoError(he)
		}
		if werr := writeError(c, err); werr != nil {
			log.Debug("write problem", "err", werr)
		}
	}
}

func fromEchoError(he *echo.HTTPError) error {
	switch he.Code {
	case http.StatusMethodNotAllowed:
		return domain.E(domain.KindMethodNotAllowed, domain.CodeMethodNotAllowed, "method not allowed on this route")
	case http.StatusNotFound:
		return domain.E(domain.KindNotFound, domain.CodeNotFound, "no such route")
	case http.StatusRequestEntityTooLarge:
		return errBodyTooLarge
	case http.StatusUnauthorized:
		return domain.ErrUnauthenticated
	case http.StatusForbidden:
		return domain.ErrForbidden
	case http.StatusTooManyRequests:
		return domain.E(domain.KindRateLimited, domain.CodeRateLimited, "too many requests")
	case http.StatusServiceUnavailable:
		return domain.E(domain.KindUnavailable, domain.CodeUnavailable, "service unavailable")
	}
	if he.Code >= 400 && he.Code < 500 {
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return domain.E(domain.KindInvalid, domain.CodeValidationFailed, "%s", msg)
	}
	return domain.Internal(he, "echo error")
}
