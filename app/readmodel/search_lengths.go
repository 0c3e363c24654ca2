package readmodel

import "github.com/threadengine/engine/domain"

// MaxFilterBytes bounds a text filter of a thread search: longer than
// any value a filter can usefully match (ids are at most 200 bytes), and
// far below what a store refuses by itself (SQLite's LIKE pattern limit
// of 50,000 bytes would otherwise surface as an internal error on one
// store only).
const MaxFilterBytes = 4096

// checkLengths refuses a text filter over MaxFilterBytes, the same on
// every store and transport.
func (s ThreadSearch) checkLengths() error {
	for _, f := range []struct{ name, v string }{
		{"actor", s.Actor}, {"contractName", s.ContractName}, {"status", s.Status}, {"refKey", s.RefKey},
		{"refValue", s.RefValue}, {"tag", s.Tag}, {"idPrefix", s.IDPrefix},
	} {
		if len(f.v) > MaxFilterBytes {
			return domain.Invalid(f.name, "%s is %d bytes long; at most %d are accepted", f.name, len(f.v), MaxFilterBytes).
				WithDetail("limit", MaxFilterBytes)
		}
	}
	return nil
}
