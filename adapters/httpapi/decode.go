package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

// MaxBodyBytes caps every JSON request body.
const MaxBodyBytes = 1 << 20

// Both are immutable bases: a handler cannot change what the next request
// is answered.
var (
	errBodyTooLarge = domain.NewBase(domain.KindTooLarge, domain.CodeBodyTooLarge, "the request body is larger than 1 MiB")
	errBodyTimeout  = domain.NewBase(domain.KindTooLarge, domain.CodeLimitExceeded,
		"the request body was not received within the server's read timeout")
)

// refusalsKey holds the server's *limits.Counter in the echo context.
const refusalsKey = "threadengine.refusals"

// CountRefusals is middleware making the counter available to handlers
// (DecodeJSON counts the body limits it enforces).
func CountRefusals(c *limits.Counter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec echo.Context) error {
			ec.Set(refusalsKey, c)
			r := ec.Request()
			ec.SetRequest(r.WithContext(limits.WithCounter(r.Context(), c)))
			return next(ec)
		}
	}
}

// Refusals is the counter CountRefusals installed (nil counts nothing).
func Refusals(c echo.Context) *limits.Counter {
	r, _ := c.Get(refusalsKey).(*limits.Counter)
	return r
}

func countRefusal(c echo.Context, err error) error {
	switch {
	case errors.Is(err, errBodyTooLarge):
		Refusals(c).Refused(limits.BodyBytes)
	case errors.Is(err, errBodyTimeout):
		Refusals(c).Refused(limits.HTTPReadTimeout)
	}
	return err
}

// DecodeJSON strictly decodes the request body into v: at most MaxBodyBytes,
// no unknown fields, no trailing data. Errors name the offending field.
func DecodeJSON(c echo.Context, v any) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return countRefusal(c, jsonError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded) {
			return countRefusal(c, jsonError(err))
		}
		return domain.Invalid("", "the request body must be a single JSON object (unexpected trailing data)")
	}
	return nil
}

func jsonError(err error) error {
	var mbe *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return errBodyTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errBodyTimeout.WithDetail("limit", string(limits.HTTPReadTimeout))
	case errors.Is(err, io.EOF):
		return domain.Invalid("", "a JSON request body is required")
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("", "the request body is not valid JSON")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return domain.Invalid("", "the request body must be a JSON object")
		}
		return domain.Invalid(field, "%s must be a %s", field, typ.Type.Kind())
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return domain.Invalid(name, "unknown field %q", name)
	}
	return domain.Invalid("", "the request body is not valid JSON")
}
