// Package httpapi is the REST/HTTP transport: RFC 9457 problem responses,
// authentication middleware, cookies, metrics, request logs and the identity
// routes (/v1/users, /v1/api-keys, /auth/*).
package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/domain"
)

// ProblemContentType is the media type of every error body (RFC 9457).
const ProblemContentType = "application/problem+json"

// problemTypeBase prefixes the problem "type" URI; the suffix is the code.
const problemTypeBase = "urn:threadengine:problem:"

// Problem is the body of an error response. Details are extension members
// at the top level of the JSON object.
func Problem(err error) (int, map[string]any) {
	de := domain.AsError(err)
	status := de.Kind.HTTPStatus()
	msg := de.Message
	if de.Kind == domain.KindInternal {
		// The message of an internal error may describe internals.
		msg = "an internal error occurred"
	}
	body := map[string]any{}
	for k, v := range de.Details {
		body[k] = v
	}
	body["type"] = problemTypeBase + string(de.Code)
	body["title"] = http.StatusText(status)
	body["status"] = status
	body["detail"] = msg
	body["code"] = string(de.Code)
	if de.Field != "" {
		body["field"] = de.Field
	}
	return status, body
}

// writeError writes err as application/problem+json. Internal errors are
// logged with their cause; the client gets a generic message. Only the
// error handler calls it: handlers and middleware return their errors.
func writeError(c echo.Context, err error) error {
	status, body := Problem(err)
	return writeProblem(c, status, body, err)
}

func writeProblem(c echo.Context, status int, body map[string]any, err error) error {
	if status >= 500 {
		logger(c).Error("request failed", "method", c.Request().Method, "path", c.Path(), "status", status, "err", err)
	}
	if status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="threadengine"`)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	c.Response().Header().Set(echo.HeaderContentType, ProblemContentType)
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	return json.NewEncoder(c.Response()).Encode(body)
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
