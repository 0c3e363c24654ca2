package classifier

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/app/semantic"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// endpoint is a real local chat-completions server answering with content
// (or status/body when set), recording what it was sent.
type endpoint struct {
	mu      sync.Mutex
	content string
	status  int
	body    string
	block   bool
	got     []map[string]any
	auth    []string
}

func (e *endpoint) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		e.mu.Lock()
		e.got = append(e.got, req)
		e.auth = append(e.auth, r.Header.Get("Authorization"))
		content, status, body, block := e.content, e.status, e.body, e.block
		e.mu.Unlock()
		if block {
			<-r.Context().Done() // the client gives up (its timeout)
			return
		}
		if status != 0 {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (e *endpoint) set(f func(*endpoint)) { e.mu.Lock(); f(e); e.mu.Unlock() }

func TestClassifyAgainstALocalEndpoint(t *testing.T) {
	t.Parallel()
	e := &endpoint{content: `{"label":"yes","probability":0.93}`}
	srv := e.serve(t)
	c := New(Config{URL: srv.URL + "/v1", Model: "tiny", Key: "sk-test", Timeout: 5 * time.Second}, srv.Client())
	q := ports.ClassifyRequest{Task: "is it fine?", Labels: []string{"yes", "no"}, State: map[string]string{"note": "ok"}}
	a, err := c.Classify(context.Background(), q)
	if err != nil || a != (ports.ClassifyAnswer{Label: "yes", Probability: 0.93}) {
		t.Fatalf("answer %+v %v", a, err)
	}
	e.mu.Lock()
	req, auth := e.got[0], e.auth[0]
	e.mu.Unlock()
	msgs, _ := req["messages"].([]any)
	if req["model"] != "tiny" || auth != "Bearer sk-test" || len(msgs) != 2 {
		t.Fatalf("request %v auth %q", req, auth)
	}
	user, _ := msgs[1].(map[string]any)["content"].(string)
	if !strings.Contains(user, `"task":"is it fine?"`) || !strings.Contains(user, `"note":"ok"`) || !strings.Contains(user, `"labels":["yes","no"]`) {
		t.Fatalf("user message %s", user)
	}
	// The full URL works too, and a fenced answer with another case is read.
	c2 := New(Config{URL: srv.URL + "/v1/chat/completions", Model: "tiny"}, srv.Client())
	e.set(func(e *endpoint) { e.content = "```json\n{\"label\": \"No\", \"probability\": 0.7}\n```" })
	if a, err := c2.Classify(context.Background(), q); err != nil || a.Label != "no" || a.Probability != 0.7 {
		t.Fatalf("fenced answer %+v %v", a, err)
	}
	if New(Config{}, nil) != nil {
		t.Fatal("a client without URL")
	}
}

func TestClassifyFailuresAreCoded(t *testing.T) {
	t.Parallel()
	e := &endpoint{}
	srv := e.serve(t)
	q := ports.ClassifyRequest{Task: "t", Labels: []string{"yes", "no"}}
	cases := []struct {
		name string
		set  func(*endpoint)
		want string
	}{
		{"server error", func(e *endpoint) { e.status, e.body = 500, `{"error":{"message":"model overloaded"}}` }, "HTTP 500"},
		{"key refused", func(e *endpoint) {
			e.status, e.body = 401, `{"error":{"message":"Incorrect API key provided: sk-proj-abcd"}}`
		}, "HTTP 401"},
		{"unauthorized", func(e *endpoint) { e.status, e.body = 401, `nope` }, "HTTP 401"},
		{"not a completion", func(e *endpoint) { e.status, e.body = 200, `[1,2]` }, "not a chat completion"},
		{"prose", func(e *endpoint) { e.status, e.content = 0, "I think yes." }, "is not {\"label\""},
		{"label not offered", func(e *endpoint) { e.content = `{"label":"maybe","probability":0.9}` }, `answered "maybe"`},
		{"probability out of range", func(e *endpoint) { e.content = `{"label":"yes","probability":7}` }, "not between 0 and 1"},
		{"no probability", func(e *endpoint) { e.content = `{"label":"yes"}` }, "is not {\"label\""},
	}
	c := New(Config{URL: srv.URL + "/v1", Model: "m", Key: "sk-secret"}, srv.Client())
	for _, tc := range cases {
		e.set(tc.set)
		_, err := c.Classify(context.Background(), q)
		if domain.CodeOf(err) != domain.CodeClassifierUnavailable || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("%s: %v", tc.name, err)
		}
		if p := domain.Public(err); p.Status != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d", tc.name, p.Status)
		} else if strings.Contains(p.Message, "sk-proj") || strings.Contains(p.Message, "overloaded") {
			// The provider's own words are for the engine's log only.
			t.Errorf("%s: public message %q carries the provider's answer", tc.name, p.Message)
		}
	}
	// A server that never answers: the configured timeout ends the call.
	e.set(func(e *endpoint) { e.status, e.block = 0, true })
	slow := New(Config{URL: srv.URL + "/v1", Model: "m", Timeout: 50 * time.Millisecond}, srv.Client())
	if _, err := slow.Classify(context.Background(), q); domain.CodeOf(err) != domain.CodeClassifierUnavailable || !strings.Contains(err.Error(), "did not answer within 50ms") {
		t.Errorf("timeout: %v", err)
	}
	// Nobody listening.
	srv.Close()
	if _, err := c.Classify(context.Background(), q); domain.CodeOf(err) != domain.CodeClassifierUnavailable || !strings.Contains(err.Error(), "could not be reached") {
		t.Errorf("closed endpoint: %v", err)
	}
}

