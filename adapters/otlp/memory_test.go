package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/app/ingest"
	"github.com/threadengine/engine/domain"
)

// heldIngester holds every call until released, counting how many are
// inside at once: the write that follows decoding, as slow as a busy store.
type heldIngester struct {
	release chan struct{}
	inside  atomic.Int64
	maxIn   atomic.Int64
	calls   atomic.Int64
}

func (h *heldIngester) Handle(ctx context.Context, traces []ingest.Trace) (ingest.IngestResult, error) {
	n := h.inside.Add(1)
	defer h.inside.Add(-1)
	for {
		m := h.maxIn.Load()
		if n <= m || h.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	h.calls.Add(1)
	<-h.release
	runtime.KeepAlive(traces) // the decoded spans are alive while they are written
	return ingest.IngestResult{}, nil
}

// fiveMiB is a legitimate request within the default limits: 5 MiB of
// protobuf once gunzipped (2,500 spans of 16 attributes, 82,500 objects),
// well under 4 MiB as sent.
func fiveMiB(t *testing.T) []byte {
	t.Helper()
	rs := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "checkout-service")}},
		ScopeSpans: []*tracepb.ScopeSpans{{}}}
	for i := 0; i < 2500; i++ {
		sp := &tracepb.Span{TraceId: tid, SpanId: []byte{1, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}, Name: "step",
			StartTimeUnixNano: t0, EndTimeUnixNano: t0 + 1e6}
		for a := 0; a < 16; a++ {
			sp.Attributes = append(sp.Attributes, kv(fmt.Sprintf("attr.%02d", a), fmt.Sprintf("value-%06d-%02d-%s", i, a, bytes.Repeat([]byte("x"), 101))))
		}
		rs.ScopeSpans[0].Spans = append(rs.ScopeSpans[0].Spans, sp)
	}
	wire, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{rs}})
	if err != nil {
		t.Fatal(err)
	}
	if len(wire) < 5<<20 || len(wire) > 6<<20 {
		t.Fatalf("request is %d bytes, want about 5 MiB", len(wire))
	}
	return gz(wire)
}

// liveHeap is the heap still reachable after two collections (the second
// frees what sync.Pool kept in its victim cache).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// postN sends n copies of body at once through h, and returns when every
// one is either writing (held in ing) or waiting for a slot.
func postN(t *testing.T, h *Handler, ing *heldIngester, body []byte, n int) (wait func() []int) {
	t.Helper()
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			w := serve(h, domain.RoleMember, io.NopCloser(bytes.NewReader(body)),
				map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
			codes[i] = w.Code
		}(i)
	}
	// Wait (for a condition, not a time) until every request is either
	// being written or queued for a slot.
	for ing.calls.Load()+h.waiting.Load() < int64(n) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return func() []int {
		close(ing.release)
		wg.Wait()
		return codes
	}
}

// #25.6: the concurrency limit covers decoding and the write that follows,
// so 8 parallel legitimate 5 MiB requests cost what max_concurrent of them
// cost, not 8 times one. Measured as live heap (runtime/metrics), not time.
func TestParallelLargeRequestsStayWithinTheSlotBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 100 MiB")
	}
	body := fiveMiB(t)
	lim := config.DefaultLimits().OTLP
	lim.MaxConcurrent, lim.QueueTimeout = 2, time.Minute
	lim.ByteBurst = 1 << 30 // 40 MiB at once is over the default burst: this measures the slots, not the rate

	// One request held while it is written: what a slot costs.
	ing := &heldIngester{release: make(chan struct{})}
	h := &Handler{Limits: lim, Ingest: ing}
	base := liveHeap()
	done := postN(t, h, ing, body, 1)
	one := int64(liveHeap()) - int64(base)
	if codes := done(); codes[0] != http.StatusOK {
		t.Fatalf("one request: %d", codes[0])
	}

	ing = &heldIngester{release: make(chan struct{})}
	h = &Handler{Limits: lim, Ingest: ing}
	base = liveHeap()
	done = postN(t, h, ing, body, 8)
	eight := int64(liveHeap()) - int64(base)
	codes := done()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	t.Logf("live heap while written: one request %.1f MiB, eight in parallel (max_concurrent 2) %.1f MiB",
		float64(one)/(1<<20), float64(eight)/(1<<20))
	if got := ing.maxIn.Load(); got > int64(lim.MaxConcurrent) {
		t.Errorf("%d requests were written at once, want at most max_concurrent %d", got, lim.MaxConcurrent)
	}
	if ing.calls.Load() != 8 {
		t.Errorf("%d requests written, want 8", ing.calls.Load())
	}
	// The budget: max_concurrent requests' worth (plus a quarter and 4 MiB
	// for what the runtime and the queued goroutines hold).
	if budget := int64(lim.MaxConcurrent)*one*5/4 + 4<<20; eight > budget {
		t.Errorf("eight parallel requests hold %d bytes, budget %d (one holds %d)", eight, budget, one)
	}
	if one < 5<<20 {
		t.Errorf("one request holds %d bytes: the measurement does not see the decoded spans", one)
	}
}
