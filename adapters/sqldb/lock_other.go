//go:build !unix

package sqldb

import "os"

// lockDataFile is a no-op where flock is unavailable.
func lockDataFile(string) (*os.File, error) { return nil, nil }
