package domain

import "unicode/utf8"

// MaxIDBytes bounds an id a client may send: every id the engine issues
// (UUIDs, "td_" key ids) is far shorter.
const MaxIDBytes = 200

// ValidID reports whether id can name anything the engine stores: non-empty
// UTF-8 of at most MaxIDBytes without NUL or other control characters.
// PostgreSQL refuses NUL and invalid UTF-8 in text outright, so such an id
// must be turned away before it reaches a store: every store then answers
// the same.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// CheckID is ValidID as an error: an id that cannot exist is not found.
func CheckID(what, id string) error {
	if !ValidID(id) {
		return NotFound(what)
	}
	return nil
}

// ValidIDs keeps the ids that can exist, in order (batch reads ask for
// several ids and simply find none for an invalid one).
func ValidIDs(ids []string) []string {
	for i, id := range ids {
		if !ValidID(id) {
			out := append(make([]string, 0, len(ids)), ids[:i]...)
			for _, id := range ids[i+1:] {
				if ValidID(id) {
					out = append(out, id)
				}
			}
			return out
		}
	}
	return ids
}