// Semantic rules judged through this adapter and a real local endpoint:
// yes above the threshold passes, a confident no or a weak yes refuses with
// the reference's wording, a failing endpoint refuses with
// classifier_unavailable, and without a classifier the step is refused.
func TestSemanticRulesThroughTheAdapter(t *testing.T) {
	t.Parallel()
	e := &endpoint{}
	srv := e.serve(t)
	c := New(Config{URL: srv.URL + "/v1", Model: "m"}, srv.Client())
	rule := domain.SemanticRule{Field: "note", Question: "Is the note polite?", ContextSteps: []string{"order"}}
	qs := []domain.SemanticQuestion{{Rule: rule, Value: "thank you"}}
	validated := map[string]map[string]string{"order": {"item": "book"}}
	judge := func(content string) ([]domain.ContentViolation, error) {
		e.set(func(e *endpoint) { e.status, e.content = 0, content })
		return semantic.Judge(context.Background(), c, "reply", qs, validated)
	}
	if v, err := judge(`{"label":"yes","probability":0.9}`); err != nil || len(v) != 0 {
		t.Fatalf("yes 0.9: %v %v", v, err)
	}
	e.mu.Lock()
	last := e.got[len(e.got)-1]
	e.mu.Unlock()
	if b, _ := json.Marshal(last); !strings.Contains(string(b), `successful_steps`) || !strings.Contains(string(b), `book`) {
		t.Fatalf("the question carries no validated context: %s", b)
	}
	for _, content := range []string{`{"label":"yes","probability":0.6}`, `{"label":"no","probability":0.9}`} {
		v, err := judge(content)
		if err != nil || len(v) != 1 || v[0].Rule != "semantic" || v[0].Message != `semantic field "note" did not satisfy its contract rule` {
			t.Fatalf("%s: %v %v", content, v, err)
		}
	}
	if _, err := judge(`{"label":"perhaps","probability":0.9}`); domain.CodeOf(err) != domain.CodeClassifierUnavailable ||
		!strings.Contains(err.Error(), "semantic classification unavailable") {
		t.Fatalf("unknown label: %v", err)
	}
	if _, err := semantic.Judge(context.Background(), nil, "reply", qs, validated); domain.CodeOf(err) != domain.CodeClassifierUnavailable ||
		!strings.Contains(err.Error(), "semantic classifier is unavailable") {
		t.Fatalf("no classifier: %v", err)
	}
	// A context step without a validated success is a violation; nothing is asked.
	before := len(e.got)
	v, err := semantic.Judge(context.Background(), c, "reply", qs, nil)
	if err != nil || len(v) != 1 || !strings.Contains(v[0].Message, `validated context for "order" is unavailable`) || len(e.got) != before {
		t.Fatalf("missing context step: %v %v", v, err)
	}
	// A goal matched to an action, and a goal matching none.
	e.set(func(e *endpoint) { e.content = `{"label":"charge","probability":0.95}` })
	if a, why := semantic.MatchAction(context.Background(), c, "take the money", []string{"charge", "refund"}); a != "charge" || why != "" {
		t.Fatalf("match: %q %q", a, why)
	}
	e.set(func(e *endpoint) { e.content = `{"label":"none","probability":0.95}` })
	if a, why := semantic.MatchAction(context.Background(), c, "bake a cake", []string{"charge", "refund"}); a != "" || why == "" {
		t.Fatalf("no match: %q %q", a, why)
	}
}
