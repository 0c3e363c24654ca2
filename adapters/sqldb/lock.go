package sqldb

import (
	"errors"
	"fmt"

	"github.com/gofrs/flock"
)

// lockDataFile takes an exclusive lock on path+".lock" for the life of the
// process (flock on Unix, LockFileEx on Windows). SQLite is single-process
// here: a second engine on the same database file would split
// notifications, caches and waits between two processes that cannot wake
// each other, so it is refused.
func lockDataFile(path string) (*flock.Flock, error) {
	l := flock.New(path+".lock", flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil // no file locking on this platform (plan9, wasm): unguarded, as before
	}
	if err != nil {
		return nil, fmt.Errorf("database.url: lock %s.lock: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("database.url: %s is in use by another threadengine process: an embedded SQLite "+
			"database serves one engine at a time (stop the other one, or use PostgreSQL to run several replicas)", path)
	}
	return l, nil
}
