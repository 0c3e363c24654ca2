package contracthttp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
)

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, ""},
		{-time.Second, ""},
		{30 * time.Second, "30s"},
		{5 * time.Minute, "5m"},
		{90 * time.Minute, "1h30m"},
		{48 * time.Hour, "48h"},
		{time.Hour + time.Second, "1h0m1s"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The graph on the wire writes durations as strings over the domain's.
func TestGraphJSONDurations(t *testing.T) {
	c := domain.Contract{EntryPoints: []string{"a"}, TerminalSteps: []string{"a"},
		Steps:  []domain.ContractStep{{Name: "a", Timeout: 72 * time.Hour}},
		Groups: []domain.ContractGroup{{Name: "g", Steps: []string{"a", "a"}, MaxCombinedDuration: 90 * time.Second}}}
	b, err := json.Marshal(graphJSON(c.Graph()))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"timeout":"72h"`, `"max_duration":"1m30s"`, `"mode":"any_of"`, `"transitions":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}
