// Package wsapi serves the Threadify SDK WebSocket protocol on GET /threads:
// one JSON object per text frame, replies echo the request's action and are
// sent in request order per connection; notifications are pushed with an ack
// token. See docs/integrators/websocket-protocol.md for the supported actions.
package wsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxMessageBytes is the largest frame the protocol accepts; larger frames
// get an error reply and the connection stays usable.
const MaxMessageBytes = 1 << 20

// Message is one decoded client frame. Fields are kept raw and read through
// lenient accessors: SDKs send null for absent values and non-string values
// inside string maps, and neither may fail the whole frame.
type Message struct {
	Action string
	fields map[string]json.RawMessage
}

// These texts go to the client verbatim and are the ones the SDKs and the
// reference engine use, so they keep their capitals.
var (
	//lint:ignore ST1005 wire text shared with the SDKs
	errInvalidJSON = errors.New("Invalid JSON payload")
	//lint:ignore ST1005 wire text shared with the SDKs
	errMissingAction = errors.New("Missing required field: action")
)

// MaxFrameFields bounds a frame's top-level fields: the richest SDK frame
// (recordThreadEvent) has about 20, and decoding a megabyte of tiny fields
// into a map would cost tens of times the frame's size.
const MaxFrameFields = 64

//lint:ignore ST1005 wire text, capitalised like the SDKs' others
var errTooManyFields = fmt.Errorf("Too many fields: a frame may have at most %d top-level fields", MaxFrameFields)

// Decode parses a frame. A frame that is not one JSON object gives
// errInvalidJSON; one with more than MaxFrameFields top-level fields gives
// errTooManyFields (counted as it is read, before any map is built); an
// object without a string action gives errMissingAction.
func Decode(data []byte) (Message, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Message{}, errInvalidJSON
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return Message{}, errInvalidJSON
		}
		if _, dup := fields[key]; !dup && len(fields) >= MaxFrameFields {
			return Message{}, errTooManyFields
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Message{}, errInvalidJSON
		}
		fields[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Message{}, errInvalidJSON
	}
	if _, err := dec.Token(); err == nil {
		return Message{}, errInvalidJSON
	}
	var action string
	if raw, ok := fields["action"]; !ok || json.Unmarshal(raw, &action) != nil || action == "" {
		return Message{fields: fields}, errMissingAction
	}
	return Message{Action: action, fields: fields}, nil
}

