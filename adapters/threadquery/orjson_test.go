package threadquery

import "testing"

func TestOrJSONCompactsLikeSQLite(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "{}"},
		{`{"y":2}`, `{"y":2}`},
		{`{"y": 2, "s": "a b"}`, `{"y":2,"s":"a b"}`},
		{"{\n  \"k\": [1, 2]\n}", `{"k":[1,2]}`},
		{`not json `, `not json `},
	}
	for _, c := range cases {
		if got := orJSON(c.in, "{}"); got != c.want {
			t.Errorf("orJSON(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
