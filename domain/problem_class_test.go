package domain

import "testing"

func TestMessageClass(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"timeout after 1200 ms calling psp-7", "timeout after <n> ms calling psp-<n>"},
		{"timeout after 950 ms calling psp-2", "timeout after <n> ms calling psp-<n>"},
		{"order 3f2b9c1e-1111-4222-8333-944445555666 not found", "order <id> not found"},
		{`bin "B-45" empty`, `bin "…" empty`},
		{"  card   declined ", "card declined"},
		{"deadbeef is a word, cafe too", "deadbeef is a word, cafe too"},
		{"hash 9f86d081884c7d65 mismatch", "hash <n> mismatch"},
	}
	for _, c := range cases {
		if got := MessageClass(c.in); got != c.want {
			t.Errorf("MessageClass(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
