//go:build unix

package sqldb

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDataFile takes an exclusive advisory lock on path+".lock" for the life
// of the process. SQLite is single-process here: a second engine on the same
// database file would split notifications, caches and waits between two
// processes that cannot wake each other, so it is refused.
func lockDataFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("database.url: %s is in use by another threadengine process: an embedded SQLite "+
				"database serves one engine at a time (stop the other one, or use PostgreSQL to run several replicas)", path)
		}
		return nil, fmt.Errorf("database.url: lock %s.lock: %w", path, err)
	}
	return f, nil
}
