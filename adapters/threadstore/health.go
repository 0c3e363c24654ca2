package threadstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// BackfillHealth computes the health of threads written before health was
// kept on the row (health_version 0), replaying each one's attempts in chain
// order through domain.ThreadHealth.Fold, a batch of threads per
// transaction. It returns how many threads it updated. Several replicas may
// run it at once: each thread is recomputed under its row lock and only while
// it is still at version 0, and a step appended meanwhile folds onto the
// recomputed row.
func (s *Store) BackfillHealth(ctx context.Context) (int, error) {
	done := 0
	for {
		var ids []string
		if err := s.db.SelectContext(ctx, &ids, s.q(`SELECT id FROM threads WHERE health_version = 0 ORDER BY id LIMIT 200`)); err != nil {
			return done, sqldb.TranslateError(err)
		}
		if len(ids) == 0 {
			return done, nil
		}
		for _, id := range ids {
			if err := s.backfillOne(ctx, id); err != nil {
				return done, err
			}
			done++
		}
	}
}

// backfillOne recomputes one thread's health if it is still at version 0.
// A thread deleted since it was listed (retention, erasure) is skipped: the
// sweeper and the backfill run at once after an upgrade.
func (s *Store) backfillOne(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		var version int
		err := tx.GetContext(ctx, &version, s.q(`SELECT health_version FROM threads WHERE id = ?`+s.db.ForUpdate()), id)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && version != 0) {
			return nil
		}
		if err != nil {
			return err
		}
		th, err := s.lockThread(ctx, tx, id)
		if err != nil {
			return err
		}
		h, err := s.replayHealth(ctx, tx, id)
		if err != nil {
			return err
		}
		th.RestoreHealth(h)
		return s.writeThread(ctx, tx, th)
	})
}

// replayHealth folds the thread's stored attempts, in chain order, with the
// validation issues stored beside each.
func (s *Store) replayHealth(ctx context.Context, tx *sqlx.Tx, threadID string) (domain.ThreadHealth, error) {
	var acts []struct {
		ID         string         `db:"id"`
		StepName   string         `db:"step_name"`
		Key        string         `db:"idempotency_key"`
		Status     string         `db:"status"`
		Metadata   string         `db:"metadata"`
		RecordedAt time.Time      `db:"recorded_at"`
		FinishedAt sql.NullTime   `db:"finished_at"`
		Issues     sql.NullString `db:"issues"`
	}
	// A validation row belongs to one attempt (step_id is the attempt's id).
	if err := tx.SelectContext(ctx, &acts, s.q(`SELECT a.id, a.step_name, a.idempotency_key, a.status,
 CAST(a.metadata AS TEXT) AS metadata, a.recorded_at, a.finished_at, CAST(v.issues AS TEXT) AS issues
 FROM thread_activities a LEFT JOIN thread_validations v ON v.step_id = a.id AND v.thread_id = a.thread_id
 WHERE a.thread_id = ? ORDER BY a.seq`), threadID); err != nil {
		return domain.ThreadHealth{}, err
	}
	var h domain.ThreadHealth
	latest := map[[2]string]string{}
	for _, a := range acts {
		var meta map[string]any
		_ = json.Unmarshal([]byte(a.Metadata), &meta)
		o := domain.StepOutcome{StepName: a.StepName, Status: a.Status, PrevStatus: latest[[2]string{a.StepName, a.Key}],
			Error: domain.StepError(a.Status, meta), RecordedAt: a.RecordedAt.UTC(), FinishedAt: sqldb.FromNullTime(a.FinishedAt)}
		if a.Issues.Valid {
			_ = json.Unmarshal([]byte(a.Issues.String), &o.Issues)
		}
		h = h.Fold(o)
		latest[[2]string{a.StepName, a.Key}] = a.Status
	}
	return h, nil
}
