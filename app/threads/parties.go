package threads

// What the party commands (InviteParty, JoinThread) share with the WebSocket
// connection: the parties a connection holds, an invitation's lifetime.

import (
	"strconv"
	"sync"
	"time"

	"github.com/threadengine/engine/domain"
)

// DefaultInvitationMaxTTL bounds an invitation's lifetime unless the
// operator sets threads.invitation_max_ttl: 30 days, as the Node SDK's
// index.d.ts documents (expiresIn: "30d").
const DefaultInvitationMaxTTL = 30 * 24 * time.Hour

// ConnParties is what one connection started or joined: thread id → the
// role it acts as there, in the order they came. A connection writes to a
// thread under that role, so one API key may act as different parties from
// different connections.
type ConnParties struct {
	mu    sync.Mutex
	order []string
	roles map[string]string
	ended map[string]bool // threads this connection saw end
}

// maxConnThreads bounds a long-lived connection's list.
const maxConnThreads = 1024

// Add records that the connection acts on threadID as role.
func (c *ConnParties) Add(threadID, role string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.roles == nil {
		c.roles = map[string]string{}
	}
	if _, ok := c.roles[threadID]; !ok {
		if len(c.order) >= maxConnThreads {
			return
		}
		c.order = append(c.order, threadID)
	}
	c.roles[threadID] = role
}

// Role is the role the connection acts as on threadID ("" if it never
// started or joined it).
func (c *ConnParties) Role(threadID string) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roles[threadID]
}

// Threads lists the connection's threads in order.
func (c *ConnParties) Threads() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.order...)
}

// Ended records that threadID ended (completed, failed or cancelled) as
// this connection saw it; it keeps its role.
func (c *ConnParties) Ended(threadID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.ended = map[string]bool{}
	}
	if _, ok := c.roles[threadID]; ok {
		c.ended[threadID] = true
	}
}

// OpenThreads lists the connection's threads it has not seen end, in
// order: what an inviteParty without threadId chooses from, so a Node SDK
// client (which never sends threadId) that completed one thread and
// started the next can still invite to the one it is on.
func (c *ConnParties) OpenThreads() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range c.order {
		if !c.ended[id] {
			out = append(out, id)
		}
	}
	return out
}

// ParseExpiresIn reads "<int>m|h|d" (empty = 24h), at most limit (0: the
// default, 30 days).
func ParseExpiresIn(s string, limit time.Duration) (time.Duration, error) {
	if limit <= 0 {
		limit = DefaultInvitationMaxTTL
	}
	bad := domain.Invalid("expiresIn", "expiresIn must look like 30m, 24h or 7d (at most %s)", formatTTL(limit))
	if s == "" {
		if limit < 24*time.Hour {
			return limit, nil
		}
		return 24 * time.Hour, nil
	}
	if len(s) < 2 {
		return 0, bad
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, bad
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'm':
		unit = time.Minute
	case 'h':
		unit = time.Hour
	case 'd':
		unit = 24 * time.Hour
	default:
		return 0, bad
	}
	if n > int(limit/unit) {
		return 0, bad
	}
	return time.Duration(n) * unit, nil
}

// formatTTL writes a bound as its SDK spelling: 30d, 12h or 90m.
func formatTTL(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return d.String()
}
