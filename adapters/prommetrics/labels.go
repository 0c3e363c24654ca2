package prommetrics

import "sync"

// boundedLabel keeps a label's values to a fixed set plus at most max more,
// taken in the order they are first seen; any value after that becomes
// other. It is how a label fed by client text (a GraphQL operation name)
// stays bounded without a list of every name decided in advance — the first
// names to arrive are, in practice, the applications' own operations.
type boundedLabel struct {
	mu    sync.Mutex
	known map[string]bool
	extra int
	max   int
	other string
}

func newBoundedLabel(fixed []string, max int, other string) *boundedLabel {
	b := &boundedLabel{known: make(map[string]bool, len(fixed)+max), max: max, other: other}
	for _, v := range fixed {
		b.known[v] = true
	}
	b.known[other] = true
	return b
}

// value returns v when it is known or there is room for it, else other.
// ok reports whether v was new (its series need creating at 0).
func (b *boundedLabel) value(v string) (label string, isNew bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.known[v] {
		return v, false
	}
	if b.extra >= b.max || !validLabelText(v) {
		return b.other, false
	}
	b.known[v] = true
	b.extra++
	return v, true
}

// validLabelText accepts a GraphQL name (letters, digits, underscores, not
// starting with a digit) of at most 64 bytes: what a well-behaved client
// names its operations; anything else is other.
func validLabelText(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for i, r := range v {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
