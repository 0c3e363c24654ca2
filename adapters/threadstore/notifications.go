package threadstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

var _ ports.NotificationLog = (*Store)(nil)

type notificationRow struct {
	ID               string    `db:"id"`
	Seq              int64     `db:"seq"`
	ThreadID         string    `db:"thread_id"`
	StepID           string    `db:"step_id"`
	StepName         string    `db:"step_name"`
	IdempotencyKey   string    `db:"idempotency_key"`
	ContractName     string    `db:"contract_name"`
	OwnerID          string    `db:"owner_id"`
	Source           string    `db:"source"`
	NotificationType string    `db:"notification_type"`
	StepStatus       string    `db:"step_status"`
	ValidationStatus string    `db:"validation_status"`
	ViolationType    string    `db:"violation_type"`
	Severity         string    `db:"severity"`
	Message          string    `db:"message"`
	Details          string    `db:"details"`
	CreatedAt        time.Time `db:"created_at"`
	Deliveries       int       `db:"deliveries"`
	TraceParent      string    `db:"trace_parent"`
}

// PendingNotifications: see ports.NotificationLog. The partial indexes on
// (owner_id, seq) and (owner_id, step_name, seq) hold only pending rows, so
// this reads what is waiting for the subscribed principals, not the history.
func (s *Store) PendingNotifications(ctx context.Context, q ports.PendingQuery) ([]ports.NotificationRecord, error) {
	if len(q.Owners) == 0 && len(q.Threads) == 0 {
		return nil, nil
	}
	var who []string
	var args []any
	if len(q.Owners) > 0 {
		who = append(who, "owner_id IN (?)")
		args = append(args, q.Owners)
	}
	if len(q.Threads) > 0 {
		who = append(who, "thread_id IN (?)")
		args = append(args, q.Threads)
	}
	steps := ""
	if len(q.StepNames) > 0 {
		steps = " AND step_name IN (?)"
		args = append(args, q.StepNames)
	}
	lease, leaseArgs := ` AND seq > ? AND (lease_until IS NULL OR lease_until < ?)`, []any{q.AfterSeq, sqldb.Time(q.Now)}
	if q.LeaseEnded { // thread_notifications_lease_ended (00015) holds just these
		lease, leaseArgs = ` AND lease_until IS NOT NULL AND lease_until < ?`, []any{sqldb.Time(q.Now)}
	}
	args = append(append(args, leaseArgs...), q.MaxDeliveries, q.Limit)
	query, args, err := sqlx.In(`SELECT `+notificationColumns+`
 FROM thread_notifications WHERE delivery IS NULL AND (`+strings.Join(who, " OR ")+`)`+steps+lease+`
 AND deliveries < ? ORDER BY seq LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	return s.selectNotifications(ctx, query, args)
}

// notificationColumns are what a read of the log selects (notificationRow).
const notificationColumns = `id, seq, thread_id, step_id, step_name, idempotency_key, contract_name, owner_id,
 source, notification_type, step_status, validation_status, violation_type, severity, message,
 CAST(details AS TEXT) AS details, created_at, deliveries, trace_parent`

func (s *Store) selectNotifications(ctx context.Context, query string, args []any) ([]ports.NotificationRecord, error) {
	var rows []notificationRow
	if err := s.db.SelectContext(ctx, &rows, s.q(query), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.NotificationRecord, len(rows))
	for i, r := range rows {
		out[i] = ports.NotificationRecord{ID: r.ID, Seq: r.Seq, ThreadID: r.ThreadID, StepID: r.StepID, StepName: r.StepName,
			IdempotencyKey: r.IdempotencyKey, ContractName: r.ContractName, OwnerID: r.OwnerID, Source: r.Source,
			NotificationType: r.NotificationType, StepStatus: r.StepStatus, ValidationStatus: r.ValidationStatus,
			ViolationType: r.ViolationType, Severity: r.Severity, Message: r.Message, CreatedAt: r.CreatedAt.UTC(),
			Deliveries: r.Deliveries, TraceParent: r.TraceParent}
		_ = json.Unmarshal([]byte(r.Details), &out[i].Details)
	}
	return out, nil
}

// ClaimNotifications: see ports.NotificationLog. One statement: two
// replicas claiming the same row cannot both succeed. Leases, releases and
// acknowledgements commit without waiting for the WAL flush
// (sqldb.AsyncCommit): a crash of the database can only lose them, which
// makes a notification be pushed again.
func (s *Store) ClaimNotifications(ctx context.Context, ids []string, now, until time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	query, args, err := sqlx.In(`UPDATE thread_notifications SET lease_until = ?, deliveries = deliveries + 1
 WHERE id IN (?) AND delivery IS NULL AND (lease_until IS NULL OR lease_until < ?)`+s.db.AsyncCommit()+` RETURNING id`,
		sqldb.Time(until), ids, sqldb.Time(now))
	if err != nil {
		return nil, err
	}
	var got []string
	if err := s.db.SelectContext(ctx, &got, s.q(query), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	return got, nil
}

// ReleaseNotifications: see ports.NotificationLog.
func (s *Store) ReleaseNotifications(ctx context.Context, ids []string, now time.Time, pushed bool) error {
	if len(ids) == 0 {
		return nil
	}
	uncount := ""
	if !pushed {
		uncount = ", deliveries = CASE WHEN deliveries > 0 THEN deliveries - 1 ELSE 0 END"
	}
	// The lease ended a microsecond before now (the times' precision), so a
	// read at now already finds the row, with either read.
	ended := sqldb.Time(now).Add(-time.Microsecond)
	query, args, err := sqlx.In(`UPDATE thread_notifications SET lease_until = ?`+uncount+` WHERE id IN (?) AND delivery IS NULL`+s.db.AsyncCommit(),
		ended, ids)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.q(query), args...)
	return sqldb.TranslateError(err)
}

// AckNotifications: see ports.NotificationLog. One statement per burst of
// acknowledgements (the hub batches them).
func (s *Store) AckNotifications(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	query, args, err := sqlx.In(`UPDATE thread_notifications SET delivery = 'acked', settled_at = ?, lease_until = NULL
 WHERE id IN (?) AND delivery IS NULL`+s.db.AsyncCommit()+` RETURNING id`, sqldb.Time(now), ids)
	if err != nil {
		return nil, err
	}
	var got []string
	if err := s.db.SelectContext(ctx, &got, s.q(query), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	return got, nil
}

// ExpireNotifications: see ports.NotificationLog.
func (s *Store) ExpireNotifications(ctx context.Context, cutoff, now time.Time, maxDeliveries int) (int, int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE thread_notifications SET delivery = 'expired', settled_at = ?, lease_until = NULL
 WHERE delivery IS NULL AND created_at < ?`), sqldb.Time(now), sqldb.Time(cutoff))
	if err != nil {
		return 0, 0, sqldb.TranslateError(err)
	}
	expired, _ := res.RowsAffected()
	res, err = s.db.ExecContext(ctx, s.q(`UPDATE thread_notifications SET delivery = 'dropped', settled_at = ?, lease_until = NULL
 WHERE delivery IS NULL AND deliveries >= ? AND lease_until < ?`), sqldb.Time(now), maxDeliveries, sqldb.Time(now))
	if err != nil {
		return int(expired), 0, sqldb.TranslateError(err)
	}
	dropped, _ := res.RowsAffected()
	return int(expired), int(dropped), nil
}

