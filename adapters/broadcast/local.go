// Package broadcast implements ports.Broadcast: PostgreSQL LISTEN/NOTIFY for
// replicas sharing a database, and an in-process fan-out for SQLite (one
// process per database).
package broadcast

import (
	"context"
	"sync"

	"github.com/threadengine/engine/ports"
)

// Local delivers messages to the listeners of this process.
type Local struct {
	mu        sync.Mutex
	listeners map[string][]chan string
	closed    bool
}

var _ ports.Broadcast = (*Local)(nil)

// NewLocal returns an in-process broadcast.
func NewLocal() *Local { return &Local{listeners: map[string][]chan string{}} }

// Publish queues payload for each listener of channel. A listener that is
// far behind drops the message and is told to resync instead.
func (b *Local) Publish(_ context.Context, channel, payload string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.listeners[channel] {
		select {
		case ch <- payload:
		default:
			select {
			case ch <- ports.Resync:
			default: // a resync is already queued behind the backlog
			}
		}
	}
	return nil
}

// Listen: see ports.Broadcast.
func (b *Local) Listen(channel string, fn func(string)) {
	ch := make(chan string, 1024)
	b.mu.Lock()
	b.listeners[channel] = append(b.listeners[channel], ch)
	b.mu.Unlock()
	go func() {
		for p := range ch {
			fn(p)
		}
	}()
}

// Close stops delivering.
func (b *Local) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for _, chs := range b.listeners {
		for _, ch := range chs {
			close(ch)
		}
	}
	b.listeners = map[string][]chan string{}
	return nil
}
