package sdkdocs

import "strings"

// All is every document an SDK sends.
var All = []string{
	GetThread, GetThreadByRef, GetThreadsByRefNode, GetThreadsByRefGo, GetThreadChain, GetThreadSteps,
	GetThreadValidations, GetCompleteThread, GetStepSubSteps, GetStepHistory,
	PyGetThread, PyGetThreadsByRef, PyGetThreadValidations, PyGetThreadChain, PyGetThreadSteps,
	PyGetCompleteThread, PyGetStepHistory, PyGetStepSubSteps,
}

var canonical = func() map[string]bool {
	m := make(map[string]bool, len(All))
	for _, d := range All {
		m[Canonical(d)] = true
	}
	return m
}()

// Is reports whether doc is one of the SDKs' documents, whatever its
// whitespace and commas (which GraphQL ignores): the SDKs build the same
// tokens with different indentation.
func Is(doc string) bool {
	if len(doc) > maxLen {
		return false
	}
	return canonical[Canonical(doc)]
}

// maxLen is longer than any SDK document with generous indentation.
const maxLen = 8 << 10

// Canonical returns doc's tokens separated by one space: whitespace and
// commas dropped, punctuators split off. It is not a GraphQL lexer — a
// string literal's spaces would be collapsed — which is enough to compare
// documents that hold no string literals, as the SDKs' do not.
func Canonical(doc string) string {
	var b strings.Builder
	b.Grow(len(doc))
	space := false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			space = b.Len() > 0
		case strings.IndexByte("{}()[]:!=@$", c) >= 0:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte(c)
			space = true
		default:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}
