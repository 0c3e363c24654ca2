package auditctx_test

import (
	"context"
	"testing"

	"github.com/threadengine/engine/app/auditctx"
)

type key struct{}

// An ended context's values stay and its end does not: the line of a
// committed action is still written.
func TestDetached(t *testing.T) {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "principal"))
	cancel()
	d, stop := auditctx.Detached(ctx)
	defer stop()
	if d.Err() != nil || d.Value(key{}) != "principal" {
		t.Fatalf("detached: err %v, value %v", d.Err(), d.Value(key{}))
	}
	if _, ok := d.Deadline(); !ok {
		t.Fatal("no bound on the write")
	}
}
