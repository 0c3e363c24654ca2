package witness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/domain"
)

type memState map[string]Latest

func (m memState) Load(_ context.Context, o string) (Latest, bool, error) {
	l, ok := m[o]
	return l, ok, nil
}
func (m memState) Save(_ context.Context, l Latest) error { m[l.Origin] = l; return nil }

// memLog is a tlog tree in memory.
type memLog struct{ hashes []tlog.Hash }

func (l *memLog) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = l.hashes[x]
	}
	return out, nil
}

func (l *memLog) grow(t *testing.T, n int64, tag string) {
	for i := int64(0); i < n; i++ {
		idx := l.size()
		hs, err := tlog.StoredHashes(idx, []byte(tag+strconv.FormatInt(idx, 10)), l)
		if err != nil {
			t.Fatal(err)
		}
		l.hashes = append(l.hashes, hs...)
	}
}

func (l *memLog) size() int64 {
	for n := int64(0); ; n++ {
		if tlog.StoredHashCount(n) == int64(len(l.hashes)) {
			return n
		}
	}
}

// Every refusal of add-checkpoint has the protocol's status, a consistent
// checkpoint is cosigned (and verifies with the witness's key), and the
// witness's state moves only on success.
func TestAddCheckpointStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	skey, vkey, _ := note.GenerateKey(rand.Reader, "example.com/log")
	signer, _ := note.NewSigner(skey)
	otherSkey, _, _ := note.GenerateKey(rand.Reader, "example.com/log")
	other, _ := note.NewSigner(otherSkey)
	wskey, wvkey, _ := domain.GenerateCosignerKey("witness.example/w")
	cosigner, _ := domain.NewCosigner(wskey)
	wv, _ := domain.NewCosignatureVerifier(wvkey)
	state := memState{}
	w, err := New(cosigner, []string{vkey}, state)
	if err != nil {
		t.Fatal(err)
	}
	log := &memLog{}
	checkpoint := func(l *memLog, s note.Signer) (string, int64, tlog.Hash) {
		n := l.size()
		root, err := tlog.TreeHash(n, l)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := note.Sign(&note.Note{Text: domain.Checkpoint{Origin: "example.com/log", Size: n, Root: root}.Text()}, s)
		return string(b), n, root
	}
	req := func(old int64, proof tlog.TreeProof, cp string) []byte {
		s := "old " + strconv.FormatInt(old, 10) + "\n"
		for _, h := range proof {
			s += base64.StdEncoding.EncodeToString(h[:]) + "\n"
		}
		return []byte(s + "\n" + cp)
	}
	status := func(body []byte) int {
		t.Helper()
		_, err := w.AddCheckpoint(ctx, body)
		var e *Error
		if errors.As(err, &e) {
			return e.Status
		}
		if err != nil {
			t.Fatal(err)
		}
		return 200
	}
	log.grow(t, 5, "a")
	cp5, _, _ := checkpoint(log, signer)
	for body, want := range map[string]int{
		"":                    400,
		"old 01\n\n" + cp5:    400,
		"old 0\n" + cp5:       400, // no empty line
		"old 0\nxx\n\n" + cp5: 400,
		"old 6\n\n" + cp5:     400, // larger than the checkpoint
		"old 0\n\nother.example/log\n1\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n": 404,
	} {
		if got := status([]byte(body)); got != want {
			t.Fatalf("%q: %d, want %d", body, got, want)
		}
	}
	forged, _, _ := checkpoint(log, other)
	if got := status(req(0, nil, forged)); got != 403 {
		t.Fatalf("signed by an unknown key: %d", got)
	}
	if len(state) != 0 {
		t.Fatal("a refusal changed the state")
	}
	lines, err := w.AddCheckpoint(ctx, req(0, nil, cp5))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := note.Open([]byte(cp5+string(lines)), note.VerifierList(wv)); err != nil || len(n.Sigs) != 1 {
		t.Fatalf("cosignature: %v %q", err, lines)
	}
	// Grown by 3: a stale old size is 409 with the witness's size; the right
	// one with its proof is cosigned; a proof of another tree is 422.
	log.grow(t, 3, "a")
	cp8, n8, root8 := checkpoint(log, signer)
	var conflict *Error
	if _, err := w.AddCheckpoint(ctx, req(0, nil, cp8)); !errors.As(err, &conflict) || conflict.Status != 409 || conflict.Size != 5 {
		t.Fatalf("stale old size: %v", err)
	}
	fork := &memLog{}
	fork.grow(t, 8, "b")
	cpFork, _, _ := checkpoint(fork, signer)
	forkProof, _ := tlog.ProveTree(8, 5, fork)
	if got := status(req(5, forkProof, cpFork)); got != 422 {
		t.Fatalf("a fork with its own proof: %d", got)
	}
	proof, _ := tlog.ProveTree(8, 5, log)
	if got := status(req(5, proof, cp8)); got != 200 {
		t.Fatalf("consistent: %d", got)
	}
	if l := state["example.com/log"]; l.Size != n8 || l.Root != root8 {
		t.Fatalf("state %+v", l)
	}
	// The same size again: cosigned if the root is the same, 409 if not.
	if got := status(req(8, nil, cp8)); got != 200 {
		t.Fatalf("same checkpoint again: %d", got)
	}
	if got := status(req(8, nil, cpFork)); got != 409 {
		t.Fatalf("another root at the cosigned size: %d", got)
	}
	if !strings.Contains(string(state["example.com/log"].Note), "\n8\n") {
		t.Fatal("the state lost the cosigned checkpoint")
	}
}
