package enginetest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// exited tells a running child from one that ended (a zombie until it is
// waited for, then gone): BoundAddrs stops waiting for an engine that died
// at start.
func TestExited(t *testing.T) {
	if exited(os.Getpid()) {
		t.Fatal("this process counted as exited")
	}
	cmd := exec.Command("sh", "-c", "read x || true") // runs until its stdin closes
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if exited(cmd.Process.Pid) {
		t.Fatal("a running child counted as exited")
	}
	in.Close()
	// Ended, not waited for: a zombie, once the shell has read its end of
	// input (the test's timeout bounds the wait; exited never seeing it
	// fails it).
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !exited(cmd.Process.Pid) {
		<-tick.C
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !exited(cmd.Process.Pid) {
		t.Fatal("a waited-for child not counted as exited")
	}
}