// Has reports whether key is present and not null.
func (m Message) Has(key string) bool {
	raw, ok := m.fields[key]
	return ok && !isNull(raw)
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// Str returns a string field; numbers and booleans are given as their JSON
// text, null and absent as "".
func (m Message) Str(key string) string {
	raw, ok := m.fields[key]
	if !ok {
		return ""
	}
	return scalarString(raw)
}

func scalarString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// Int returns an integer field, or def when absent or not a number.
func (m Message) Int(key string, def int) int {
	raw, ok := m.fields[key]
	if !ok || isNull(raw) {
		return def
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		if n, err := strconv.Atoi(scalarString(raw)); err == nil {
			return n
		}
		return def
	}
	if f > 1e9 || f < -1e9 {
		return def
	}
	return int(f)
}

// StrMap returns an object field with every value coerced to a string
// (null values dropped). ok is false when the field is present but not an
// object.
func (m Message) StrMap(key string) (map[string]string, bool) {
	raw, present := m.fields[key]
	if !present || isNull(raw) {
		return nil, true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		if isNull(v) {
			continue
		}
		out[k] = scalarString(v)
	}
	return out, true
}

// Obj returns an object field as generic JSON values.
func (m Message) Obj(key string) (map[string]any, bool) {
	raw, present := m.fields[key]
	if !present || isNull(raw) {
		return nil, true
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	return obj, true
}

// StrList returns a list of strings (non-strings coerced, nulls dropped).
func (m Message) StrList(key string) ([]string, bool) {
	raw, present := m.fields[key]
	if !present || isNull(raw) {
		return nil, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		if !isNull(v) {
			out = append(out, scalarString(v))
		}
	}
	return out, true
}

// Time parses an ISO-8601/RFC 3339 field; nil when absent. ok is false when
// present but unparseable.
func (m Message) Time(key string) (*time.Time, bool) {
	s := m.Str(key)
	if s == "" {
		return nil, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, false
	}
	t = t.UTC()
	return &t, true
}

// SubStep is one decoded sub-step.
type SubStep struct {
	Name       string
	Status     string
	Payload    map[string]any
	RecordedAt *time.Time
}

// SubSteps decodes the subSteps list; ok is false when it is malformed.
func (m Message) SubSteps() ([]SubStep, bool) {
	raw, present := m.fields["subSteps"]
	if !present || isNull(raw) {
		return nil, true
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	out := make([]SubStep, 0, len(list))
	for _, f := range list {
		sm := Message{fields: f}
		ss := SubStep{Name: sm.Str("name"), Status: sm.Str("status")}
		if ss.Status == "" {
			ss.Status = "success"
		}
		var ok bool
		if ss.Payload, ok = sm.Obj("payload"); !ok {
			// A non-object payload is kept under "value" rather than refused.
			var v any
			_ = json.Unmarshal(f["payload"], &v)
			ss.Payload = map[string]any{"value": v}
		}
		if ss.RecordedAt, ok = sm.Time("recordedAt"); !ok {
			return nil, false
		}
		out = append(out, ss)
	}
	return out, true
}

// Extras returns the top-level fields not in known, as generic JSON.
func (m Message) Extras(known ...string) map[string]any {
	out := map[string]any{}
	for k, raw := range m.fields {
		if hasString(known, k) {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) == nil && v != nil {
			out[k] = v
		}
	}
	return out
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// AutoIdempotencyKey is the SDKs' key for a step without one: FNV-1a 32-bit
// over stepName + JSON(context with sorted keys), 8 lower-case hex digits.
func AutoIdempotencyKey(stepName string, ctx map[string]string) string {
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(stepName)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(ctx[k])
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	h := fnv.New32a()
	h.Write([]byte(b.String()))
	s := strconv.FormatUint(uint64(h.Sum32()), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

// frameSniffer finds the top-level string members "action" and "requestId"
// of a JSON object streamed through Write, without decoding or keeping it: a
// frame too large to decode still gets a reply that names its action and
// request. The whole frame is scanned because a client may add requestId
// after the payload (the JS SDK does); only top-level members count, so a
// "requestId" inside context is never echoed.
type frameSniffer struct {
	found map[string]string

	depth          int
	inStr, esc     bool
	wantKey, isKey bool   // the next / current depth-1 string is a member name
	member         string // wanted member whose value comes next
	buf            []byte // the current depth-1 string, up to sniffMaxLen
	skip           bool   // it has escapes or is too long: not echoed
}

// sniffMaxLen bounds a sniffed value; longer ones are ignored.
const sniffMaxLen = 256

func (f *frameSniffer) Write(p []byte) (int, error) {
	for _, c := range p {
		if f.inStr {
			switch {
			case f.esc:
				f.esc = false
			case c == '\\':
				f.esc, f.skip = true, true
			case c == '"':
				f.inStr = false
				if f.depth == 1 {
					f.endString()
				}
			case f.depth == 1 && len(f.buf) < sniffMaxLen:
				f.buf = append(f.buf, c)
			case f.depth == 1:
				f.skip = true
			}
			continue
		}
		switch c {
		case '"':
			f.inStr, f.buf, f.skip, f.isKey = true, f.buf[:0], false, f.wantKey
		case '{', '[':
			f.depth++
			f.member = ""
			if f.depth == 1 {
				f.wantKey = c == '{'
			}
		case '}', ']':
			f.depth--
		case ',':
			if f.depth == 1 {
				f.wantKey, f.member = true, ""
			}
		}
	}
	return len(p), nil
}

func (f *frameSniffer) endString() {
	s := string(f.buf)
	switch {
	case f.isKey:
		f.wantKey, f.member = false, ""
		if !f.skip && (s == "action" || s == "requestId") {
			f.member = s
		}
	case f.member != "" && !f.skip:
		if f.found == nil {
			f.found = map[string]string{}
		}
		f.found[f.member] = s
		f.member = ""
	}
}

// action is the sniffed action if it looks like one, else "".
func (f *frameSniffer) action() string {
	a := f.found["action"]
	if len(a) > 64 {
		return ""
	}
	for _, r := range a {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return ""
		}
	}
	return a
}

func (f *frameSniffer) requestID() string { return f.found["requestId"] }
