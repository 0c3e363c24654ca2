// Package webhookstore keeps alert webhooks and their delivery outbox in
// SQL (SQLite or PostgreSQL). Alert deliveries are inserted by the thread
// store, in the transaction of the notification they come from; this store
// leases, settles and lists them.
package webhookstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Store implements ports.WebhookStore.
type Store struct{ db *sqldb.DB }

var _ ports.WebhookStore = (*Store)(nil)

// New returns a store on db (migrated).
func New(db *sqldb.DB) *Store { return &Store{db: db} }

func (s *Store) q(query string) string { return s.db.Rebind(query) }

type webhookRow struct {
	ID        string    `db:"id"`
	Name      string    `db:"name"`
	URL       string    `db:"url"`
	Secret    string    `db:"secret"`
	Format    string    `db:"format"`
	EventMask int       `db:"event_mask"`
	MinRank   int       `db:"min_rank"`
	Enabled   int       `db:"enabled"`
	CreatedBy string    `db:"created_by"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}

const webhookCols = `id, name, url, secret, format, event_mask, min_rank, enabled, created_by, created_at, updated_at`

func (r webhookRow) record() ports.Webhook {
	sev := domain.SeverityMajor
	if r.MinRank >= 1 && r.MinRank <= len(domain.Severities) {
		sev = domain.Severities[r.MinRank-1]
	}
	return ports.Webhook{ID: r.ID, Name: r.Name, URL: r.URL, Secret: r.Secret, Format: domain.WebhookFormat(r.Format),
		Events: domain.EventsOfMask(r.EventMask), MinSeverity: sev, Enabled: r.Enabled != 0, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func rank(s domain.Severity) int {
	if r := s.Rank(); r > 0 {
		return r
	}
	return domain.SeverityMajor.Rank()
}

// CreateWebhook: see ports.WebhookStore.
func (s *Store) CreateWebhook(ctx context.Context, w ports.Webhook) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO webhooks (`+webhookCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?)`),
		w.ID, w.Name, w.URL, w.Secret, string(w.Format), domain.EventMask(w.Events), rank(w.MinSeverity),
		boolInt(w.Enabled), w.CreatedBy, sqldb.Time(w.CreatedAt), sqldb.Time(w.UpdatedAt))
	return sqldb.TranslateError(err)
}

// GetWebhook: see ports.WebhookStore.
func (s *Store) GetWebhook(ctx context.Context, id string) (ports.Webhook, error) {
	var r webhookRow
	err := s.db.GetContext(ctx, &r, s.q(`SELECT `+webhookCols+` FROM webhooks WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Webhook{}, domain.NotFound("webhook")
	}
	if err != nil {
		return ports.Webhook{}, sqldb.TranslateError(err)
	}
	return r.record(), nil
}

// ListWebhooks: see ports.WebhookStore.
func (s *Store) ListWebhooks(ctx context.Context) ([]ports.Webhook, error) {
	var rows []webhookRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+webhookCols+` FROM webhooks ORDER BY created_at, id`); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.Webhook, len(rows))
	for i, r := range rows {
		out[i] = r.record()
	}
	return out, nil
}

