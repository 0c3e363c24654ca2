package graphqlapi

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// maxReason bounds the reason phrase (the message is also in the body).
const maxReason = 300

// writeWithReason writes a refusal over HTTP/1.x with the error's message
// as the status line's reason phrase ("HTTP/1.1 422 operation has
// complexity 1813, which exceeds the limit of 1000"), so a client that
// shows only the status line — the Node SDK 0.1.24 throws `GraphQL
// request failed: ${status} ${statusText}` without reading the body —
// still tells its user why. The status code, headers and body are those
// of any refusal; the connection is closed after it. It reports false
// (nothing written) where the connection cannot be taken over (HTTP/2, a
// writer without Hijack): the caller writes the response as usual.
func writeWithReason(w http.ResponseWriter, r *http.Request, status int, reason string, body []byte) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	if er, ok := w.(*echo.Response); ok {
		// For the access log and metrics, which read these after the handler.
		er.Status, er.Size, er.Committed = status, int64(len(body)), true
	}
	h := w.Header().Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	h.Del("Transfer-Encoding")
	bw := buf.Writer
	if bw == nil {
		bw = bufio.NewWriter(conn)
	}
	fmt.Fprintf(bw, "HTTP/1.%d %03d %s\r\n", r.ProtoMinor, status, reasonPhrase(status, reason))
	_ = h.Write(bw)
	_, _ = bw.WriteString("\r\n")
	if r.Method != http.MethodHead {
		_, _ = bw.Write(body)
	}
	_ = bw.Flush()
	return true
}

// reasonPhrase is reason made safe for a status line (visible ASCII and
// spaces, RFC 9112 reason-phrase), shortened, or the status's usual text.
func reasonPhrase(status int, reason string) string {
	var b strings.Builder
	for _, c := range reason {
		if b.Len() >= maxReason {
			b.WriteString("...")
			break
		}
		switch {
		case c == ' ' || (c > 0x20 && c < 0x7f):
			b.WriteRune(c)
		case c == '\t' || c == '\n' || c == '\r':
			b.WriteByte(' ')
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		return s
	}
	return http.StatusText(status)
}
