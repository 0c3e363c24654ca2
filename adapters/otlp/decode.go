package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

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
// a request costs its limits and not twice them.
func readBody(r *http.Request, lim config.OTLPLimits) ([]byte, error) {
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity", "gzip":
	default:
		return nil, malformed("unsupported Content-Encoding %q: use gzip or none", enc)
	}
	if r.ContentLength > lim.MaxBodyBytes {
		return nil, tooLarge(limits.OTLPBodyBytes, "the request body is larger than %d bytes", lim.MaxBodyBytes)
	}
	counted := &countingReader{r: io.LimitReader(r.Body, lim.MaxBodyBytes+1)}
	raw, err := readAll(counted, r.ContentLength, lim.MaxBodyBytes+1)
	if counted.n > lim.MaxBodyBytes {
		return nil, tooLarge(limits.OTLPBodyBytes, "the request body is larger than %d bytes", lim.MaxBodyBytes)
	}
	if err != nil {
		return nil, readErr(counted)
	}
	if enc != "gzip" {
		return raw, nil
	}
	defer putBuf(raw)
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, malformed("malformed gzip body: %v", err)
	}
	size := int64(-1)
	if len(raw) >= 4 { // ISIZE: the uncompressed length mod 2^32, a hint only
		size = int64(binary.LittleEndian.Uint32(raw[len(raw)-4:]))
	}
	out, err := readAll(io.LimitReader(zr, lim.MaxDecodedBytes+1), size, lim.MaxDecodedBytes+1)
	if err != nil || int64(len(out)) > lim.MaxDecodedBytes {
		putBuf(out)
	}
	if int64(len(out)) > lim.MaxDecodedBytes {
		return nil, tooLarge(limits.OTLPDecodedBytes, "the decompressed body is larger than %d bytes", lim.MaxDecodedBytes)
	}
	if err != nil {
		return nil, malformed("malformed gzip body: %v", err)
	}
	return out, nil
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

// decodeProto counts the request's objects on the wire before unmarshalling
// it, so the decoded form (about 100 bytes per attribute, whatever its wire
// size) stays within MaxObjects.
func decodeProto(body []byte, lim config.OTLPLimits, td *tracepb.TracesData) error {
	w := walker{lim: lim}
	if err := w.walk(body, msgTracesData, 0); err != nil {
		return err
	}
	if err := proto.Unmarshal(body, td); err != nil {
		return malformed("malformed OTLP body: %v", err)
	}
	return nil
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

// decodeJSON reads OTLP/JSON in one pass over its tokens, counting objects
// and arrays and rewriting the hex trace and span ids into the base64
// protojson expects for bytes fields, then unmarshals the result. Nothing
// is built per token, so a body of tiny objects is refused before it costs
// memory.
func decodeJSON(body []byte, lim config.OTLPLimits, td *tracepb.TracesData) error {
	if err := scanJSON(body, lim); err != nil {
		return err
	}
	out, err := rewriteJSON(body, lim)
	if err != nil {
		return err
	}
	defer putBuf(out)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(out, td); err != nil {
		return malformed("malformed OTLP body: %v", err)
	}
	return nil
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

var idKeys = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true, "trace_id": true, "span_id": true, "parent_span_id": true}

type jsonFrame struct {
	object    bool
	n         int  // members or elements written
	expectKey bool // in an object: the next token is a key
	key       string
}

func rewriteJSON(body []byte, lim config.OTLPLimits) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	out := bytes.NewBuffer(getBuf(len(body) + len(body)/8))
	var stack []jsonFrame
	objects, roots := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, malformed("malformed OTLP body: %v", err)
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			out.WriteByte(byte(d))
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expectKey = true
			}
			continue
		}
		if top != nil && top.object && top.expectKey {
			key, _ := tok.(string) // the decoder only yields strings here
			if top.n > 0 {
				out.WriteByte(',')
			}
			top.n++
			writeJSONString(out, key)
			out.WriteByte(':')
			top.expectKey, top.key = false, key
			continue
		}
		if top == nil {
			roots++
			if roots > 1 {
				return nil, malformed("malformed OTLP body: more than one JSON value")
			}
		} else if !top.object {
			if top.n > 0 {
				out.WriteByte(',')
			}
			top.n++
		}
		switch t := tok.(type) {
		case json.Delim: // '{' or '['
			objects++
			if objects > lim.MaxObjects {
				return nil, tooLarge(limits.OTLPObjects, "more than %d JSON objects and arrays in one request", lim.MaxObjects)
			}
			if len(stack) >= maxDepth+8 { // the OTLP envelope is 8 levels deep
				return nil, tooLarge(limits.OTLPObjects, "the JSON body is nested deeper than %d levels", maxDepth+8)
			}
			out.WriteByte(byte(t))
			stack = append(stack, jsonFrame{object: t == '{', expectKey: t == '{'})
			continue
		case string:
			if top != nil && top.object && idKeys[top.key] {
				raw, err := hex.DecodeString(t)
				if err != nil {
					return nil, malformed("%s %q is not hex", top.key, t)
				}
				t = base64.StdEncoding.EncodeToString(raw)
			}
			writeJSONString(out, t)
		case json.Number:
			if top != nil && top.object && idKeys[top.key] {
				return nil, malformed("%s must be a hex string", top.key)
			}
			out.WriteString(string(t))
		case bool:
			fmt.Fprint(out, t)
		case nil:
			if top != nil && top.object && idKeys[top.key] {
				return nil, malformed("%s must be a hex string", top.key)
			}
			out.WriteString("null")
		}
		if top != nil && top.object {
			top.expectKey = true
		}
	}
	if roots == 0 {
		return nil, malformed("malformed OTLP body: empty")
	}
	return out.Bytes(), nil
}

func writeJSONString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a Go string always encodes
	out.Write(b)
}
