package transparency_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/adapters/witnesshttp"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/app/transparency"
	"github.com/threadengine/engine/app/witness"
	"github.com/threadengine/engine/domain"
)

// waitFor polls cond until it holds (a minute at most: the machine may be
// busy; this bounds a hang, it is not a timing requirement).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logFixture is a store with a thread to write steps to and the log's keys.
type logFixture struct {
	store *threadstore.Store
	keys  threadstore.LogKeys
	write func()
	ctx   context.Context
	steps int
}

func newLogFixture(t *testing.T, d sqldb.Dialect) *logFixture {
	t.Helper()
	db := sqldbtest.Open(t, d)
	f := &logFixture{store: threadstore.New(db)}
	f.ctx = authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
	keys, err := threadstore.LoadLogKeys(f.ctx, db, "test.example/log", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.keys = keys
	threads := threadsapp.New(f.store, nil, nil, []byte("secret"), nil)
	th, err := threads.Application().Commands.StartThread.Handle(f.ctx, threadsapp.StartThreadInput{Label: "witness"})
	if err != nil {
		t.Fatal(err)
	}
	f.write = func() {
		t.Helper()
		f.steps++
		if _, err := threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
			StepName: "s", Status: "success", IdempotencyKey: strconv.Itoa(f.steps), Context: map[string]string{}}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// latest is the size and note of the log's latest checkpoint (0 if none).
func (f *logFixture) latest(t *testing.T) (int64, string) {
	t.Helper()
	cp, err := f.store.Checkpoint(f.ctx, -1)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return 0, ""
		}
		t.Fatal(err)
	}
	return cp.Size, cp.Note
}

// realWitness is a `threadengine witness` in this process (its HTTP
// handler and file state) for the fixture's log.
func realWitness(t *testing.T, f *logFixture, name string) (http.Handler, note.Verifier) {
	t.Helper()
	skey, vkey, err := domain.GenerateCosignerKey(name)
	if err != nil {
		t.Fatal(err)
	}
	cosigner, err := domain.NewCosigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := domain.NewCosignatureVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	state, err := witnesshttp.OpenFileState(filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := witness.New(cosigner, f.keys.Verifiers, state)
	if err != nil {
		t.Fatal(err)
	}
	return witnesshttp.Handler(w, slog.New(slog.DiscardHandler)), v
}

// checkpointSize is the size of the checkpoint in an add-checkpoint body.
func checkpointSize(body []byte) int64 {
	_, cp, _ := bytes.Cut(body, []byte("\n\n"))
	lines := strings.Split(string(cp), "\n")
	if len(lines) < 2 {
		return -1
	}
	n, _ := strconv.ParseInt(lines[1], 10, 64)
	return n
}

// runSigning runs SignCheckpoint.Run as the engine does; the returned
// function stops it and waits until it returned.
func runSigning(t *testing.T, tl transparency.Application) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tl.Commands.SignCheckpoint.Run(ctx, 10*time.Millisecond)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("SignCheckpoint.Run did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// A witness that never answers (a real HTTP server holding the request
// until the test ends) neither stops checkpoint signing nor the other
// witness's cosignatures (#27): while its first request is still open, the
// log's checkpoint grows twice and the answering witness cosigns the
// newest. Run's witness goroutines end with Run.
func TestSigningGoesOnWhileAWitnessNeverAnswers(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		var mu sync.Mutex
		requests, open := 0, 0
		release := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			requests++
			open++
			mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-release:
			}
			mu.Lock()
			open--
			mu.Unlock()
		}))
		t.Cleanup(hang.Close)
		t.Cleanup(func() { close(release) }) // runs before hang.Close
		_, hangVerifier := realWitness(t, f, "hang.example/w")
		okHandler, okVerifier := realWitness(t, f, "ok.example/w")
		ok := httptest.NewServer(okHandler)
		t.Cleanup(ok.Close)

		tl := transparency.New(transparency.Deps{Log: f.store, Signer: f.keys.Signer, Verifiers: f.keys.Verifiers,
			Witnesses: []transparency.Witness{
				{Verifier: hangVerifier, Client: witnesshttp.NewClient(hang.URL)},
				{Verifier: okVerifier, Client: witnesshttp.NewClient(ok.URL)},
			},
			// Longer than the test: the request stays open until Run ends.
			WitnessTimeout: time.Hour})
		stop := runSigning(t, tl)

		f.write()
		waitFor(t, "the silent witness holding a request", func() bool { mu.Lock(); defer mu.Unlock(); return open == 1 })
		size, _ := f.latest(t)
		for range 2 {
			f.write()
			prev := size
			waitFor(t, "the checkpoint growing", func() bool { size, _ = f.latest(t); return size > prev })
		}
		mu.Lock()
		if requests != 1 || open != 1 {
			t.Errorf("the silent witness got %d requests, %d open; want its first still open", requests, open)
		}
		mu.Unlock()
		waitFor(t, "the answering witness cosigning the newest checkpoint", func() bool {
			n, cpNote := f.latest(t)
			_, err := note.Open([]byte(cpNote), note.VerifierList(okVerifier))
			return n == size && err == nil
		})
		if _, cpNote := f.latest(t); strings.Contains(cpNote, "hang.example/w") {
			t.Errorf("the silent witness's cosignature is on the checkpoint:\n%s", cpNote)
		}

		stop()
		waitFor(t, "the silent witness's request ending with Run", func() bool { mu.Lock(); defer mu.Unlock(); return open == 0 })
	})
}

