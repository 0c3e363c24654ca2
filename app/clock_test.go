package app_test

import (
	"sync"
	"time"
)

// fakeClock is contracts_test.go's clock (the other areas' tests use
// portstest.Clock).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
