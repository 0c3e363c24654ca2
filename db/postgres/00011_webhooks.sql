-- +goose Up
-- Alert webhooks (admin-managed). event_mask holds one bit per
-- domain.WebhookEvents entry; min_rank is the minimum severity's rank
-- (1 critical … 5 info) validation.violated events must reach.
CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    format      TEXT NOT NULL DEFAULT 'standard' CHECK (format IN ('standard','slack')),
    event_mask  INTEGER NOT NULL DEFAULT 0,
    min_rank    INTEGER NOT NULL DEFAULT 2,
    enabled     INTEGER NOT NULL DEFAULT 1,
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- The outbox: one row per (webhook, alert), written in the transaction that
-- stores the alert's notification. A replica leases a due row
-- (lease_until, lease_token) for one attempt; the row is settled delivered
-- or failed, or rescheduled (next_attempt_at) with backoff. Settled rows are
-- the delivery log, pruned after alerts.delivery_log_retention.
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    notification_id  TEXT,
    event_type       TEXT NOT NULL,
    thread_id        TEXT NOT NULL DEFAULT '',
    payload          TEXT NOT NULL,
    state            TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','delivered','failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    lease_until      TIMESTAMPTZ,
    lease_token      TEXT,
    last_status      INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    last_latency_ms  INTEGER NOT NULL DEFAULT 0,
    last_attempt_at  TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    settled_at       TIMESTAMPTZ,
    UNIQUE (webhook_id, notification_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC);
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (settled_at) WHERE state <> 'pending';

-- What the alert sweep recorded on a thread, once per thread and
-- condition (overdue, silent): the primary key makes it exactly once
-- across replicas.
CREATE TABLE thread_alerts (
    thread_id   TEXT NOT NULL REFERENCES threads(id),
    condition   TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (thread_id, condition)
);

-- +goose Down
DROP TABLE thread_alerts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
