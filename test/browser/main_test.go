package browser_test

import (
	"os"
	"testing"

	"github.com/threadengine/engine/test/testrun"
)

// TestMain runs four tests at a time: each starts its own Chromium and its
// own engine on its own database and port, and mostly waits for the page
// (testrun.Parallel).
func TestMain(m *testing.M) {
	testrun.Parallel(4)
	os.Exit(m.Run())
}
