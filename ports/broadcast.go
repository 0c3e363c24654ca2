package ports

import (
	"context"
	"slices"
)

// Broadcast carries small messages to every engine process sharing the
// database, the sending one included (PostgreSQL LISTEN/NOTIFY; in-process
// on SQLite, which serves one process). Delivery is best effort and after
// the sender's commit: receivers treat a message as "look again", never as
// the data itself.
type Broadcast interface {
	// Publish sends payload (at most 4000 bytes) on channel. On a
	// confirmed channel (Confirmed) it returns once every listening
	// process has been handed the message, so a client told "done" does
	// not outrun it; on a wake-up channel it returns once sent.
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

// Confirmed reports whether Publish on channel waits until the message
// has reached every listener. Identity changes do: the revoking request's
// answer must not outrun them. Notification wake-ups do not: waiting for
// one round trip would only hold the next wake-up back (cross-replica
// delivery p99 fell from 111–115 ms to 85–87 ms at 2,600–3,000 steps/s on
// three replicas), and a lost wake-up is covered by the receivers' poll.
func Confirmed(channel string) bool { return slices.Contains(ConfirmedChannels, channel) }

// ConfirmedChannels are the channels Publish confirms; every process
// listens to them, so each can acknowledge.
var ConfirmedChannels = []string{ChannelIdentity}
