// Package witness is the witness side of the C2SP tlog-witness protocol
// (threadengine witness): it keeps the latest checkpoint it cosigned of each
// log it knows, and cosigns a new one only if it is consistent with it, so a
// log that shows two parties two different histories cannot get both
// cosigned.
package witness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/domain"
)

// Latest is the checkpoint of a log the witness cosigned last.
type Latest struct {
	Origin string    `json:"origin"`
	Size   int64     `json:"size"`
	Root   tlog.Hash `json:"root"`
	// Note is the checkpoint as submitted (kept as evidence).
	Note string `json:"note"`
}

// State stores the latest cosigned checkpoint of each log. Save must be
// durable when it returns: the witness answers only after it.
type State interface {
	Load(ctx context.Context, origin string) (Latest, bool, error)
	Save(ctx context.Context, l Latest) error
}

// Error is a refusal with its tlog-witness HTTP status.
type Error struct {
	Status int
	Msg    string
	// Size is the latest cosigned size (409 on an old size mismatch).
	Size int64
}

func (e *Error) Error() string { return e.Msg }

func refuse(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// Witness answers add-checkpoint.
type Witness struct {
	cosigner note.Signer
	logs     map[string][]note.Verifier // by origin
	state    State
	mu       sync.Mutex // check and save are one step (the spec's race)
}

// New builds a witness signing with cosigner for the logs whose verifier
// keys (signed-note form, the log's GET /v1/log/keys) are given; a key's
// name is its log's origin.
func New(cosigner note.Signer, logKeys []string, state State) (*Witness, error) {
	w := &Witness{cosigner: cosigner, logs: map[string][]note.Verifier{}, state: state}
	for _, k := range logKeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return nil, fmt.Errorf("log key %q: %w", k, err)
		}
		w.logs[v.Name()] = append(w.logs[v.Name()], v)
	}
	if len(w.logs) == 0 {
		return nil, errors.New("a witness needs at least one log key")
	}
	return w, nil
}

// maxProof is the most consistency proof lines a request may carry.
const maxProof = 63

// request is a parsed add-checkpoint body.
type request struct {
	old   int64
	proof tlog.TreeProof
	note  []byte
}

func parseRequest(body []byte) (request, error) {
	var r request
	rd := bufio.NewReader(bytes.NewReader(body))
	line, err := rd.ReadString('\n')
	if err != nil {
		return r, refuse(400, "want an old size line")
	}
	num, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "old ")
	if !ok {
		return r, refuse(400, "want an old size line")
	}
	r.old, err = strconv.ParseInt(num, 10, 64)
	if err != nil || r.old < 0 || strconv.FormatInt(r.old, 10) != num {
		return r, refuse(400, "bad old size %q", num)
	}
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return r, refuse(400, "want an empty line before the checkpoint")
		}
		if line == "\n" {
			break
		}
		if len(r.proof) == maxProof {
			return r, refuse(400, "more than %d consistency proof lines", maxProof)
		}
		h, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(line, "\n"))
		if err != nil || len(h) != tlog.HashSize {
			return r, refuse(400, "bad consistency proof line")
		}
		r.proof = append(r.proof, tlog.Hash(h))
	}
	r.note = body[len(body)-rd.Buffered():]
	return r, nil
}

// AddCheckpoint checks a submitted checkpoint and, if it is consistent with
// the latest one cosigned of its log, records it and returns the cosignature
// line(s). A refusal is an *Error with the protocol's status.
func (w *Witness) AddCheckpoint(ctx context.Context, body []byte) ([]byte, error) {
	r, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	origin, _, _ := strings.Cut(string(r.note), "\n")
	verifiers, ok := w.logs[origin]
	if !ok {
		return nil, refuse(404, "unknown log %q", origin)
	}
	n, err := note.Open(r.note, note.VerifierList(verifiers...))
	if err != nil {
		return nil, refuse(403, "no signature of the log verifies: %v", err)
	}
	cp, err := domain.ParseCheckpoint(n.Text)
	if err != nil || cp.Origin != origin {
		return nil, refuse(400, "bad checkpoint")
	}
	if r.old > cp.Size {
		return nil, refuse(400, "old size %d is larger than the checkpoint's %d", r.old, cp.Size)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, had, err := w.state.Load(ctx, origin)
	if err != nil {
		return nil, err
	}
	if !had {
		prev = Latest{Origin: origin}
	}
	if r.old != prev.Size {
		e := refuse(409, "old size %d is not the latest cosigned size %d", r.old, prev.Size)
		e.Size = prev.Size
		return nil, e
	}
	switch {
	case r.old == cp.Size:
		if had && cp.Root != prev.Root {
			e := refuse(409, "a checkpoint of size %d with another root hash was cosigned: the log forked", cp.Size)
			e.Size = prev.Size
			return nil, e
		}
		if len(r.proof) != 0 {
			return nil, refuse(400, "a consistency proof between equal sizes must be empty")
		}
	case r.old == 0:
		if len(r.proof) != 0 {
			return nil, refuse(400, "the consistency proof must be empty when the old size is 0")
		}
	default:
		if err := tlog.CheckTree(r.proof, cp.Size, cp.Root, prev.Size, prev.Root); err != nil {
			return nil, refuse(422, "the consistency proof from %d to %d does not verify: %v", prev.Size, cp.Size, err)
		}
	}
	cosigned, err := note.Sign(&note.Note{Text: n.Text}, w.cosigner)
	if err != nil {
		return nil, err
	}
	if err := w.state.Save(ctx, Latest{Origin: origin, Size: cp.Size, Root: cp.Root, Note: string(r.note)}); err != nil {
		return nil, err
	}
	// The signature lines after the body's blank line.
	return cosigned[len(n.Text)+1:], nil
}
