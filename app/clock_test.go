package app_test

import (
	"context"
	"sync"
	"time"

	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func as(p domain.Principal) context.Context { return app.WithPrincipal(context.Background(), p) }
