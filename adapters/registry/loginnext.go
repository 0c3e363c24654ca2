package registry

import (
	"net/url"
	"strings"
)

// maxNextLen keeps the login cookie, which carries next through the
// registry round trip, well under browser cookie limits.
const maxNextLen = 1024

// safeNext returns next when it is a same-site path the browser may be sent
// to after signing in, and "" otherwise. Only a single leading "/" is
// accepted: "//host" and "/\host" are network-path references to another
// site in browsers, and browsers drop tabs and newlines from URLs before
// parsing, so "/\t/host" would become "//host"; any backslash or control
// character is therefore refused outright.
func safeNext(next string) string {
	if next == "" || len(next) > maxNextLen || next[0] != '/' {
		return ""
	}
	if len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return ""
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return ""
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	// Sending someone back to /login (or a sign-in route) after signing in
	// would loop; the default landing page is the better answer.
	p := strings.TrimRight(u.Path, "/")
	if p == "/login" || strings.HasPrefix(p, "/auth/") {
		return ""
	}
	return next
}
