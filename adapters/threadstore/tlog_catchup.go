package threadstore

// The log's catch-up: steps that reached the database without their leaf.

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// CatchUpSlack is how far before tlog_state.caught_up_to a catch-up pass
// looks again: a step's recorded_at is its writer's clock when it was
// recorded, so a step committed late (a long transaction) or by a replica
// whose clock lags is still read.
const CatchUpSlack = 10 * time.Minute

// CatchUpLog appends the chain version 1 steps stored without a leaf that
// the backfill did not see: a binary released before the log (migration
// 00020) writes chain version 1 and queues no leaf, so a step one of them
// records during a rolling upgrade, or after a rollback to it, would be
// missing from the log. Every binary that writes chain version 2 queues
// its leaves in the step's transaction, so a version-2 step without a leaf
// was not written by the engine and is left for verification to report
// (not_in_log), never appended here.
//
// A pass reads the steps recorded since tlog_state.caught_up_to (less
// CatchUpSlack; all of them on the first pass), without locking; it locks
// the log only to append what it found (checked again under the lock, so
// replicas doing the same never append one step twice), and then records
// now as caught_up_to. It does nothing before the backfill has finished
// (the backfill appends every such step itself). Idempotent; returns how
// many leaves it appended.
func (s *Store) CatchUpLog(ctx context.Context, now time.Time) (int, error) {
	var st struct {
		Backfilled int          `db:"backfilled"`
		CaughtUpTo sql.NullTime `db:"caught_up_to"`
	}
	if err := s.db.GetContext(ctx, &st, `SELECT backfilled, caught_up_to FROM tlog_state WHERE id = 1`); err != nil {
		return 0, sqldb.TranslateError(err)
	}
	if st.Backfilled == 0 {
		return 0, nil
	}
	var since time.Time // zero: every step
	if st.CaughtUpTo.Valid {
		since = st.CaughtUpTo.Time.Add(-CatchUpSlack)
	}
	total := 0
	for {
		var ids []string
		if err := s.db.SelectContext(ctx, &ids, s.q(`SELECT a.id FROM thread_activities a
 WHERE a.recorded_at >= ? AND a.hash NOT LIKE '`+domain.StepHashPrefix+`%'`+s.noLeafSQL()+` ORDER BY a.id LIMIT ?`), sqldb.Time(since), backfillBatch); err != nil {
			return total, sqldb.TranslateError(err)
		}
		if len(ids) == 0 {
			break
		}
		n := 0
		err := s.logTx(ctx, true, func(tx *sqlx.Tx) error {
			n = 0
			var size int64
			if err := tx.GetContext(ctx, &size, `SELECT size FROM tlog_state WHERE id = 1`+s.db.ForUpdate()); err != nil {
				return err
			}
			if s.db.Dialect == sqldb.SQLite {
				// The steps' leaves not indexed by thread yet are found too.
				if err := s.indexAll(ctx, tx); err != nil {
					return err
				}
			}
			// Under the lock: what another replica appended meanwhile is gone.
			q, args, err := sqlx.In(`SELECT a.id FROM thread_activities a WHERE a.id IN (?)`+s.noLeafSQL()+` ORDER BY a.id`, ids)
			if err != nil {
				return err
			}
			var still []string
			if err := tx.SelectContext(ctx, &still, s.q(q), args...); err != nil {
				return err
			}
			if len(still) == 0 {
				return nil
			}
			acts, err := s.activitiesByID(ctx, tx, still)
			if err != nil {
				return err
			}
			leaves := make([]domain.LogLeaf, len(acts))
			for i, a := range acts {
				leaves[i] = legacyLeaf(a.ThreadID, a.ID, a.Seq, a.Hash, a.Record())
			}
			n = len(leaves)
			_, err = s.appendLeaves(ctx, tx, leavesOf(leaves), time.Now())
			return err
		})
		if err != nil {
			return total, sqldb.TranslateError(err)
		}
		total += n
		if n == 0 && len(ids) < backfillBatch {
			break // the rest was appended by another replica
		}
	}
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE tlog_state SET caught_up_to = ? WHERE id = 1 AND (caught_up_to IS NULL OR caught_up_to < ?)`),
		sqldb.Time(now), sqldb.Time(now)); err != nil {
		return total, sqldb.TranslateError(err)
	}
	return total, nil
}

// legacyLeaf is the leaf of a step logged after it was recorded (backfill,
// catch-up): a chain version 1 step carries the version-2 hash of its
// record as stored now, so later edits show.
func legacyLeaf(threadID, stepID string, seq int, hash string, rec domain.StepRecord) domain.LogLeaf {
	l := domain.StepLeaf(threadID, stepID, seq, hash)
	if !domain.IsStepHash(hash) {
		rh, err := domain.StepHash(rec)
		if err != nil {
			rh = "unhashable: " + err.Error()
		}
		l.RecordHash = rh
	}
	return l
}
