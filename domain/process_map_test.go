package domain

import "testing"

func TestDurationHistogramQuantile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		h      DurationHistogram
		q      float64
		want   int64
		wantOK bool
	}{
		{DurationHistogram{}, 0.5, 0, false},
		{DurationHistogram{-1: 5}, 0.5, 0, false},
		{DurationHistogram{0: 1}, 0.5, 1, true},
		{DurationHistogram{10: 10}, 0.95, 1024, true},
		{DurationHistogram{3: 50, 10: 50}, 0.5, 8, true},
		{DurationHistogram{3: 50, 10: 50}, 0.51, 1024, true},
		{DurationHistogram{3: 94, 10: 6}, 0.95, 1024, true},
		{DurationHistogram{3: 95, 10: 5}, 0.95, 8, true},
	}
	for i, c := range cases {
		got, ok := c.h.Quantile(c.q)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%d: Quantile(%v) = %d, %v; want %d, %v", i, c.q, got, ok, c.want, c.wantOK)
		}
	}
}

func TestEdgeAllowed(t *testing.T) {
	t.Parallel()
	c := Contract{EntryPoints: []string{"a"}, Steps: []ContractStep{{Name: "a"}, {Name: "b"}},
		Transitions: []Transition{{From: "a", To: []string{"b"}}}}
	for _, x := range []struct {
		from, to string
		want     bool
	}{{"", "a", true}, {"", "b", false}, {"a", "b", true}, {"b", "a", false}, {"a", "zz", false}} {
		if got := c.EdgeAllowed(x.from, x.to); got != x.want {
			t.Errorf("%q→%q: %v", x.from, x.to, got)
		}
	}
}
