package prommetrics

import "testing"

func TestBoundedLabel(t *testing.T) {
	t.Parallel()
	b := newBoundedLabel([]string{"GetThread"}, 2, "other")
	steps := []struct{ in, want string }{
		{"GetThread", "GetThread"}, {"A", "A"}, {"bad name", "other"}, {"9x", "other"}, {"B", "B"}, {"C", "other"},
		{"A", "A"}, {"other", "other"},
	}
	for _, s := range steps {
		if got, _ := b.value(s.in); got != s.want {
			t.Errorf("value(%q) = %q, want %q", s.in, got, s.want)
		}
	}
}
