package domain

// Chain version 2: a plain SHA-256 hash chain over the RFC 8785 (JCS)
// canonical JSON of a documented step record. It needs no secret, so anyone
// holding an export can recompute it; what makes it trustworthy is the
// transparency log (every link is a leaf of the operator's signed log), not a
// key. docs/integrators/verification.md specifies the record byte for byte.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// StepHashPrefix starts every version-2 chain hash: "sha256:<64 hex>".
const StepHashPrefix = "sha256:"

// StepRecordType is the record's "type" member: it names the version, so a
// record of another kind never hashes the same.
const StepRecordType = "threadengine.step/v2"

// RecordTimeLayout is how the record writes times: UTC, always six
// fractional digits (microseconds, what both databases keep), "Z".
const RecordTimeLayout = "2006-01-02T15:04:05.000000Z"

// RecordTime formats t for a record (truncated to microseconds).
func RecordTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(RecordTimeLayout)
}

// StepRecord is one step attempt as chain version 2 hashes it. Context,
// Metadata and sub-step payloads are JSON texts (as stored or as sent); the
// canonical form re-serialises them, so how they were spelled (key order,
// escapes, number forms) does not matter, only their JSON value.
type StepRecord struct {
	ThreadID       string
	StepID         string
	Seq            int
	StepName       string
	IdempotencyKey string
	Status         string
	Attempt        int
	Actor          string
	ActorService   string
	Context        json.RawMessage // a JSON object; empty = {}
	Metadata       json.RawMessage // a JSON object; empty = {}
	StartedAt      *time.Time
	FinishedAt     *time.Time
	RecordedAt     time.Time
	PrevHash       string // "" for a thread's first step
	SubSteps       []SubStepRecord
}

// SubStepRecord is one sub-step in a StepRecord, in the order it was sent.
type SubStepRecord struct {
	ID         string
	Name       string
	Status     string
	Payload    json.RawMessage // a JSON object; empty = {}
	RecordedAt time.Time
}

// jsonObject is raw when it is a JSON object, {} when empty or null.
func jsonObject(field string, raw json.RawMessage) (json.RawMessage, error) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 || string(s) == "null" {
		return json.RawMessage("{}"), nil
	}
	if s[0] != '{' || !json.Valid(s) {
		return nil, fmt.Errorf("%s is not a JSON object", field)
	}
	return json.RawMessage(s), nil
}

// Canonical is the RFC 8785 canonical JSON of the record: the bytes hashed.
// The record's own members are written directly in canonical form (their
// names are fixed ASCII, so their order is byte order); only the embedded
// objects are canonicalised (canonWriter). The bytes, and the errors, are
// those of json.Marshal of the record followed by jcs.Transform, which is
// how they were made before (steprecord_canon_test.go keeps that as the
// oracle).
//
// The first pass writes every embedded object with the direct writer alone:
// its strict parse of the whole object is also the check that it is valid
// JSON. If any object is not one it is sure of, the second pass does what was
// done before: every object checked in order (the first not an object is the
// error), then canonicalised in order, jcs.Transform deciding what the
// direct writer does not.
func (r StepRecord) Canonical() ([]byte, error) {
	w := getCanonWriter()
	defer putCanonWriter(w)
	if b, err := r.appendCanonical(w, r.Context, r.Metadata, nil); err != errCanonGiveUp {
		return b, err
	}
	ctx, err := jsonObject("context", r.Context)
	if err != nil {
		return nil, err
	}
	meta, err := jsonObject("metadata", r.Metadata)
	if err != nil {
		return nil, err
	}
	payloads := make([]json.RawMessage, 0, len(r.SubSteps))
	for _, s := range r.SubSteps {
		p, err := jsonObject("sub-step payload", s.Payload)
		if err != nil {
			return nil, err
		}
		payloads = append(payloads, p)
	}
	w.checked = true
	return r.appendCanonical(w, ctx, meta, payloads)
}

