package e2e

import (
	"os"
	"testing"

	"github.com/threadengine/engine/test/testrun"
)

// TestMain runs four tests at a time: every test starts its own engine on
// its own database and port and mostly waits on it (testrun.Parallel).
// Not more: an engine on PostgreSQL keeps up to 33 connections (25
// writers, 8 readers), and at six at a time the package with the rest of
// go test -p 4 ./... went over PostgreSQL's default max_connections (100).
func TestMain(m *testing.M) {
	testrun.Parallel(4)
	os.Exit(m.Run())
}
