package opshttp

import (
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// errExportBudget stops a stream whose byte budget is spent.
var errExportBudget = errors.New("opshttp: export byte budget spent")

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// TruncatedJSON is the last line of an export stream cut by its byte
// budget: the threads after it were not sent; Next (the same request with
// after=) sends them.
type TruncatedJSON struct {
	Truncated Truncated `json:"truncated"`
}

// Truncated says why and where a stream stopped.
type Truncated struct {
	Limit string `json:"limit"` // "export_bytes"
	Bytes int64  `json:"bytes"` // sent before this line
	Max   int64  `json:"max"`
	// After is the cursor of the last thread sent, for ?after=.
	After string `json:"after"`
	Next  string `json:"next"`
}

func truncatedLine(u *url.URL, sent, budget int64, at ports.ThreadCursor) TruncatedJSON {
	token := formatExportCursor(at)
	next := *u
	q := next.Query()
	q.Set("after", token)
	next.RawQuery = q.Encode()
	return TruncatedJSON{Truncated: Truncated{Limit: string(limits.ExportBytes), Bytes: sent, Max: budget, After: token,
		Next: next.RequestURI()}}
}

// formatExportCursor is a thread's position in the export order as an
// opaque token.
func formatExportCursor(c ports.ThreadCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + c.ID))
}

// parseExportCursor reads ?after= (empty: from the first thread): the
// stream goes on after the thread it names.
func parseExportCursor(s string) (*ports.ThreadCursor, error) {
	if s == "" {
		return nil, nil
	}
	bad := domain.Invalid("after", "after must be the token of a truncated export's last line")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	at, id, ok := strings.Cut(string(b), "|")
	if !ok || !domain.ValidID(id) {
		return nil, bad
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil, bad
	}
	return &ports.ThreadCursor{CreatedAt: t, ID: id}, nil
}