// appendCanonical writes the record with ctx, meta and payloads (nil: the
// sub-steps' own) as its embedded objects, through w.
func (r StepRecord) appendCanonical(w *canonWriter, ctx, meta json.RawMessage, payloads []json.RawMessage) ([]byte, error) {
	size := 400 + len(r.ThreadID) + len(r.StepID) + len(r.StepName) + len(r.IdempotencyKey) + len(r.Status) +
		len(r.Actor) + len(r.ActorService) + len(r.PrevHash) + len(ctx) + len(meta)
	for _, s := range r.SubSteps {
		size += 120 + len(s.ID) + len(s.Name) + len(s.Status) + len(s.Payload)
	}
	b := make([]byte, 0, size)
	var err error
	b = append(b, `{"actor":`...)
	b = appendRecordString(b, r.Actor)
	b = append(b, `,"actor_service":`...)
	b = appendRecordString(b, r.ActorService)
	b = append(b, `,"attempt":`...)
	b = appendRecordInt(b, r.Attempt)
	b = append(b, `,"context":`...)
	if b, err = w.object(b, ctx, 1); err != nil {
		return nil, err
	}
	b = append(b, `,"finished_at":`...)
	b = appendRecordTimePtr(b, r.FinishedAt)
	b = append(b, `,"idempotency_key":`...)
	b = appendRecordString(b, r.IdempotencyKey)
	b = append(b, `,"metadata":`...)
	if b, err = w.object(b, meta, 1); err != nil {
		return nil, err
	}
	b = append(b, `,"prev_hash":`...)
	b = appendRecordString(b, r.PrevHash)
	b = append(b, `,"recorded_at":`...)
	b = appendRecordTime(b, r.RecordedAt)
	b = append(b, `,"seq":`...)
	b = appendRecordInt(b, r.Seq)
	b = append(b, `,"started_at":`...)
	b = appendRecordTimePtr(b, r.StartedAt)
	b = append(b, `,"status":`...)
	b = appendRecordString(b, r.Status)
	b = append(b, `,"step_id":`...)
	b = appendRecordString(b, r.StepID)
	b = append(b, `,"step_name":`...)
	b = appendRecordString(b, r.StepName)
	b = append(b, `,"sub_steps":[`...)
	for i, s := range r.SubSteps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendRecordString(b, s.ID)
		b = append(b, `,"name":`...)
		b = appendRecordString(b, s.Name)
		b = append(b, `,"payload":`...)
		p := s.Payload
		if payloads != nil {
			p = payloads[i]
		}
		// A payload sits at depth 3 of the record: the record, "sub_steps", the sub-step.
		if b, err = w.object(b, p, 3); err != nil {
			return nil, err
		}
		b = append(b, `,"recorded_at":`...)
		b = appendRecordTime(b, s.RecordedAt)
		b = append(b, `,"status":`...)
		b = appendRecordString(b, s.Status)
		b = append(b, '}')
	}
	b = append(b, `],"thread_id":`...)
	b = appendRecordString(b, r.ThreadID)
	b = append(b, `,"type":`...)
	b = appendRecordString(b, StepRecordType)
	return append(b, '}'), nil
}

// appendRecordString writes a record member's string as json.Marshal and
// then jcs.Transform did: each byte that is not valid UTF-8 becomes U+FFFD
// (json.Marshal's \ufffd, which Transform writes as the character), and the
// rest as RFC 8785 writes a string (appendJCSString).
func appendRecordString(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return appendJCSString(b, replaceInvalidUTF8(s))
		}
		i += size
	}
	return appendJCSString(b, s)
}

// replaceInvalidUTF8 is s with each byte that is not part of valid UTF-8
// replaced by U+FFFD, byte by byte, as json.Marshal does.
func replaceInvalidUTF8(s string) []byte {
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return out
}

// appendRecordInt writes an integer as Transform writes the number: its
// decimal digits while it is exact as a double, else the double's form.
func appendRecordInt(b []byte, n int) []byte {
	const exact = 1 << 53
	if -exact <= int64(n) && int64(n) <= exact {
		return strconv.AppendInt(b, int64(n), 10)
	}
	s, _ := jcs.NumberToJSON(float64(n)) // finite: cannot fail
	return append(b, s...)
}

// appendRecordTime writes RecordTime(t) as a string: its bytes are digits,
// '-', 'T', ':', '.' and 'Z', none of which RFC 8785 escapes. Years 0–9999
// are written digit by digit (what Format writes for them), others by Format.
func appendRecordTime(b []byte, t time.Time) []byte {
	t = t.UTC().Truncate(time.Microsecond)
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, RecordTimeLayout)
		return append(b, '"')
	}
	hour, minute, sec := t.Clock()
	b = append(b, '"')
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6)
	return append(b, 'Z', '"')
}

// appendDigits writes n (0 <= n < 10^width) in exactly width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	b = append(b, make([]byte, width)...)
	for i := len(b) - 1; i >= len(b)-width; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

func appendRecordTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendRecordTime(b, *t)
}

// StepHash is "sha256:" + hex(SHA-256(Canonical())).
func StepHash(r StepRecord) (string, error) {
	b, err := r.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	var h [len(StepHashPrefix) + 2*sha256.Size]byte
	copy(h[:], StepHashPrefix)
	hex.Encode(h[len(StepHashPrefix):], sum[:])
	return string(h[:]), nil
}

// IsStepHash reports whether hash is a version-2 chain hash.
func IsStepHash(hash string) bool {
	rest, ok := strings.CutPrefix(hash, StepHashPrefix)
	if !ok || len(rest) != 64 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// JSONText marshals a decoded value (a step's context or metadata) for a
// StepRecord; nil is {}.
func JSONText(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}
