// Package witnesshttp carries the C2SP tlog-witness protocol over HTTP: the
// witness's POST /add-checkpoint (Handler, with a file for its state) and the
// log's client of it (Client).
package witnesshttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/threadengine/engine/app/witness"
)

// maxBody bounds a request: 63 proof lines, a checkpoint and its signatures
// fit in a few KiB.
const maxBody = 64 << 10

// Handler serves POST /add-checkpoint for w.
func Handler(w *witness.Witness, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, maxBody))
		if err != nil {
			http.Error(rw, "request body too large or unreadable", http.StatusBadRequest)
			return
		}
		lines, err := w.AddCheckpoint(r.Context(), body)
		var we *witness.Error
		switch {
		case errors.As(err, &we):
			log.Warn("witness: checkpoint refused", "status", we.Status, "reason", we.Msg)
			if we.Status == http.StatusConflict {
				rw.Header().Set("Content-Type", "text/x.tlog.size")
				rw.WriteHeader(http.StatusConflict)
				_, _ = io.WriteString(rw, strconv.FormatInt(we.Size, 10)+"\n")
				return
			}
			http.Error(rw, we.Msg, we.Status)
		case err != nil:
			log.Error("witness: add-checkpoint failed", "err", err)
			http.Error(rw, "internal error", http.StatusInternalServerError)
		default:
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = rw.Write(lines)
		}
	})
	return mux
}

// FileState keeps the witness's state in one JSON file, replaced atomically
// (write, fsync, rename, fsync of the directory) on every save: without the
// directory's fsync the rename may not survive a power loss, and a witness
// back with older state would cosign a fork of what it cosigned.
type FileState struct {
	path string
	mu   sync.Mutex
	m    map[string]witness.Latest
	// syncDir makes a rename in dir durable (syncDir; tests replace it).
	syncDir func(dir string) error
}

// syncDir fsyncs the directory dir, which makes the entries renamed into it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("witness state: syncing directory %s: %w", dir, err)
	}
	return d.Close()
}

// OpenFileState reads path (absent: an empty state).
func OpenFileState(path string) (*FileState, error) {
	s := &FileState{path: path, m: map[string]witness.Latest{}, syncDir: syncDir}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &s.m); err != nil {
		return nil, errors.New("witness state " + path + ": " + err.Error())
	}
	return s, nil
}

// Load: see witness.State.
func (s *FileState) Load(_ context.Context, origin string) (witness.Latest, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.m[origin]
	return l, ok, nil
}

// Save: see witness.State.
func (s *FileState) Save(_ context.Context, l witness.Latest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]witness.Latest, len(s.m)+1)
	for k, v := range s.m {
		next[k] = v
	}
	next[l.Origin] = l
	raw, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".witness-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return err
	}
	// Until the directory is synced the new state may be lost: no answer
	// (the witness answers 500 and cosigns nothing). The state in memory
	// stays the old one, which cosigned everything answered so far; the
	// file may already hold the new one, which is only stricter.
	if err := s.syncDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	s.m = next
	return nil
}
