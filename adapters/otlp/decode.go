package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

// maxDepth bounds nesting (array and kvlist attribute values inside each
// other): deep enough for any real attribute, far from a stack problem.
const maxDepth = 32

func tooLarge(l limits.Name, msg string, args ...any) error {
	return domain.LimitExceeded(domain.KindTooLarge, string(l), msg, args...)
}

func malformed(msg string, args ...any) error {
	return domain.Invalid("", msg, args...)
}

// readBody reads at most MaxBodyBytes as received and, gunzipped, at most
// MaxDecodedBytes: a small gzip bomb stops at the decoded limit instead of
// inflating in memory. Each buffer is allocated once at its final size (the
// length from Content-Length or the gzip trailer, capped by the limit), so
// a request costs its limits and not twice them. spent is the bytes it
// read, whether the body was then refused or not (the wire bytes, or the
// decompressed ones when more): a principal's byte rate is charged for
// bodies refused after reading too.
func readBody(r *http.Request, lim config.OTLPLimits) (body []byte, spent int64, err error) {
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity", "gzip":
	default:
		return nil, 0, malformed("unsupported Content-Encoding %q: use gzip or none", enc)
	}
	if r.ContentLength > lim.MaxBodyBytes {
		return nil, 0, tooLarge(limits.OTLPBodyBytes, "the request body is larger than %d bytes", lim.MaxBodyBytes)
	}
	counted := &countingReader{r: io.LimitReader(r.Body, lim.MaxBodyBytes+1)}
	raw, err := readAll(counted, r.ContentLength, lim.MaxBodyBytes+1)
	spent = counted.n
	if counted.n > lim.MaxBodyBytes {
		return nil, spent, tooLarge(limits.OTLPBodyBytes, "the request body is larger than %d bytes", lim.MaxBodyBytes)
	}
	if err != nil {
		return nil, spent, readErr(counted)
	}
	if enc != "gzip" {
		return raw, spent, nil
	}
	defer putBuf(raw)
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, spent, malformed("malformed gzip body: %v", err)
	}
	size := int64(-1)
	if len(raw) >= 4 { // ISIZE: the uncompressed length mod 2^32, a hint only
		size = int64(binary.LittleEndian.Uint32(raw[len(raw)-4:]))
	}
	out, err := readAll(io.LimitReader(zr, lim.MaxDecodedBytes+1), size, lim.MaxDecodedBytes+1)
	spent = max(spent, int64(len(out)))
	if err != nil || int64(len(out)) > lim.MaxDecodedBytes {
		putBuf(out)
	}
	if int64(len(out)) > lim.MaxDecodedBytes {
		return nil, spent, tooLarge(limits.OTLPDecodedBytes, "the decompressed body is larger than %d bytes", lim.MaxDecodedBytes)
	}
	if err != nil {
		return nil, spent, malformed("malformed gzip body: %v", err)
	}
	return out, spent, nil
}

// bufPool recycles body buffers (*[]byte): a stream of large requests, or
// of bombs refused at a limit, then allocates nothing per request. At most
// two per decoding slot are in use at once; the pool empties itself over two
// garbage collections when idle.
var bufPool sync.Pool

