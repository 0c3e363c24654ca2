package witnesshttp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadengine/engine/app/witness"
)

// Save makes the renamed state file durable by syncing its directory after
// the rename (#27: without it, a power loss may bring the witness back with
// older state, which would cosign a fork), and a failing directory sync is
// an error: the new state is not in memory and the witness does not answer.
func TestFileStateSyncsTheDirectoryAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	s, err := OpenFileState(path)
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	s.syncDir = func(d string) error {
		raw, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(raw), `"size": 7`) {
			t.Errorf("directory synced before the new state was renamed into it (%q, %v)", raw, err)
		}
		synced = append(synced, d)
		return syncDir(d) // the real one, on a real directory
	}
	ctx := context.Background()
	if err := s.Save(ctx, witness.Latest{Origin: "log.example", Size: 7}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("directories synced: %v, want [%s]", synced, dir)
	}
	again, err := OpenFileState(path)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok, _ := again.Load(ctx, "log.example"); !ok || l.Size != 7 {
		t.Fatalf("reopened state: %+v %v", l, ok)
	}

	failure := errors.New("EIO")
	s.syncDir = func(string) error { return failure }
	if err := s.Save(ctx, witness.Latest{Origin: "log.example", Size: 9}); !errors.Is(err, failure) {
		t.Fatalf("Save with a failing directory sync: %v, want the failure", err)
	}
	if l, _, _ := s.Load(ctx, "log.example"); l.Size != 7 {
		t.Fatalf("state in memory after a failed save: size %d, want 7 (the last durable one)", l.Size)
	}
	if err := syncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("syncing a missing directory succeeded")
	}
}
