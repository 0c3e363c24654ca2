// Command graphql is a load generator for the GraphQL query API. It seeds a
// thread with 20 steps through the WebSocket SDK protocol (unless -thread-id
// is given), then runs each scenario for -duration with -conns concurrent
// keep-alive connections and prints requests per second and latency
// percentiles.
//
//	go run ./test/load/graphql --url http://127.0.0.1:8081 --key td_… --conns 32 --duration 20s
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadengine/engine/test/load/loadgen"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8081", "engine base URL")
	key := flag.String("key", os.Getenv("THREADENGINE_API_KEY"), "API key (default $THREADENGINE_API_KEY)")
	conns := flag.Int("conns", 32, "concurrent connections")
	duration := flag.Duration("duration", 15*time.Second, "duration of each scenario")
	threadID := flag.String("thread-id", "", "thread to query (default: seed one with 20 steps over WebSocket)")
	seedThreads := flag.Int("seed-threads", 50, "extra threads to seed for the threads(limit:50) scenario (0: none)")
	only := flag.String("scenario", "", "run only this scenario: thread or threads")
	flag.Parse()
	if *key == "" {
		fail("an API key is required (--key or THREADENGINE_API_KEY)")
	}
	base := strings.TrimRight(*url, "/")
	if *threadID == "" {
		id, err := loadgen.Seed(base, *key, 20)
		if err != nil {
			fail("seed: %v", err)
		}
		*threadID = id
		for i := 0; i < *seedThreads; i++ {
			if _, err := loadgen.Seed(base, *key, 1); err != nil {
				fail("seed: %v", err)
			}
		}
		fmt.Printf("seeded thread %s (20 steps) and %d more threads\n", id, *seedThreads)
	}
	scenarios := []struct {
		name, query string
		vars        map[string]any
	}{
		{"thread", loadgen.ThreadQuery, map[string]any{"id": *threadID}},
		{"threads", loadgen.ThreadsQuery, nil},
	}
	for _, s := range scenarios {
		if *only != "" && *only != s.name {
			continue
		}
		body, _ := json.Marshal(map[string]any{"query": s.query, "variables": s.vars})
		r := run(base+"/graphql", *key, body, *conns, *duration)
		fmt.Printf("%-8s conns=%d duration=%s requests=%d errors=%d req/s=%.0f p50=%s p90=%s p99=%s max=%s\n",
			s.name, *conns, *duration, r.n, r.errors, float64(r.n)/duration.Seconds(),
			r.pct(50), r.pct(90), r.pct(99), r.pct(100))
		if r.firstErr != "" {
			fmt.Printf("  first error: %s\n", r.firstErr)
		}
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "graphql load: "+format+"\n", args...)
	os.Exit(1)
}

type result struct {
	n, errors int64
	lat       []time.Duration
	firstErr  string
}

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(float64(len(r.lat)-1) * p / 100)
	return r.lat[i].Round(10 * time.Microsecond)
}

func run(url, key string, body []byte, conns int, d time.Duration) result {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	deadline := time.Now().Add(d)
	var (
		mu       sync.Mutex
		all      []time.Duration
		n, errs  atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			for time.Now().Before(deadline) {
				start := time.Now()
				ok, msg := do(client, url, key, body)
				lat = append(lat, time.Since(start))
				n.Add(1)
				if !ok {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, msg)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(all)
	r := result{n: n.Load(), errors: errs.Load(), lat: all}
	if v, ok := firstErr.Load().(string); ok {
		r.firstErr = v
	}
	return r
}

func do(client *http.Client, url, key string, body []byte) (bool, string) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, err.Error()
	}
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(`"errors"`)) {
		return false, fmt.Sprintf("HTTP %d %.300s", resp.StatusCode, b)
	}
	return true, ""
}
