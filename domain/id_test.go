package domain

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"3f1c0f0e-8a4b-4c55-9a51-5d2b7c1e0a11", "order-42", "é-ünïcode"} {
		if !ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	for _, id := range []string{"", "a\x00b", "\xff\xfe", "tab\there", "del\x7f", "c1\u0085", strings.Repeat("x", MaxIDBytes+1)} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
		if err := CheckID("thread", id); KindOf(err) != KindNotFound || CodeOf(err) != CodeNotFound {
			t.Errorf("CheckID(%q) = %v, want not_found", id, err)
		}
	}
	if got := ValidIDs([]string{"a", "b\x00", "c", "\xff"}); strings.Join(got, ",") != "a,c" {
		t.Errorf("ValidIDs = %q", got)
	}
	ids := []string{"a", "b"}
	if got := ValidIDs(ids); &got[0] != &ids[0] {
		t.Error("ValidIDs copied a valid list")
	}
}
