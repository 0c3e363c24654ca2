package e2e

import (
	"os"
	"testing"

	"github.com/threadengine/engine/test/testrun"
)

// TestMain runs two tests at a time (testrun.Parallel): every test starts
// its own engine on its own database and port. Alone the package is faster
// at four, but beside the rest of go test -p 4 ./... the machine's two
// cores are the limit: with e2e and browser at four and abuse at three a
// whole idle run took 424 s against 300 s before (every slow package
// slower, test/jssdk 235 s against 65–86 s; docs/contributors/testing.md).
// At six, when a test engine on PostgreSQL kept up to 34 connections,
// PostgreSQL also ran out of connections; test engines now keep up to 15
// (enginetest.TestMaxConns, TestReadConns; engine processes 19).
func TestMain(m *testing.M) {
	testrun.Parallel(2)
	os.Exit(m.Run())
}
