package threadstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// The notification log's contract, on each dialect: pending rows by owner
// and step after a cursor, one lease at a time, leases that end found
// behind the cursor, acknowledgements in batches that settle each row once,
// release, and expiry.
func TestNotificationLogContract(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		store := threadstore.New(db)
		other := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u2", Role: domain.RoleMember})
		record := func(ctx context.Context, step string, n int) {
			t.Helper()
			th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: step})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: step,
					Status: "success", IdempotencyKey: fmt.Sprint(step, i), Context: map[string]string{}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		record(ctx, "ship", 2)
		record(ctx, "pack", 1)
		record(other, "ship", 1)

		now := time.Now()
		q := ports.PendingQuery{Owners: []string{"u1"}, StepNames: []string{"ship"}, Now: now, MaxDeliveries: 3, Limit: 10}
		pending := func(q ports.PendingQuery) []string {
			t.Helper()
			rows, err := store.PendingNotifications(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(rows))
			for i, r := range rows {
				if i > 0 && r.Seq <= rows[i-1].Seq {
					t.Fatalf("not in seq order: %+v", rows)
				}
				if r.OwnerID != "u1" || r.StepName != "ship" {
					t.Fatalf("row of another owner or step: %+v", r)
				}
				ids[i] = r.ID
			}
			return ids
		}
		ship := pending(q)
		if len(ship) != 2 {
			t.Fatalf("pending %v, want u1's two ship rows", ship)
		}
		rows, _ := store.PendingNotifications(ctx, q)
		if after := pending(ports.PendingQuery{Owners: q.Owners, StepNames: q.StepNames, AfterSeq: rows[0].Seq,
			Now: now, MaxDeliveries: 3, Limit: 10}); !slices.Equal(after, ship[1:]) {
			t.Fatalf("after the first row's seq: %v", after)
		}

		until := now.Add(30 * time.Second)
		if got, err := store.ClaimNotifications(ctx, ship, now, until); err != nil || len(got) != 2 {
			t.Fatalf("claim: %v %v", got, err)
		}
		if got, _ := store.ClaimNotifications(ctx, ship, now, until); len(got) != 0 {
			t.Fatalf("leased twice: %v", got)
		}
		if got := pending(q); len(got) != 0 {
			t.Fatalf("leased rows still pending: %v", got)
		}
		ended := q
		ended.LeaseEnded = true
		if got := pending(ended); len(got) != 0 {
			t.Fatalf("lease ended too early: %v", got)
		}
		later := ended
		later.Now = until.Add(time.Second)
		later.AfterSeq = 1 << 40 // a cursor past them does not hide an ended lease
		if got := pending(later); !slices.Equal(got, ship) {
			t.Fatalf("ended leases %v, want %v", got, ship)
		}

		settled, err := store.AckNotifications(ctx, []string{ship[0], ship[0], "no-such-id"}, now)
		if err != nil || !slices.Equal(settled, ship[:1]) {
			t.Fatalf("ack: %v %v", settled, err)
		}
		if again, _ := store.AckNotifications(ctx, ship[:1], now); len(again) != 0 {
			t.Fatalf("settled twice: %v", again)
		}
		if got := pending(later); !slices.Equal(got, ship[1:]) {
			t.Fatalf("after the ack: %v", got)
		}
		deliveries := func(id string) int {
			t.Helper()
			var n int
			if err := db.QueryRow(db.Rebind(`SELECT deliveries FROM thread_notifications WHERE id = ?`), id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		// Released after a push: the lease ends now, so any replica's read
		// of ended leases finds it (whatever its cursor), and the push
		// stays counted.
		released := now.Add(time.Second)
		if err := store.ReleaseNotifications(ctx, ship[1:], released, true); err != nil {
			t.Fatal(err)
		}
		if got := pending(later); !slices.Equal(got, ship[1:]) {
			t.Fatalf("a released row is a lease that ended: %v", got)
		}
		atRelease := q
		atRelease.Now = released // found at once, by the normal read too
		if got := pending(atRelease); !slices.Equal(got, ship[1:]) {
			t.Fatalf("released row not pending: %v", got)
		}
		if n := deliveries(ship[1]); n != 1 {
			t.Fatalf("deliveries after a release of a push: %d, want 1", n)
		}
		// Claimed again, then refused by the socket: the claim's count is
		// taken back.
		if got, err := store.ClaimNotifications(ctx, ship[1:], atRelease.Now, until); err != nil || len(got) != 1 {
			t.Fatalf("claim again: %v %v", got, err)
		}
		if err := store.ReleaseNotifications(ctx, ship[1:], atRelease.Now, false); err != nil {
			t.Fatal(err)
		}
		if n := deliveries(ship[1]); n != 1 {
			t.Fatalf("deliveries after a refused push: %d, want 1", n)
		}

		expired, dropped, err := store.ExpireNotifications(ctx, now.Add(time.Hour), now, 3)
		if err != nil || dropped != 0 || expired < 3 { // ship[1], pack, u2's ship (and thread events)
			t.Fatalf("expire: %d %d %v", expired, dropped, err)
		}
		if got := pending(q); len(got) != 0 {
			t.Fatalf("expired rows pending: %v", got)
		}
	})
}

