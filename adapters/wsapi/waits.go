package wsapi

import (
	"context"
	"sync"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/domain"
)

// A pending waitFor costs a goroutine and a watcher of its thread (it
// re-reads the database only when that thread changes, app/delivery), so
// the waits one client can park are bounded: per socket
// (limits.ws.max_waits_per_socket) and per principal on this replica
// (limits.ws.max_waits_per_principal), refused with limit_exceeded.

// waits are a session's pending waits by requestId, so cancelWait can end
// one. Their replies are sent when they decide, in any order.
type waits struct {
	mu      sync.Mutex
	pending map[string]context.CancelFunc
}

// waitCounts counts the pending waits of each principal of a Handler.
type waitCounts struct {
	mu           sync.Mutex
	perPrincipal map[string]int
}

// addWait registers the pending wait requestID (cancel ends it) within the
// limits; release frees its place once the wait has answered.
func (s *session) addWait(requestID string, cancel context.CancelFunc) (release func(), err error) {
	perSocket, perPrincipal := s.h.waitLimits()
	w := &s.waits
	w.mu.Lock()
	if _, dup := w.pending[requestID]; dup {
		w.mu.Unlock()
		return nil, invalidFrame("a wait with this requestId is pending on this connection")
	}
	if len(w.pending) >= perSocket {
		w.mu.Unlock()
		s.h.Refusals.Refused(limits.WSWaitsPerSocket)
		return nil, limitErr(domain.KindRateLimited, limits.WSWaitsPerSocket,
			"a connection may have %d pending waits; wait for one to answer or cancel one", perSocket)
	}
	c := &s.h.waitCounts
	key := s.admitted
	c.mu.Lock()
	if c.perPrincipal[key] >= perPrincipal {
		c.mu.Unlock()
		w.mu.Unlock()
		s.h.Refusals.Refused(limits.WSWaitsPerPrincipal)
		return nil, limitErr(domain.KindRateLimited, limits.WSWaitsPerPrincipal,
			"this principal has %d pending waits, the limit; wait for one to answer or cancel one", perPrincipal)
	}
	if c.perPrincipal == nil {
		c.perPrincipal = map[string]int{}
	}
	c.perPrincipal[key]++
	c.mu.Unlock()
	if w.pending == nil {
		w.pending = map[string]context.CancelFunc{}
	}
	w.pending[requestID] = cancel
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.perPrincipal[key]--; c.perPrincipal[key] <= 0 {
				delete(c.perPrincipal, key)
			}
			c.mu.Unlock()
		})
	}, nil
}

// waitLimits are the configured wait limits (the defaults where unset).
func (h *Handler) waitLimits() (perSocket, perPrincipal int) {
	lim, def := h.limits(), config.DefaultLimits().WS
	perSocket, perPrincipal = lim.MaxWaitsPerSocket, lim.MaxWaitsPerPrincipal
	if perSocket <= 0 {
		perSocket = def.MaxWaitsPerSocket
	}
	if perPrincipal <= 0 {
		perPrincipal = def.MaxWaitsPerPrincipal
	}
	return perSocket, perPrincipal
}

// done removes id and reports whether it was still pending (not cancelled).
func (w *waits) done(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.pending[id]
	delete(w.pending, id)
	return ok
}

func (w *waits) cancel(id string) {
	w.mu.Lock()
	cancel, ok := w.pending[id]
	delete(w.pending, id)
	w.mu.Unlock()
	if ok {
		cancel()
	}
}