// A witness busy with a request is next given the newest checkpoint: the
// ones signed meanwhile are skipped, not queued (#27). Four checkpoints are
// signed while it is busy; a queue would hand it all four. The test sees a
// checkpoint in the database a moment before Run offers it, so when the
// witness is freed its mailbox may still hold the one before the newest:
// then it gets that one and the newest, never more.
func TestABusyWitnessGetsTheNewestCheckpointNext(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		f := newLogFixture(t, d)
		real, v := realWitness(t, f, "slow.example/w")
		var mu sync.Mutex
		var sizes []int64
		gate := make(chan struct{})
		var gateOnce sync.Once
		openGate := func() { gateOnce.Do(func() { close(gate) }) }
		t.Cleanup(openGate)
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			mu.Lock()
			sizes = append(sizes, checkpointSize(body))
			first := len(sizes) == 1
			mu.Unlock()
			if first {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			real.ServeHTTP(rw, r)
		}))
		t.Cleanup(srv.Close)
		tl := transparency.New(transparency.Deps{Log: f.store, Signer: f.keys.Signer, Verifiers: f.keys.Verifiers,
			Witnesses: []transparency.Witness{{Verifier: v, Client: witnesshttp.NewClient(srv.URL)}}, WitnessTimeout: time.Hour})
		runSigning(t, tl)

		f.write()
		waitFor(t, "the witness's first request", func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
		size, _ := f.latest(t)
		for range 4 {
			f.write()
			prev := size
			waitFor(t, "the checkpoint growing", func() bool { size, _ = f.latest(t); return size > prev })
		}
		if err := f.store.Flush(f.ctx); err != nil {
			t.Fatal(err)
		}
		st, err := f.store.LogState(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		final := st.Size
		waitFor(t, "a checkpoint of every leaf", func() bool { size, _ = f.latest(t); return size == final })
		openGate()
		waitFor(t, "the witness cosigning the newest checkpoint", func() bool {
			n, cpNote := f.latest(t)
			_, err := note.Open([]byte(cpNote), note.VerifierList(v))
			return n == final && err == nil
		})
		mu.Lock()
		defer mu.Unlock()
		if len(sizes) < 2 || sizes[0] >= final {
			t.Fatalf("the witness got checkpoints of sizes %v; want a first one older than %d", sizes, final)
		}
		// After the first: the one signed just before the newest (each
		// write above adds one leaf, so its size is final-1) at most, then
		// only the newest, which Run may offer again until it reads the
		// cosignature. A queue would give 2, 3, 4; a mailbox keeping the
		// oldest offer, 2.
		after := sizes[1:]
		if after[0] == final-1 {
			after = after[1:]
		}
		if len(after) == 0 || slices.ContainsFunc(after, func(s int64) bool { return s != final }) {
			t.Errorf("the witness got checkpoints of sizes %v; after the first, the newest (%d), or the one before it then the newest", sizes, final)
		}
	})
}
