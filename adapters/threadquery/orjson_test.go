package threadquery

import "testing"

func TestOrJSONIsCanonical(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "{}"},
		{`{"y":2}`, `{"y":2}`},
		{`{"y": 2, "s": "a b"}`, `{"s":"a b","y":2}`},
		// jsonb's order (shorter keys first) and Go's HTML escaping read back alike.
		{`{"b": 1, "aa": "<x>", "n": 1.50}`, `{"aa":"<x>","b":1,"n":1.50}`},
		{`{"aa":"\u003cx\u003e","b":1,"n":1.50}`, `{"aa":"<x>","b":1,"n":1.50}`},
		{`[{"z":1,"a":[2,{"d":1,"c":2}]}]`, `[{"a":[2,{"c":2,"d":1}],"z":1}]`},
		{"{\n  \"k\": [1, 2]\n}", `{"k":[1,2]}`},
		{`not json `, `not json `},
	}
	for _, c := range cases {
		if got := orJSON(c.in, "{}"); got != c.want {
			t.Errorf("orJSON(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
