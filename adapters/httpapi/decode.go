package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/threadengine/engine/domain"
)

// MaxBodyBytes caps every JSON request body.
const MaxBodyBytes = 1 << 20

var errBodyTooLarge = domain.E(domain.KindTooLarge, domain.CodeBodyTooLarge, "the request body is larger than 1 MiB")

// DecodeJSON strictly decodes the request body into v: at most MaxBodyBytes,
// no unknown fields, no trailing data. Errors name the offending field.
func DecodeJSON(c echo.Context, v any) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errBodyTooLarge
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
