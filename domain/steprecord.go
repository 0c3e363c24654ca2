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
	"strings"
	"time"

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

type stepRecordJSON struct {
	Type           string              `json:"type"`
	ThreadID       string              `json:"thread_id"`
	StepID         string              `json:"step_id"`
	Seq            int                 `json:"seq"`
	StepName       string              `json:"step_name"`
	IdempotencyKey string              `json:"idempotency_key"`
	Status         string              `json:"status"`
	Attempt        int                 `json:"attempt"`
	Actor          string              `json:"actor"`
	ActorService   string              `json:"actor_service"`
	Context        json.RawMessage     `json:"context"`
	Metadata       json.RawMessage     `json:"metadata"`
	StartedAt      *string             `json:"started_at"`
	FinishedAt     *string             `json:"finished_at"`
	RecordedAt     string              `json:"recorded_at"`
	PrevHash       string              `json:"prev_hash"`
	SubSteps       []subStepRecordJSON `json:"sub_steps"`
}

type subStepRecordJSON struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	Payload    json.RawMessage `json:"payload"`
	RecordedAt string          `json:"recorded_at"`
}

func recordTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := RecordTime(*t)
	return &s
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
func (r StepRecord) Canonical() ([]byte, error) {
	out := stepRecordJSON{Type: StepRecordType, ThreadID: r.ThreadID, StepID: r.StepID, Seq: r.Seq, StepName: r.StepName,
		IdempotencyKey: r.IdempotencyKey, Status: r.Status, Attempt: r.Attempt, Actor: r.Actor, ActorService: r.ActorService,
		StartedAt: recordTimePtr(r.StartedAt), FinishedAt: recordTimePtr(r.FinishedAt), RecordedAt: RecordTime(r.RecordedAt),
		PrevHash: r.PrevHash, SubSteps: make([]subStepRecordJSON, 0, len(r.SubSteps))}
	var err error
	if out.Context, err = jsonObject("context", r.Context); err != nil {
		return nil, err
	}
	if out.Metadata, err = jsonObject("metadata", r.Metadata); err != nil {
		return nil, err
	}
	for _, s := range r.SubSteps {
		p, err := jsonObject("sub-step payload", s.Payload)
		if err != nil {
			return nil, err
		}
		out.SubSteps = append(out.SubSteps, subStepRecordJSON{ID: s.ID, Name: s.Name, Status: s.Status, Payload: p,
			RecordedAt: RecordTime(s.RecordedAt)})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// StepHash is "sha256:" + hex(SHA-256(Canonical())).
func StepHash(r StepRecord) (string, error) {
	b, err := r.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return StepHashPrefix + hex.EncodeToString(sum[:]), nil
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
