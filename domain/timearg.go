package domain

import (
	"strings"
	"time"
)

// ParseTimeArg parses an optional ISO-8601 time argument ("" means absent):
// RFC 3339 with or without fraction, or a bare date. An error names field.
func ParseTimeArg(field, s string) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, Invalid(field, "%s must be an ISO-8601 time such as 2026-01-02T15:04:05Z, got %q", field, s)
}
