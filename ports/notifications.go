package ports

import (
	"context"
	"time"
)

// PendingQuery selects notifications a replica could push now: unsettled,
// not leased (or lease ended before Now), pushed fewer than MaxDeliveries
// times, owned by one of Owners or on one of Threads, for one of StepNames,
// with seq > AfterSeq; oldest first, at most Limit. With LeaseEnded only
// rows whose lease ended before Now are selected, whatever their seq: pushes
// nobody acknowledged in time, which lie behind the reader's cursor.
type PendingQuery struct {
	Owners    []string
	Threads   []string
	StepNames []string // subscribed step names ("global": thread events); none: any

	AfterSeq      int64
	LeaseEnded    bool
	Now           time.Time
	MaxDeliveries int
	Limit         int
}

// FollowQuery selects the notifications of followed threads, whatever their
// delivery state: of one of Threads, with seq > AfterSeq, raised at or
// after Since; oldest first, at most Limit. (Sessions following a thread
// get copies of its notifications, see app/delivery/follow.go.)
type FollowQuery struct {
	Threads  []string
	AfterSeq int64
	Since    time.Time
	Limit    int
}

// NotificationLog is the durable side of notification delivery: the stored
// notification rows, leased for one push at a time and settled by the
// subscriber's ack, shared by every replica.
type NotificationLog interface {
	PendingNotifications(ctx context.Context, q PendingQuery) ([]NotificationRecord, error)
	// ClaimNotifications leases ids until until for one more push (counting
	// it) and returns the ids it leased: settled ones, and ones another
	// replica leased until after now, are skipped.
	ClaimNotifications(ctx context.Context, ids []string, now, until time.Time) ([]string, error)
	// ReleaseNotifications ends leases early, at now (the socket closed, or
	// refused the push): the rows may be pushed again at once, and every
	// replica's read of ended leases finds them, whatever its cursor.
	// pushed false (the push never reached the socket) also takes back the
	// delivery the claim counted.
	ReleaseNotifications(ctx context.Context, ids []string, now time.Time, pushed bool) error
	// AckNotifications settles ids as acknowledged and returns those that
	// were not settled yet.
	AckNotifications(ctx context.Context, ids []string, now time.Time) ([]string, error)
	// DropNotifications settles ids as dropped: their subscriber
	// unsubscribed, they go on to nobody.
	DropNotifications(ctx context.Context, ids []string, now time.Time) error
	// FollowedNotifications reads the rows of followed threads (FollowQuery).
	FollowedNotifications(ctx context.Context, q FollowQuery) ([]NotificationRecord, error)
	// ExpireNotifications settles pending rows created before cutoff as
	// expired, and rows pushed maxDeliveries times whose lease ended before
	// now as dropped; it returns how many of each.
	ExpireNotifications(ctx context.Context, cutoff, now time.Time, maxDeliveries int) (expired, dropped int, err error)
	// PruneNotifications deletes up to limit rows settled (acknowledged,
	// expired or dropped) before settledBefore and returns how many it
	// deleted. Pending rows are never deleted, nor the row with the highest
	// seq (SQLite numbers the next row from it, and the hubs' cursors must
	// never see a seq again), nor a row a webhook delivery still waits on
	// (the delivery reads its trace parent).
	PruneNotifications(ctx context.Context, settledBefore time.Time, limit int) (int, error)
}

// NotificationPublisher is told about notifications that were just
// committed, so subscribers and waits on every replica are woken. ctx is
// the writer's (it names the session that wrote, see app/delivery).
type NotificationPublisher interface {
	Published(ctx context.Context, ns []NotificationRecord)
}
