package threadquery

import "testing"

// TestRefIndexPattern: the trigram index is asked for a term's uncommon
// words in order, and for the whole term when that is no narrower.
func TestRefIndexPattern(t *testing.T) {
	st := refStats{vals: []string{"ord-1", "ord-20", "ord-300", "cust-4", "cust-55", "inv-2024-7", "x-1"},
		weights: []float64{0.3, 0.2, 0.2, 0.1, 0.1, 0.06, 0.04}}
	for term, want := range map[string]string{
		"ord-123456":      "%123456%",
		"x-ord-99999":     "%x%99999%",
		"inv-2024-000123": "%000123%",
		"ord-12":          "", // the uncommon word is shorter than a trigram
		"x-ord-1":         "", // the same (x: 4 %, kept)
		"123456":          "", // one word: the term itself
		"ord-cust":        "", // every word common
		"abc-123456":      "", // no word common
		"ord--":           "",
	} {
		if got := refIndexPattern(term, st); got != want {
			t.Errorf("%q: %q, want %q", term, got, want)
		}
	}
	if got := refIndexPattern("ord-123456", refStats{}); got != "" {
		t.Errorf("without statistics: %q", got)
	}
}
