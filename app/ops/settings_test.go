package ops

import (
	"testing"

	"github.com/threadengine/engine/domain"
)

func TestNormalizeEngineURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "https://engine.example.com", want: "https://engine.example.com"},
		{in: "https://engine.example.com/", want: "https://engine.example.com"},
		{in: "  https://Engine.Example.com:8443/  ", want: "https://engine.example.com:8443"},
		{in: "https://example.com/engine/", want: "https://example.com/engine"},
		{in: "https://example.com/a/b///", want: "https://example.com/a/b"},
		{in: "HTTP://127.0.0.1:8081", want: "http://127.0.0.1:8081"},
		{in: "http://[::1]:8081/x", want: "http://[::1]:8081/x"},
		{in: "", bad: true},
		{in: "engine.example.com", bad: true},
		{in: "ftp://engine.example.com", bad: true},
		{in: "ws://engine.example.com", bad: true},
		{in: "https://user:pw@engine.example.com", bad: true},
		{in: "https://engine.example.com/?x=1", bad: true},
		{in: "https://engine.example.com/?", bad: true},
		{in: "https://engine.example.com/#top", bad: true},
		{in: "https:///path", bad: true},
		{in: "https://engine.example.com:99999", bad: true},
		{in: "https://engine.example.com:0", bad: true},
		{in: "https://exa mple.com", bad: true},
		{in: "https://example.com/a//b", bad: true},
		{in: "https://example.com/a/../b", bad: true},
		{in: "javascript:alert(1)", bad: true},
	}
	for _, tt := range tests {
		got, err := NormalizeEngineURL(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: accepted as %q, want an error", tt.in, got)
				continue
			}
			if de := domain.AsError(err); de.Kind != domain.KindInvalid || de.Field != "public_url" {
				t.Errorf("%q: error %v, want invalid public_url", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestEndpointsOf(t *testing.T) {
	t.Parallel()
	e := EndpointsOf("https://example.com/engine")
	want := Endpoints{HTTP: "https://example.com/engine", WebSocket: "wss://example.com/engine/threads",
		GraphQL: "https://example.com/engine/graphql", OTel: "https://example.com/engine/v1/traces", MCP: "https://example.com/engine/mcp"}
	if e != want {
		t.Fatalf("got %+v", e)
	}
	if EndpointsOf("http://127.0.0.1:8081").WebSocket != "ws://127.0.0.1:8081/threads" {
		t.Fatal("http must map to ws")
	}
	if EndpointsOf("") != (Endpoints{}) {
		t.Fatal("no URL, no endpoints")
	}
}