// UpdateWebhook: see ports.WebhookStore (the row is locked meanwhile).
func (s *Store) UpdateWebhook(ctx context.Context, id string, fn func(*ports.Webhook) error) (ports.Webhook, error) {
	var out ports.Webhook
	err := s.db.TxRetry(ctx, func(tx *sqlx.Tx) error {
		var r webhookRow
		err := tx.GetContext(ctx, &r, s.q(`SELECT `+webhookCols+` FROM webhooks WHERE id = ?`+s.db.ForUpdate()), id)
		if errors.Is(err, sql.ErrNoRows) {
			return sqldb.CallerError(domain.NotFound("webhook"))
		}
		if err != nil {
			return err
		}
		w := r.record()
		if err := fn(&w); err != nil {
			return sqldb.CallerError(err)
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE webhooks SET name = ?, url = ?, secret = ?, format = ?, event_mask = ?,
 min_rank = ?, enabled = ?, updated_at = ? WHERE id = ?`), w.Name, w.URL, w.Secret, string(w.Format),
			domain.EventMask(w.Events), rank(w.MinSeverity), boolInt(w.Enabled), sqldb.Time(w.UpdatedAt), id)
		out = w
		return err
	})
	return out, err
}

// DeleteWebhook: see ports.WebhookStore.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.db.TxRetry(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhook_deliveries WHERE webhook_id = ?`), id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM webhooks WHERE id = ?`), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return sqldb.CallerError(domain.NotFound("webhook"))
		}
		return nil
	})
}

// EnqueueDelivery: see ports.WebhookStore.
func (s *Store) EnqueueDelivery(ctx context.Context, d ports.WebhookDelivery) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO webhook_deliveries (id, webhook_id, notification_id, event_type,
 thread_id, payload, next_attempt_at, created_at) VALUES (?,?,?,?,?,?,?,?)`), d.ID, d.WebhookID, nullStr(d.NotificationID),
		string(d.EventType), d.ThreadID, string(d.Payload), sqldb.Time(d.NextAttemptAt), sqldb.Time(d.CreatedAt))
	return sqldb.TranslateError(err)
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

type deliveryRow struct {
	ID             string         `db:"id"`
	WebhookID      string         `db:"webhook_id"`
	NotificationID sql.NullString `db:"notification_id"`
	EventType      string         `db:"event_type"`
	ThreadID       string         `db:"thread_id"`
	Payload        string         `db:"payload"`
	State          string         `db:"state"`
	Attempts       int            `db:"attempts"`
	NextAttemptAt  time.Time      `db:"next_attempt_at"`
	LastStatus     int            `db:"last_status"`
	LastError      string         `db:"last_error"`
	LastLatencyMS  int64          `db:"last_latency_ms"`
	LastAttemptAt  sql.NullTime   `db:"last_attempt_at"`
	CreatedAt      time.Time      `db:"created_at"`
	SettledAt      sql.NullTime   `db:"settled_at"`
	// Joined by ClaimDeliveries.
	URL         string `db:"url"`
	Secret      string `db:"secret"`
	Format      string `db:"format"`
	TraceParent string `db:"trace_parent"`
}

const deliveryCols = `d.id, d.webhook_id, d.notification_id, d.event_type, d.thread_id, d.payload, d.state, d.attempts,
 d.next_attempt_at, d.last_status, d.last_error, d.last_latency_ms, d.last_attempt_at, d.created_at, d.settled_at`

func (r deliveryRow) record() ports.WebhookDelivery {
	return ports.WebhookDelivery{ID: r.ID, WebhookID: r.WebhookID, NotificationID: r.NotificationID.String,
		EventType: domain.WebhookEvent(r.EventType), ThreadID: r.ThreadID, Payload: []byte(r.Payload),
		State: ports.DeliveryState(r.State), Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt.UTC(),
		LastStatus: r.LastStatus, LastError: r.LastError, LastLatency: time.Duration(r.LastLatencyMS) * time.Millisecond,
		LastAttemptAt: sqldb.FromNullTime(r.LastAttemptAt), CreatedAt: r.CreatedAt.UTC(), SettledAt: sqldb.FromNullTime(r.SettledAt)}
}

// ClaimDeliveries: see ports.WebhookStore. On PostgreSQL the candidate rows
// are locked with SKIP LOCKED, so replicas claiming at once take disjoint
// rows; SQLite's IMMEDIATE transaction serialises claimers. Either way the
// UPDATE re-checks the lease, so a row is leased to one claimer at a time.
func (s *Store) ClaimDeliveries(ctx context.Context, now, until time.Time, token string, limit int) ([]ports.DeliveryJob, error) {
	var out []ports.DeliveryJob
	skip := ""
	if s.db.Dialect == sqldb.Postgres {
		skip = " FOR UPDATE OF d SKIP LOCKED"
	}
	// A plain read first: with nothing due (the usual case) no write
	// transaction is opened, so an idle deliverer never takes SQLite's
	// write lock from ingestion.
	if due, err := s.anyDue(ctx, now); err != nil || !due {
		return nil, err
	}
	err := s.db.TxRetry(ctx, func(tx *sqlx.Tx) error {
		out = out[:0]
		var ids []string
		if err := tx.SelectContext(ctx, &ids, s.q(`SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
 WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?) AND w.enabled = 1
 ORDER BY d.next_attempt_at LIMIT ?`+skip), sqldb.Time(now), sqldb.Time(now), limit); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		q, args, err := sqlx.In(`UPDATE webhook_deliveries SET lease_until = ?, lease_token = ?, attempts = attempts + 1
 WHERE id IN (?) AND state = 'pending' AND (lease_until IS NULL OR lease_until < ?)`, sqldb.Time(until), token, ids, sqldb.Time(now))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(q), args...); err != nil {
			return err
		}
		var rows []deliveryRow
		q, args, err = sqlx.In(`SELECT `+deliveryCols+`, w.url, w.secret, w.format, COALESCE(n.trace_parent, '') AS trace_parent
 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id LEFT JOIN thread_notifications n ON n.id = d.notification_id
 WHERE d.id IN (?) AND d.lease_token = ? ORDER BY d.next_attempt_at`, ids, token)
		if err != nil {
			return err
		}
		if err := tx.SelectContext(ctx, &rows, s.q(q), args...); err != nil {
			return err
		}
		for _, r := range rows {
			out = append(out, ports.DeliveryJob{Delivery: r.record(), URL: r.URL, Secret: r.Secret,
				Format: domain.WebhookFormat(r.Format), LeaseToken: token, TraceParent: r.TraceParent})
		}
		return nil
	})
	return out, err
}