// DropNotifications: see ports.NotificationLog.
func (s *Store) DropNotifications(ctx context.Context, ids []string, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	query, args, err := sqlx.In(`UPDATE thread_notifications SET delivery = 'dropped', settled_at = ?, lease_until = NULL
 WHERE id IN (?) AND delivery IS NULL`+s.db.AsyncCommit(), sqldb.Time(now), ids)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, s.q(query), args...)
	return sqldb.TranslateError(err)
}

// FollowedNotifications: see ports.NotificationLog. thread_notifications_thread
// (thread_id, created_at) serves it.
func (s *Store) FollowedNotifications(ctx context.Context, q ports.FollowQuery) ([]ports.NotificationRecord, error) {
	if len(q.Threads) == 0 {
		return nil, nil
	}
	query, args, err := sqlx.In(`SELECT `+notificationColumns+` FROM thread_notifications
 WHERE thread_id IN (?) AND seq > ? AND created_at >= ? ORDER BY seq LIMIT ?`, q.Threads, q.AfterSeq, sqldb.Time(q.Since), q.Limit)
	if err != nil {
		return nil, err
	}
	return s.selectNotifications(ctx, query, args)
}

// PruneNotifications: see ports.NotificationLog. The batch is chosen on
// thread_notifications_settled (00084: settled rows by settled_at), so a
// batch reads only what it deletes; the pending webhook deliveries are few
// (webhook_deliveries_due holds just them).
func (s *Store) PruneNotifications(ctx context.Context, settledBefore time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	// Every replica's hub prunes; on PostgreSQL each takes the rows no other
	// is deleting (SKIP LOCKED) instead of queueing behind it, and the batch
	// is deleted by primary key (= ANY(ARRAY(…)): with IN (…) the planner
	// may hash-join the batch against a scan of the whole table).
	open, skip, end := `id IN (`, "", `)`
	if s.db.Dialect == sqldb.Postgres {
		open, skip, end = `id = ANY(ARRAY(`, " FOR UPDATE OF n SKIP LOCKED", `))`
	}
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM thread_notifications WHERE `+open+`SELECT n.id FROM thread_notifications n
 WHERE n.delivery IS NOT NULL AND n.settled_at < ?
 AND n.seq < (SELECT MAX(m.seq) FROM thread_notifications m)
 AND n.id NOT IN (SELECT d.notification_id FROM webhook_deliveries d WHERE d.state = 'pending' AND d.notification_id IS NOT NULL)
 ORDER BY n.settled_at LIMIT ?`+skip+end), sqldb.Time(settledBefore), limit)
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
