package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestContentHash(t *testing.T) {
	t.Parallel()
	// Known answer: sha256 of the canonical JSON, computed independently.
	sum := sha256.Sum256([]byte(`{"context":{"a":"1","b":"true"},"metadata":{"code":504,"error":"gw timeout","nested":{"y":[1,"x"],"z":null}}}`))
	want := hex.EncodeToString(sum[:])
	got := ContentHash(map[string]string{"b": "true", "a": "1"},
		map[string]any{"nested": map[string]any{"z": nil, "y": []any{1, "x"}}, "error": "gw timeout", "code": 504})
	if got != want {
		t.Fatalf("ContentHash = %s, want %s", got, want)
	}

	empty := sha256.Sum256([]byte(`{"context":{},"metadata":{}}`))
	if got := ContentHash(nil, nil); got != hex.EncodeToString(empty[:]) {
		t.Errorf("nil maps hash as %s", got)
	}
	if ContentHash(nil, nil) != ContentHash(map[string]string{}, map[string]any{}) {
		t.Error("nil and empty maps must hash the same")
	}
	if ContentHash(map[string]string{"a": "1"}, nil) == ContentHash(map[string]string{"a": "2"}, nil) {
		t.Error("different contexts hash the same")
	}
	if ContentHash(map[string]string{"a": "1"}, nil) == ContentHash(nil, map[string]any{"a": "1"}) {
		t.Error("context and metadata are not separated")
	}
	// Unencodable values still hash deterministically.
	nan := map[string]any{"x": func() {}}
	if ContentHash(nil, nan) == "" {
		t.Error("unencodable metadata gave an empty hash")
	}
}

func TestChainHashKnownAnswer(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("x", 3600))
	l := ChainLink{ThreadID: "t1", StepID: "s1", StepName: "pay", ContentHash: "c0ffee", PrevHash: "hmac-sha256-v1:abc", RecordedAt: at}
	msg := "hmac-sha256-v1:abc:t1:s1:pay:c0ffee:2026-03-04T04:06:07.123456Z"
	if got := ChainMessage(l); got != msg {
		t.Fatalf("ChainMessage = %q, want %q", got, msg)
	}
	m := hmac.New(sha256.New, []byte("secret"))
	m.Write([]byte(msg))
	want := "hmac-sha256-v2:" + hex.EncodeToString(m.Sum(nil))
	if got := ChainHash([]byte("secret"), "v2", l); got != want {
		t.Fatalf("ChainHash = %s, want %s", got, want)
	}
	if ChainHash([]byte("other"), "v2", l) == want {
		t.Error("secret does not key the hash")
	}
	l.Hash = "ignored"
	if ChainHash([]byte("secret"), "v2", l) != want {
		t.Error("ChainHash must ignore l.Hash")
	}
}

func TestChainTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "2026-01-01T00:00:00Z"},
		{time.Date(2026, 1, 1, 0, 0, 0, 999, time.UTC), "2026-01-01T00:00:00Z"},
		{time.Date(2026, 1, 1, 0, 0, 0, 1500, time.UTC), "2026-01-01T00:00:00.000001Z"},
		{time.Date(2026, 1, 1, 0, 0, 0, 120000000, time.UTC), "2026-01-01T00:00:00.12Z"},
		{time.Date(2026, 1, 1, 2, 0, 0, 0, time.FixedZone("y", 2*3600)), "2026-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		if got := ChainTime(tt.in); got != tt.want {
			t.Errorf("ChainTime(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHashVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, v string
		ok    bool
	}{
		{"hmac-sha256-v1:ab", "v1", true},
		{"hmac-sha256-2026:ab", "2026", true},
		{"hmac-sha256-:ab", "", false},
		{"hmac-sha256-v1:", "", false},
		{"hmac-sha256-v1", "", false},
		{"sha256:ab", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		v, ok := HashVersion(tt.in)
		if v != tt.v || ok != tt.ok {
			t.Errorf("HashVersion(%q) = %q, %v", tt.in, v, ok)
		}
	}
}

// buildChain links n steps the way the thread store writes them, rotating
// from secret v1 to v2 halfway through.
func buildChain(n int) []ChainLink {
	secrets := testSecrets()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	links := make([]ChainLink, n)
	prev := ""
	for i := range links {
		v := "v1"
		if i >= n/2 {
			v = "v2"
		}
		l := ChainLink{
			ThreadID: "thread-1", StepID: "step-" + string(rune('a'+i)), StepName: "s" + string(rune('a'+i)),
			ContentHash: ContentHash(map[string]string{"i": string(rune('a' + i))}, nil),
			PrevHash:    prev,
			// Same timestamp for all: the walk must not depend on time order.
			RecordedAt: t0,
		}
		l.Hash = ChainHash(secrets[v], v, l)
		prev = l.Hash
		links[i] = l
	}
	return links
}

func testSecrets() map[string][]byte {
	return map[string][]byte{"v1": []byte("first secret"), "v2": []byte("second secret")}
}

func TestVerifyChain(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		mutate   func([]ChainLink) []ChainLink
		secrets  map[string][]byte
		verified bool
		broken   string // BrokenStepID
		errHas   string
		total    int
	}{
		{name: "intact", mutate: nil, verified: true, total: 6},
		{name: "order does not matter", mutate: func(l []ChainLink) []ChainLink {
			return []ChainLink{l[4], l[1], l[5], l[0], l[3], l[2]}
		}, verified: true, total: 6},
		{name: "empty", mutate: func([]ChainLink) []ChainLink { return nil }, verified: true, total: 0},
		{name: "tampered content", mutate: func(l []ChainLink) []ChainLink {
			l[2].ContentHash = ContentHash(map[string]string{"i": "changed"}, nil)
			return l
		}, broken: "step-c", errHas: "Hash tampering detected at step sc (step-c)", total: 6},
		{name: "tampered step name", mutate: func(l []ChainLink) []ChainLink {
			l[0].StepName = "renamed"
			return l
		}, broken: "step-a", errHas: "Hash tampering detected at step renamed (step-a)", total: 6},
		{name: "tampered time", mutate: func(l []ChainLink) []ChainLink {
			l[5].RecordedAt = l[5].RecordedAt.Add(time.Microsecond)
			return l
		}, broken: "step-f", errHas: "tampering", total: 6},
		{name: "sub-microsecond time change is not tampering", mutate: func(l []ChainLink) []ChainLink {
			l[5].RecordedAt = l[5].RecordedAt.Add(999)
			return l
		}, verified: true, total: 6},
		{name: "deleted middle link", mutate: func(l []ChainLink) []ChainLink {
			return append(l[:3:3], l[4:]...)
		}, broken: "step-e", errHas: "Chain incomplete: traversed 3 of 5 events", total: 5},
		{name: "extra forked link", mutate: func(l []ChainLink) []ChainLink {
			fork := ChainLink{ThreadID: "thread-1", StepID: "step-z", StepName: "sz", PrevHash: l[1].Hash, RecordedAt: t0}
			fork.Hash = ChainHash(testSecrets()["v1"], "v1", fork)
			return append(l, fork)
		}, errHas: "Chain incomplete: traversed 6 of 7 events", total: 7},
		{name: "no first link", mutate: func(l []ChainLink) []ChainLink {
			return l[1:]
		}, broken: "step-b", errHas: "traversed 0 of 5", total: 5},
		{name: "unknown secret version", secrets: map[string][]byte{"v1": []byte("first secret")},
			broken: "step-d", errHas: `Unknown hash secret version "v2"`, total: 6},
		{name: "wrong secret", secrets: map[string][]byte{"v1": []byte("nope"), "v2": []byte("second secret")},
			broken: "step-a", errHas: "tampering", total: 6},
		{name: "hash without prefix", mutate: func(l []ChainLink) []ChainLink {
			l[0].Hash = "sha256:" + strings.TrimPrefix(l[0].Hash, "hmac-sha256-v1:")
			return l
		}, broken: "step-a", errHas: "Unsupported hash format", total: 6},
		{name: "cycle does not loop forever", mutate: func(l []ChainLink) []ChainLink {
			l[0].PrevHash = l[5].Hash // no link starts from ""
			return l
		}, errHas: "traversed 0 of 6", total: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			links := buildChain(6)
			if tt.mutate != nil {
				links = tt.mutate(links)
			}
			secrets := tt.secrets
			if secrets == nil {
				secrets = testSecrets()
			}
			st := VerifyChain(secrets, links)
			if st.Verified != tt.verified || st.TotalEvents != tt.total {
				t.Fatalf("status = %+v, want verified %v total %d", st, tt.verified, tt.total)
			}
			if tt.verified {
				if st.Error != "" || st.BrokenStepID != "" || st.BrokenAt != nil {
					t.Errorf("verified chain carries a break: %+v", st)
				}
				return
			}
			if tt.broken != "" && st.BrokenStepID != tt.broken {
				t.Errorf("BrokenStepID = %q, want %q", st.BrokenStepID, tt.broken)
			}
			if st.BrokenAt == nil {
				t.Error("BrokenAt not set")
			}
			if !strings.Contains(st.Error, tt.errHas) {
				t.Errorf("Error = %q, want it to contain %q", st.Error, tt.errHas)
			}
		})
	}
}

func BenchmarkVerifyChain1000(b *testing.B) {
	links := buildChain(1000)
	secrets := testSecrets()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st := VerifyChain(secrets, links); !st.Verified {
			b.Fatal(st.Error)
		}
	}
}

// An alternate secret of a version verifies that version's links (each
// replica's own version-1 key from before keys were shared); it does not make
// a changed link verify, and a version with no secret at all is unknown.
func TestAlternateKeysVerifyTheirVersion(t *testing.T) {
	main, other := []byte("main-secret-0123456789abcdef0123"), []byte("other-secret-0123456789abcdef012")
	l := ChainLink{ThreadID: "t", StepID: "s", StepName: "pay", ContentHash: ContentHash(nil, nil), RecordedAt: time.Unix(1, 0)}
	l.Hash = ChainHash(other, "1", l)
	only := map[string][]byte{"1": main}
	if r := VerifyLink(only, l); !strings.Contains(r, "mismatch") {
		t.Fatalf("without the alternate: %q", r)
	}
	with := map[string][]byte{"1": main, AlternateKey("1", "fp"): other}
	if r := VerifyLink(with, l); r != "" {
		t.Fatalf("with the alternate: %q", r)
	}
	changed := l
	changed.StepName = "refund"
	if r := VerifyLink(with, changed); !strings.Contains(r, "mismatch") {
		t.Fatalf("changed link: %q", r)
	}
	if r := VerifyLink(map[string][]byte{AlternateKey("2", "fp"): other}, l); !strings.Contains(r, "Unknown") {
		t.Fatalf("another version's alternate: %q", r)
	}
}