// anyDue is the claim's plain read: whether some row is due. It has the
// claim's conditions: a disabled webhook's pending rows (kept until it is
// enabled again) and rows leased elsewhere are not due.
func (s *Store) anyDue(ctx context.Context, now time.Time) (bool, error) {
	var due int
	if err := s.db.GetContext(ctx, &due, s.q(`SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
 WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?) AND w.enabled = 1 LIMIT 1) x`),
		sqldb.Time(now), sqldb.Time(now)); err != nil {
		return false, sqldb.TranslateError(err)
	}
	return due > 0, nil
}

// SettleDelivery: see ports.WebhookStore.
func (s *Store) SettleDelivery(ctx context.Context, o ports.DeliveryOutcome) (bool, error) {
	var settled any
	next := o.NextAttemptAt
	if o.State != ports.DeliveryPending {
		settled = sqldb.Time(o.At)
		next = o.At
	}
	if o.Interrupted {
		// Given back as claimed: the claim's attempt count is undone.
		res, err := s.db.ExecContext(ctx, s.q(`UPDATE webhook_deliveries SET attempts = attempts - 1, lease_until = NULL,
 lease_token = NULL WHERE id = ? AND lease_token = ? AND state = 'pending'`), o.ID, o.LeaseToken)
		if err != nil {
			return false, sqldb.TranslateError(err)
		}
		n, err := res.RowsAffected()
		return n > 0, err
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE webhook_deliveries SET state = ?, next_attempt_at = ?, lease_until = NULL,
 lease_token = NULL, last_status = ?, last_error = ?, last_latency_ms = ?, last_attempt_at = ?, settled_at = ?
 WHERE id = ? AND lease_token = ? AND state = 'pending'`), string(o.State), sqldb.Time(next), o.Status, o.Error,
		o.Latency.Milliseconds(), sqldb.Time(o.At), settled, o.ID, o.LeaseToken)
	if err != nil {
		return false, sqldb.TranslateError(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ListDeliveries: see ports.WebhookStore (index webhook_deliveries_log).
func (s *Store) ListDeliveries(ctx context.Context, webhookID string, limit int) ([]ports.WebhookDelivery, error) {
	var rows []deliveryRow
	if err := s.db.SelectContext(ctx, &rows, s.q(`SELECT `+deliveryCols+` FROM webhook_deliveries d WHERE d.webhook_id = ?
 ORDER BY d.created_at DESC, d.id DESC LIMIT ?`), webhookID, limit); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]ports.WebhookDelivery, len(rows))
	for i, r := range rows {
		out[i] = r.record()
	}
	return out, nil
}

// PruneDeliveries: see ports.WebhookStore.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
 WHERE state <> 'pending' AND settled_at < ? ORDER BY settled_at LIMIT ?)`), sqldb.Time(before), limit)
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CountPendingDeliveries: see ports.WebhookStore.
func (s *Store) CountPendingDeliveries(ctx context.Context) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'`)
	return n, sqldb.TranslateError(err)
}