// Followed threads' rows are read whatever their delivery state (by thread,
// after a seq, since a time); a dropped row is settled and read by nobody.
func TestNotificationLogFollowAndDrop(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		store := threadstore.New(db)
		app := threads.Application()
		start := func() string {
			th, err := app.Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "f"})
			if err != nil {
				t.Fatal(err)
			}
			return th.ID
		}
		a, b := start(), start()
		for i, tid := range []string{a, b, a} {
			if _, err := app.Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: tid, StepName: "ship",
				Status: "success", IdempotencyKey: fmt.Sprint("k", i), Context: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
		}
		read := func(q ports.FollowQuery) []ports.NotificationRecord {
			t.Helper()
			q.Limit = 10
			rows, err := store.FollowedNotifications(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}
		rows := read(ports.FollowQuery{Threads: []string{a}})
		if len(rows) != 2 || rows[0].ThreadID != a || rows[1].Seq <= rows[0].Seq {
			t.Fatalf("rows of a: %+v", rows)
		}
		if _, err := store.AckNotifications(ctx, []string{rows[0].ID}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if again := read(ports.FollowQuery{Threads: []string{a}}); len(again) != 2 {
			t.Fatalf("an acknowledged row is not read: %d rows", len(again))
		}
		if after := read(ports.FollowQuery{Threads: []string{a, b}, AfterSeq: rows[0].Seq}); len(after) != 2 {
			t.Fatalf("after a's first row: %+v", after)
		}
		if none := read(ports.FollowQuery{Threads: []string{a}, Since: time.Now().Add(time.Hour)}); len(none) != 0 {
			t.Fatalf("rows raised before Since: %+v", none)
		}

		if err := store.DropNotifications(ctx, []string{rows[1].ID}, time.Now()); err != nil {
			t.Fatal(err)
		}
		pending, err := store.PendingNotifications(ctx, ports.PendingQuery{Threads: []string{a}, Now: time.Now(), MaxDeliveries: 3, Limit: 10})
		if err != nil || len(pending) != 0 {
			t.Fatalf("dropped or acknowledged rows still pending: %+v %v", pending, err)
		}
		var delivery string
		if err := db.QueryRow(db.Rebind(`SELECT delivery FROM thread_notifications WHERE id = ?`), rows[1].ID).Scan(&delivery); err != nil || delivery != "dropped" {
			t.Fatalf("delivery %q %v", delivery, err)
		}
	})
}

// Settled rows are pruned in batches, oldest settled first, once settled
// before the cutoff; pending rows, the row with the highest seq and rows a
// pending webhook delivery reads stay, and the next row still gets a higher
// seq than any before it.
func TestNotificationLogPrune(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		threads, db, ctx := setup(t, d)
		store := threadstore.New(db)
		th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "prune"})
		if err != nil {
			t.Fatal(err)
		}
		record := func(key string) {
			t.Helper()
			if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "ship",
				Status: "success", IdempotencyKey: key, Context: map[string]string{}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			record(fmt.Sprint("k", i))
		}
		type row struct {
			ID  string `db:"id"`
			Seq int64  `db:"seq"`
		}
		rows := func() []row {
			t.Helper()
			var rs []row
			if err := db.Select(&rs, `SELECT id, seq FROM thread_notifications ORDER BY seq`); err != nil {
				t.Fatal(err)
			}
			return rs
		}
		all := rows()
		if len(all) < 4 {
			t.Fatalf("rows: %v", all)
		}
		ids := make([]string, len(all))
		for i, r := range all {
			ids[i] = r.ID
		}
		now := time.Now()
		// All settled but the first (pending); the second is the
		// notification a pending webhook delivery reads.
		if got, err := store.AckNotifications(ctx, ids[1:], now); err != nil || len(got) != len(ids)-1 {
			t.Fatalf("ack: %v %v", got, err)
		}
		if _, err := db.Exec(db.Rebind(`INSERT INTO webhooks (id, name, url, secret, created_at, updated_at) VALUES ('w1','w','http://x','s',?,?)`), now, now); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(db.Rebind(`INSERT INTO webhook_deliveries (id, webhook_id, notification_id, event_type, payload, next_attempt_at, created_at)
 VALUES ('d1','w1',?,'x','{}',?,?)`), ids[1], now, now); err != nil {
			t.Fatal(err)
		}
		if n, err := store.PruneNotifications(ctx, now, 100); err != nil || n != 0 {
			t.Fatalf("pruned %d (%v) settled at the cutoff, want none", n, err)
		}
		later := now.Add(time.Second)
		n, err := store.PruneNotifications(ctx, later, 1)
		if err != nil || n != 1 {
			t.Fatalf("first batch: %d %v, want 1", n, err)
		}
		if n, err = store.PruneNotifications(ctx, later, 100); err != nil || n != len(ids)-4 {
			t.Fatalf("second batch: %d %v, want %d", n, err, len(ids)-4)
		}
		left := rows()
		if len(left) != 3 || left[0].ID != ids[0] || left[1].ID != ids[1] || left[2].ID != ids[len(ids)-1] {
			t.Fatalf("left %v; want the pending row, the webhook's and the last of %v", left, ids)
		}
		record("k9")
		if after := rows(); after[len(after)-1].Seq <= all[len(all)-1].Seq {
			t.Fatalf("a seq was numbered again: %v after %v", after, all)
		}
		// The former last row is no longer the highest: it goes now; the
		// new rows are pending.
		if n, err := store.PruneNotifications(ctx, later, 100); err != nil || n != 1 {
			t.Fatalf("pruned %d (%v), want the former last row only", n, err)
		}
	})
}
