package wsapi

// RecheckPrincipal re-authenticates the open sockets of principalID
// (app.AnyPrincipal: every socket), so a key revoked or a user suspended or
// archived on any replica loses its sockets here at once rather than at the
// next ping. Each recheck runs on its own goroutine.
func (h *Handler) RecheckPrincipal(principalID string) {
	h.mu.Lock()
	due := make([]*session, 0, len(h.live))
	for s := range h.live {
		due = append(due, s)
	}
	h.mu.Unlock()
	for _, s := range due {
		s.mu.Lock()
		p := s.principal
		s.mu.Unlock()
		if p != nil && (principalID == "*" || p.ID == principalID) {
			go s.recheck()
		}
	}
}
