package domain

// The installation's transparency log: one Merkle tree (RFC 6962 hashing, as
// golang.org/x/mod/sumdb/tlog computes it) whose leaves are the chain links of
// every accepted step and a tombstone for every deleted thread, in the order
// the database committed them. Signed checkpoints (C2SP tlog-checkpoint in a
// C2SP signed note) commit the operator to the tree; inclusion and
// consistency proofs let anyone check a leaf against a checkpoint and two
// checkpoints against each other.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/tlog"
)

// Leaf types.
const (
	LeafStep          = "step"
	LeafThreadDeleted = "thread_deleted"
)

// Reasons a tombstone gives for a thread deletion.
const (
	DeletedByRetention = "retention"
	DeletedByErasure   = "erasure"
	DeletedByOperator  = "deleted"
)

// LogLeaf is one leaf of the log. A step leaf names the step and its chain
// hash (which commits to the whole step record); a tombstone names a deleted
// thread, how many steps it had, its head hash and why it was deleted.
type LogLeaf struct {
	Type string
	// Step leaves.
	ThreadID string
	StepID   string
	Seq      int
	Hash     string
	// RecordHash is set on the leaves of chain version 1 (HMAC) steps
	// logged when the log was introduced: the version-2 hash of the step's
	// record then (StepHash), so their content is checkable without the
	// operator's key from that moment on. Empty for version 2 steps, whose
	// Hash is that hash.
	RecordHash string
	// Tombstones (ThreadID too).
	StepCount int
	LastHash  string
	Reason    string
	DeletedAt time.Time
}

type stepLeafJSON struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	StepID   string `json:"step_id"`
	Seq      int    `json:"seq"`
	Hash     string `json:"hash"`
	// RecordHash: see LogLeaf.RecordHash.
	RecordHash string `json:"record_hash,omitempty"`
}

type tombstoneJSON struct {
	Type      string `json:"type"`
	ThreadID  string `json:"thread_id"`
	StepCount int    `json:"step_count"`
	LastHash  string `json:"last_hash"`
	Reason    string `json:"reason"`
	DeletedAt string `json:"deleted_at"`
}

// StepLeaf is the leaf of a recorded step.
func StepLeaf(threadID, stepID string, seq int, hash string) LogLeaf {
	return LogLeaf{Type: LeafStep, ThreadID: threadID, StepID: stepID, Seq: seq, Hash: hash}
}

// LegacyStepLeaf is the leaf of a chain version 1 step with the hash of its
// record when logged.
func LegacyStepLeaf(threadID, stepID string, seq int, hash, recordHash string) LogLeaf {
	l := StepLeaf(threadID, stepID, seq, hash)
	l.RecordHash = recordHash
	return l
}

// Tombstone is the leaf of a deleted thread.
func Tombstone(t Thread, reason string, at time.Time) LogLeaf {
	return LogLeaf{Type: LeafThreadDeleted, ThreadID: t.ID, StepCount: t.StepCount(), LastHash: t.LastHash(), Reason: reason,
		DeletedAt: at}
}

// Data is the leaf's bytes in the log: RFC 8785 canonical JSON. A leaf
// holds identifiers, hashes and small integers, so it is written directly in
// canonical form (keys in order, strings needing no escape); anything else
// goes through the general canonicaliser. The direct path is on every
// step's ingest path (jcs.Transform re-parses the JSON: the largest share
// of the log's CPU cost, docs/contributors/performance.md).
func (l LogLeaf) Data() []byte {
	if out, ok := l.plainData(); ok {
		return out
	}
	var v any
	switch l.Type {
	case LeafThreadDeleted:
		v = tombstoneJSON{Type: l.Type, ThreadID: l.ThreadID, StepCount: l.StepCount, LastHash: l.LastHash,
			Reason: l.Reason, DeletedAt: RecordTime(l.DeletedAt)}
	default:
		v = stepLeafJSON{Type: LeafStep, ThreadID: l.ThreadID, StepID: l.StepID, Seq: l.Seq, Hash: l.Hash, RecordHash: l.RecordHash}
	}
	b, _ := json.Marshal(v) // strings and ints only: cannot fail
	out, err := jcs.Transform(b)
	if err != nil {
		return b
	}
	return out
}

