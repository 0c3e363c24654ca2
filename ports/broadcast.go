package ports

import "context"

// Broadcast carries small messages to every engine process sharing the
// database, the sending one included (PostgreSQL LISTEN/NOTIFY; in-process
// on SQLite, which serves one process). Delivery is best effort and after
// the sender's commit: receivers treat a message as "look again", never as
// the data itself.
type Broadcast interface {
	// Publish sends payload (at most 4000 bytes) on channel.
	Publish(ctx context.Context, channel, payload string) error
	// Listen calls fn for every message on channel, from one goroutine per
	// channel, in order. After a gap in which messages may have been lost
	// (a lost database connection) fn is called with Resync.
	Listen(channel string, fn func(payload string))
}

// Resync is the payload a listener receives when messages may have been
// missed: everything may have changed.
const Resync = "\x00resync"

// Broadcast channels.
const (
	ChannelIdentity      = "identity"      // payload: a principal id whose credentials changed ("" = any)
	ChannelNotifications = "notifications" // payload: empty; new notification rows were committed
)
