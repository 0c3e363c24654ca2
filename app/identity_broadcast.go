package app

import (
	"context"

	"github.com/threadengine/engine/ports"
)

// AnyPrincipal in a credential change means "any principal may be affected":
// every open socket is rechecked.
const AnyPrincipal = "*"

// OnCredentialsChanged registers fn, called on every replica after a
// principal's credentials may have changed (a user updated, one of its keys
// revoked), with that principal's id or AnyPrincipal. Transports holding
// long-lived connections recheck them there, so a revoked key or a suspended
// or archived user loses its open sockets at once, on every replica.
func (s *Identity) OnCredentialsChanged(fn func(principalID string)) {
	s.hmu.Lock()
	s.hooks = append(s.hooks, fn)
	s.hmu.Unlock()
}

// credentialsChanged runs after a committed identity change: the local cache
// is dropped at once; the broadcast reaches every replica, this one included
// (which runs the hooks). Without a broadcast the hooks run here directly.
func (s *Identity) credentialsChanged(principalID string) {
	s.cache.invalidate()
	if s.d.Broadcast == nil {
		s.runHooks(principalID)
		return
	}
	if err := s.d.Broadcast.Publish(context.Background(), ports.ChannelIdentity, principalID); err != nil {
		s.d.Log.Warn("identity change not broadcast: other replicas see it after auth.cache_ttl", "err", err)
		s.runHooks(principalID)
	}
}

// heard handles a credential change broadcast by any replica.
func (s *Identity) heard(payload string) {
	s.cache.invalidate()
	if payload == ports.Resync {
		payload = AnyPrincipal
	}
	s.runHooks(payload)
}

func (s *Identity) runHooks(principalID string) {
	if principalID == "" {
		return
	}
	s.hmu.Lock()
	hooks := append([]func(string){}, s.hooks...)
	s.hmu.Unlock()
	for _, fn := range hooks {
		fn(principalID)
	}
}