// plainData writes the leaf's canonical JSON directly when every string is
// printable ASCII without '"' or '\\' (JCS writes those bytes as they are)
// and every integer is exactly representable as an IEEE double (JCS writes
// those in plain decimal); ok is false otherwise. Members are in JCS order
// (keys sorted; all keys are ASCII, so by byte).
func (l LogLeaf) plainData() ([]byte, bool) {
	var ss []string
	var ns []int
	var keys []string
	switch l.Type {
	case LeafThreadDeleted:
		keys = []string{"deleted_at", "last_hash", "reason", "step_count", "thread_id", "type"}
		ss = []string{RecordTime(l.DeletedAt), l.LastHash, l.Reason, "", l.ThreadID, l.Type}
		ns = []int{0, 0, 0, l.StepCount, 0, 0}
	default:
		if l.RecordHash != "" {
			keys = []string{"hash", "record_hash", "seq", "step_id", "thread_id", "type"}
			ss = []string{l.Hash, l.RecordHash, "", l.StepID, l.ThreadID, LeafStep}
			ns = []int{0, 0, l.Seq, 0, 0, 0}
		} else {
			keys = []string{"hash", "seq", "step_id", "thread_id", "type"}
			ss = []string{l.Hash, "", l.StepID, l.ThreadID, LeafStep}
			ns = []int{0, l.Seq, 0, 0, 0}
		}
	}
	size := 2
	for i, k := range keys {
		if k == "seq" || k == "step_count" {
			if ns[i] > 1<<53 || ns[i] < -(1<<53) {
				return nil, false
			}
			size += len(k) + 24
			continue
		}
		if !plainString(ss[i]) {
			return nil, false
		}
		size += len(k) + len(ss[i]) + 6
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, '"', ':')
		if k == "seq" || k == "step_count" {
			out = strconv.AppendInt(out, int64(ns[i]), 10)
			continue
		}
		out = append(out, '"')
		out = append(out, ss[i]...)
		out = append(out, '"')
	}
	return append(out, '}'), true
}

// plainString: printable ASCII other than '"' and '\\'.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ParseLogLeaf reads a leaf's bytes; the bytes must be exactly the canonical
// form of what they say (so one leaf has one reading).
func ParseLogLeaf(data []byte) (LogLeaf, error) {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return LogLeaf{}, fmt.Errorf("leaf is not JSON: %w", err)
	}
	var l LogLeaf
	switch probe.Type {
	case LeafStep:
		var s stepLeafJSON
		if err := json.Unmarshal(data, &s); err != nil {
			return LogLeaf{}, err
		}
		l = LegacyStepLeaf(s.ThreadID, s.StepID, s.Seq, s.Hash, s.RecordHash)
	case LeafThreadDeleted:
		var s tombstoneJSON
		if err := json.Unmarshal(data, &s); err != nil {
			return LogLeaf{}, err
		}
		at, err := time.Parse(RecordTimeLayout, s.DeletedAt)
		if err != nil {
			return LogLeaf{}, fmt.Errorf("tombstone deleted_at: %w", err)
		}
		l = LogLeaf{Type: s.Type, ThreadID: s.ThreadID, StepCount: s.StepCount, LastHash: s.LastHash, Reason: s.Reason,
			DeletedAt: at}
	default:
		return LogLeaf{}, fmt.Errorf("unknown leaf type %q", probe.Type)
	}
	if string(l.Data()) != string(data) {
		return LogLeaf{}, fmt.Errorf("leaf is not in canonical form")
	}
	return l, nil
}

// LeafHash is the RFC 6962 leaf hash of data: SHA-256(0x00 || data).
func LeafHash(data []byte) tlog.Hash { return tlog.RecordHash(data) }

// Checkpoint is the body of a signed checkpoint (C2SP tlog-checkpoint): the
// log's origin, its size and the root hash of the tree of that size.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text is the checkpoint body: origin, size, base64 root, each on a line.
func (c Checkpoint) Text() string {
	return c.Origin + "\n" + strconv.FormatInt(c.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(c.Root[:]) + "\n"
}

// ParseCheckpoint reads a checkpoint body (the text of a signed note);
// extension lines after the root are allowed and ignored.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) < 3 || !strings.HasSuffix(text, "\n") {
		return Checkpoint{}, fmt.Errorf("checkpoint: want origin, size and root hash lines")
	}
	origin := strings.TrimSuffix(lines[0], "\n")
	size, err := strconv.ParseInt(strings.TrimSuffix(lines[1], "\n"), 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != strings.TrimSuffix(lines[1], "\n") {
		return Checkpoint{}, fmt.Errorf("checkpoint: bad size line %q", strings.TrimSuffix(lines[1], "\n"))
	}
	root, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(lines[2], "\n"))
	if err != nil || len(root) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("checkpoint: bad root hash line")
	}
	if origin == "" {
		return Checkpoint{}, fmt.Errorf("checkpoint: empty origin")
	}
	c := Checkpoint{Origin: origin, Size: size}
	copy(c.Root[:], root)
	return c, nil
}
