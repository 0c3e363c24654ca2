package abuse

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func gzipped(b []byte) []byte {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return z.Bytes()
}

// otlpBomb is the attack of issue 14 point 4: about 30 KB of gzip that
// inflates to 32 MiB of tiny JSON objects (which took the engine from 26 to
// 1,642 MiB).
func otlpBomb() []byte {
	var raw bytes.Buffer
	raw.WriteString(`{"resourceSpans":[{"resource":{"attributes":[`)
	item := `{},`
	for raw.Len() < 32<<20-len(item) {
		raw.WriteString(item)
	}
	raw.WriteString(`{}]}}]}`)
	return gzipped(raw.Bytes())
}

// objectBomb stays under the decoded-size limit but is all objects: 2 MiB
// of nested empty attribute values.
func objectBomb() []byte {
	var raw bytes.Buffer
	raw.WriteString(`{"resourceSpans":[{"resource":{"attributes":[`)
	item := `{"key":"k","value":{"arrayValue":{"values":[{},{},{},{},{},{},{},{}]}}},`
	for raw.Len() < 2<<20 {
		raw.WriteString(item)
	}
	raw.WriteString(`{"key":"k"}]}}]}`)
	return gzipped(raw.Bytes())
}

func TestOTLPBombs(t *testing.T) {
	t.Parallel()
	for _, d := range dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := start(t, d)
			member := e.serviceKey(t, "otel-member", "member")
			viewer := e.serviceKey(t, "otel-viewer", "viewer")
			normal, err := newNormalClient(e, e.serviceKey(t, "normal", "member"))
			if err != nil {
				t.Fatal(err)
			}
			defer normal.close()
			bombs := map[string][]byte{"gzip bomb": otlpBomb(), "object bomb": objectBomb()}
			t.Logf("gzip bomb %d bytes, object bomb %d bytes", len(bombs["gzip bomb"]), len(bombs["object bomb"]))

			w := e.during(t, normal.round)
			var wg sync.WaitGroup
			var mu sync.Mutex
			counts := map[int]int{}
			until := time.Now().Add(4 * time.Second)
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					// Paced at one request per 10 ms per attacker, as the
					// GraphQL attacks are: a flood is a rate limiter's
					// business; this checks that each bomb is refused cheaply.
					for n := 0; time.Now().Before(until); n, _ = n+1, <-time.After(10*time.Millisecond) {
						key, name := member, "gzip bomb"
						if i == 3 {
							key = viewer
						}
						if n%2 == 1 {
							name = "object bomb"
						}
						st, b := e.do(t, http.MethodPost, "/v1/traces", key, bytes.NewReader(bombs[name]), "Content-Encoding", "gzip")
						mu.Lock()
						counts[st]++
						mu.Unlock()
						var status struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						}
						_ = json.Unmarshal(b, &status)
						switch {
						case key == viewer && (st != http.StatusForbidden || !strings.HasPrefix(status.Message, "forbidden:")):
							t.Errorf("viewer %s: %d %s, want 403 forbidden", name, st, b)
							return
						case key == member && st != http.StatusRequestEntityTooLarge && st != http.StatusTooManyRequests:
							t.Errorf("member %s: %d %s, want 413 (or 429 while others decode)", name, st, b)
							return
						case key == member && (status.Code != 8 || !strings.HasPrefix(status.Message, "limit_exceeded:")):
							t.Errorf("member %s: %s, want RESOURCE_EXHAUSTED and a limit_exceeded message", name, b)
							return
						}
					}
				}(i)
			}
			wg.Wait()
			t.Logf("answers by status: %v", counts)
			w.check(t, "OTLP bombs ("+string(d)+")")
			st, b := e.do(t, http.MethodGet, "/metrics", "", nil)
			if st != http.StatusOK || !strings.Contains(string(b), `threadengine_limit_refusals_total{limit="otlp_decoded_bytes"}`) {
				t.Errorf("/metrics does not count the refusals: %d", st)
			}
		})
	}
}
