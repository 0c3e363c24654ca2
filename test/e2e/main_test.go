package e2e

import (
	"os"
	"testing"

	"github.com/threadengine/engine/test/testrun"
)

// TestMain runs six tests at a time: every test starts its own engine on
// its own database and port and mostly waits on it (testrun.Parallel).
func TestMain(m *testing.M) {
	testrun.Parallel(6)
	os.Exit(m.Run())
}
