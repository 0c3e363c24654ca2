package wsapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		action  string
		wantErr error
	}{
		{"connect", `{"action":"connect","apiKey":"k","serviceName":null,"maxInFlight":10}`, "connect", nil},
		{"truncated", `{"action":`, "", errInvalidJSON},
		{"array", `[1,2]`, "", errInvalidJSON},
		{"two objects", `{"action":"a"}{"action":"b"}`, "", errInvalidJSON},
		{"null", `null`, "", errInvalidJSON},
		{"no action", `{"x":1}`, "", errMissingAction},
		{"numeric action", `{"action":5}`, "", errMissingAction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.in))
			if err != tt.wantErr || m.Action != tt.action {
				t.Fatalf("Decode(%s) = %q, %v; want %q, %v", tt.in, m.Action, err, tt.action, tt.wantErr)
			}
		})
	}
}

func TestAccessorsCoerce(t *testing.T) {
	m, err := Decode([]byte(`{"action":"startThread","contractName":null,"refs":{"a":"1","b":2,"c":true,"d":null,"e":{"x":1}},
 "tags":["t",3,null],"maxInFlight":"12","startedAt":"2026-11-21T22:10:44.211Z","threadify_metadata":"ok"}`))
	if err != nil {
		t.Fatal(err)
	}
	refs, ok := m.StrMap("refs")
	if !ok || refs["a"] != "1" || refs["b"] != "2" || refs["c"] != "true" || refs["e"] != `{"x":1}` {
		t.Fatalf("refs %v", refs)
	}
	if _, has := refs["d"]; has {
		t.Fatal("null ref kept")
	}
	if m.Str("contractName") != "" || m.Has("contractName") {
		t.Fatal("null contractName is not absent")
	}
	if tags, _ := m.StrList("tags"); len(tags) != 2 || tags[1] != "3" {
		t.Fatalf("tags %v", tags)
	}
	if m.Int("maxInFlight", 10) != 12 || m.Int("missing", 10) != 10 {
		t.Fatal("Int")
	}
	if ts, ok := m.Time("startedAt"); !ok || ts.Nanosecond() != 211000000 {
		t.Fatalf("time %v", ts)
	}
	if _, ok := m.Obj("threadify_metadata"); ok {
		t.Fatal("string metadata decoded as an object")
	}
}

func TestAutoIdempotencyKeyMatchesSDK(t *testing.T) {
	// FNV-1a 32 of `pay{"amount":"5"}` (computed with the SDK's algorithm in node).
	if got := AutoIdempotencyKey("pay", map[string]string{"amount": "5"}); got != "5fd52748" {
		t.Fatalf("key %q", got)
	}
	a := AutoIdempotencyKey("s", map[string]string{"a": "1", "b": "2"})
	b := AutoIdempotencyKey("s", map[string]string{"b": "2", "a": "1"})
	if a != b {
		t.Fatal("key depends on map order")
	}
}

func TestFrameSniffer(t *testing.T) {
	big := strings.Repeat("a", 5000)
	for _, c := range []struct{ in, action, requestID string }{
		{`{"action":"recordThreadEvent","x":"`, "recordThreadEvent", ""},
		{`{ "action" : "addRefs"`, "addRefs", ""},
		{`{"x":"y"`, "", ""},
		{`{"action":"bad action"}`, "", ""},
		{`{"requestId":"r-1","action":"heartbeat","context":{"x":"` + big + `"}}`, "heartbeat", "r-1"},
		// The JS SDK adds requestId last, after the payload.
		{`{"action":"recordThreadEvent","context":{"x":"` + big + `"},"requestId":"r7"}`, "recordThreadEvent", "r7"},
		// Only top-level members count, whatever the nesting or escaping around them.
		{`{"context":{"requestId":"inner","action":"no"},"s":"\"requestId\":\"esc\"","requestId":"outer"}`, "", "outer"},
		{`{"action":"x","requestId":"a\"b"}`, "x", ""},
		{`{"requestId":5,"y":"z"}`, "", ""},
		{`{"requestId":"` + big + `"}`, "", ""},
		{`["action","requestId","r"]`, "", ""},
	} {
		var f frameSniffer
		_, _ = f.Write([]byte(c.in))
		if a, r := f.action(), f.requestID(); a != c.action || r != c.requestID {
			t.Errorf("sniff(%.80s) = %q, %q; want %q, %q", c.in, a, r, c.action, c.requestID)
		}
	}
}

// FuzzDecode: no input may panic the decoder or its accessors, and a
// decoded action always round-trips as a JSON string.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"action":"connect","apiKey":"key-123","serviceName":"checkout-service","maxInFlight":10}`,
		`{"action":"startThread","contractName":"order_flow:2","refs":{"serviceName":"merchant-service","label":"Order-2"},"role":"merchant"}`,
		`{"action":"recordThreadEvent","threadId":"daf1","stepName":"validate","startedAt":"2026-11-21T22:10:44.210Z","finishedAt":"2026-11-21T22:10:44.211Z","context":{"a":"1"},"status":"success","threadify_metadata":{"message":"ok"},"subSteps":[{"name":"inner","status":"success","payload":{"x":1},"recordedAt":"2026-11-21T22:10:44.211Z"}],"idempotencyKey":"88f44761"}`,
		`{"action":"ack_notification","notification_id":"n1","ackToken":"tok-1","processed":true}`,
		`{"action":"threadEnd","threadId":"t","status":"cancelled","reason":"x","by":"me"}`,
		`{"action":`, `[]`, `null`, `{"action":null}`, `{"subSteps":[null,1]}`, "{\"action\":\"a\",\"refs\":{\"k\":[1,{}]}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		if m.Action == "" {
			t.Fatal("decoded without an action")
		}
		if _, err := json.Marshal(m.Action); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"refs", "context", "threadify_metadata"} {
			m.StrMap(k)
			m.Obj(k)
		}
		m.StrList("tags")
		m.Int("maxInFlight", 10)
		m.Time("startedAt")
		m.SubSteps()
		m.Extras("action")
		var sn frameSniffer
		_, _ = sn.Write(data)
		sn.action()
		if k := AutoIdempotencyKey(m.Str("stepName"), map[string]string{"x": m.Str("x")}); len(k) != 8 {
			t.Fatalf("key %q", k)
		}
	})
}
