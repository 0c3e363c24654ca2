package browser_test

import (
	"os"
	"testing"

	"github.com/threadengine/engine/test/testrun"
)

// TestMain runs two tests at a time (see test/e2e/main_test.go for why not
// more): each starts its own Chromium and its
// own engine on its own database and port, and mostly waits for the page
// (testrun.Parallel).
func TestMain(m *testing.M) {
	testrun.Parallel(2)
	os.Exit(m.Run())
}