func getBuf(n int) []byte {
	if p, ok := bufPool.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// putBuf returns b to the pool; b must not be used afterwards.
func putBuf(b []byte) {
	if cap(b) >= 64<<10 { // small buffers are cheaper to allocate than to pool
		b = b[:0]
		bufPool.Put(&b)
	}
}

// readAll reads r into a buffer sized for hint bytes (capped at max), and
// grows it only if the hint was short.
func readAll(r io.Reader, hint, max int64) ([]byte, error) {
	if hint < 0 || hint > max {
		hint = max
	}
	if hint < 512 {
		hint = 512
	}
	buf := getBuf(int(hint) + 1) // +1 so a full buffer sees EOF without growing
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// errReadTimeout marks a body cut off by the server's read timeout.
var errReadTimeout = errors.New("read timeout")

func readErr(counted *countingReader) error {
	if errors.Is(counted.err, os.ErrDeadlineExceeded) {
		return errReadTimeout
	}
	return malformed("reading the body: %v", counted.err)
}

// countingReader remembers how much was read and the transport's own error
// (as opposed to gzip's).
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// decodeProto counts the request's objects on the wire before pdata
// unmarshals it, so the decoded form (about 100 bytes per attribute,
// whatever its wire size) stays within MaxObjects.
func decodeProto(body []byte, lim config.OTLPLimits) (ptrace.Traces, error) {
	w := walker{lim: lim}
	if err := w.walk(body, msgTracesData, 0); err != nil {
		return ptrace.Traces{}, err
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return ptrace.Traces{}, malformed("malformed OTLP body: %v", err)
	}
	return req.Traces(), nil
}

// The OTLP trace messages whose repeated submessages cost memory.
type msgKind uint8

const (
	msgNone msgKind = iota
	msgTracesData
	msgResourceSpans
	msgResource
	msgScopeSpans
	msgScope
	msgSpan
	msgEvent
	msgLink
	msgKeyValue
	msgAnyValue
	msgArrayValue
	msgKeyValueList
)

// child is the kind of field num of a kind message (msgNone: not descended).
func child(kind msgKind, num protowire.Number) msgKind {
	switch kind {
	case msgTracesData:
		if num == 1 {
			return msgResourceSpans
		}
	case msgResourceSpans:
		switch num {
		case 1:
			return msgResource
		case 2:
			return msgScopeSpans
		}
	case msgResource:
		if num == 1 {
			return msgKeyValue
		}
	case msgScopeSpans:
		switch num {
		case 1:
			return msgScope
		case 2:
			return msgSpan
		}
	case msgScope:
		if num == 3 {
			return msgKeyValue
		}
	case msgSpan:
		switch num {
		case 9:
			return msgKeyValue
		case 11:
			return msgEvent
		case 13:
			return msgLink
		}
	case msgEvent:
		if num == 3 {
			return msgKeyValue
		}
	case msgLink:
		if num == 4 {
			return msgKeyValue
		}
	case msgKeyValue:
		if num == 2 {
			return msgAnyValue
		}
	case msgAnyValue:
		switch num {
		case 5:
			return msgArrayValue
		case 6:
			return msgKeyValueList
		}
	case msgArrayValue:
		if num == 1 {
			return msgAnyValue
		}
	case msgKeyValueList:
		if num == 1 {
			return msgKeyValue
		}
	}
	return msgNone
}

type walker struct {
	lim            config.OTLPLimits
	objects, spans int
}

func (w *walker) walk(b []byte, kind msgKind, depth int) error {
	if depth > maxDepth {
		return tooLarge(limits.OTLPObjects, "attribute values are nested deeper than %d levels", maxDepth)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return malformed("malformed OTLP body: %v", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return malformed("malformed OTLP body: %v", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return malformed("malformed OTLP body: %v", protowire.ParseError(n))
		}
		b = b[n:]
		sub := child(kind, num)
		if sub == msgNone {
			continue
		}
		if sub == msgSpan {
			w.spans++
			if w.spans > w.lim.MaxSpans {
				return tooLarge(limits.OTLPSpans, "more than %d spans in one request", w.lim.MaxSpans)
			}
		}
		w.objects++
		if w.objects > w.lim.MaxObjects {
			return tooLarge(limits.OTLPObjects, "more than %d objects (spans, attributes, events, links, values) in one request", w.lim.MaxObjects)
		}
		if err := w.walk(v, sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// decodeJSON counts the body's objects and arrays with a byte scan, checks
// it is one well-formed JSON value (encoding/json's validator allocates
// nothing), and lets pdata unmarshal it (hex trace and span ids, camelCase
// or snake_case keys, unknown fields skipped). A body of tiny objects is
// refused before it costs memory.
func decodeJSON(body []byte, lim config.OTLPLimits) (ptrace.Traces, error) {
	if err := scanJSON(body, lim); err != nil {
		return ptrace.Traces{}, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return ptrace.Traces{}, malformed("malformed OTLP body: empty")
	}
	if !json.Valid(body) {
		return ptrace.Traces{}, malformed("malformed OTLP body: not one JSON value")
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalJSON(body); err != nil {
		return ptrace.Traces{}, malformed("malformed OTLP body: %v", err)
	}
	return req.Traces(), nil
}

// scanJSON counts objects and arrays and their nesting with a byte scan (no
// tokens, no allocation), so a body of tiny objects costs milliseconds to
// refuse. Malformed JSON is left to the token pass.
func scanJSON(body []byte, lim config.OTLPLimits) error {
	objects, depth, inString := 0, 0, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			objects++
			depth++
			if objects > lim.MaxObjects {
				return tooLarge(limits.OTLPObjects, "more than %d JSON objects and arrays in one request", lim.MaxObjects)
			}
			if depth > maxDepth+8 { // the OTLP envelope is 8 levels deep
				return tooLarge(limits.OTLPObjects, "the JSON body is nested deeper than %d levels", maxDepth+8)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
