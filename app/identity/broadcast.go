package identity

import (
	"context"
	"log/slog"
	"sync"

	"github.com/threadengine/engine/ports"
)

// AnyPrincipal in a credential change means "any principal may be affected":
// every open socket is rechecked.
const AnyPrincipal = "*"

// credentialChanges tells this replica's cache and hooks, and through the
// broadcast every other replica's, that a principal's credentials may have
// changed.
type credentialChanges struct {
	cache *authCache
	bus   ports.Broadcast // nil: this process only
	log   *slog.Logger

	hmu   sync.Mutex
	hooks []func(principalID string)
}

// onChanged registers fn (Module.OnCredentialsChanged).
func (c *credentialChanges) onChanged(fn func(principalID string)) {
	c.hmu.Lock()
	c.hooks = append(c.hooks, fn)
	c.hmu.Unlock()
}

// changed runs after a committed identity change: the local cache is
// dropped at once; the broadcast reaches every replica, this one included
// (which runs the hooks). Without a broadcast the hooks run here directly.
func (c *credentialChanges) changed(principalID string) {
	c.cache.invalidate()
	if c.bus == nil {
		c.runHooks(principalID)
		return
	}
	if err := c.bus.Publish(context.Background(), ports.ChannelIdentity, principalID); err != nil {
		c.log.Warn("identity change not broadcast: other replicas see it after auth.cache_ttl", "err", err)
		c.runHooks(principalID)
	}
}

// heard handles a credential change broadcast by any replica.
func (c *credentialChanges) heard(payload string) {
	c.cache.invalidate()
	if payload == ports.Resync {
		payload = AnyPrincipal
	}
	c.runHooks(payload)
}

func (c *credentialChanges) runHooks(principalID string) {
	if principalID == "" {
		return
	}
	c.hmu.Lock()
	hooks := append([]func(string){}, c.hooks...)
	c.hmu.Unlock()
	for _, fn := range hooks {
		fn(principalID)
	}
}
