package threadquery

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// ThreadsVersion: see ports.ThreadQueries. It changes when a thread starts
// (the newest created_at, threads_created_id), when an active thread is
// updated (the newest updated_at among the threads of the newest
// active_minute, threads_active_minute) and when a thread ends (the newest
// settled_at, threads_settled; nothing changes an ended thread again, and
// an end is stamped with the engine's clock, so it is the newest unless
// replicas' clocks disagree). The first and last are one index step; the
// second reads the threads updated in the newest minute (one heap row
// each), so its cost follows the threads stepping in a minute, not the
// table. A deletion alone does not change it.
func (s *Store) ThreadsVersion(ctx context.Context) (string, error) {
	var row struct {
		Created sql.NullString `db:"created"`
		Active  sql.NullString `db:"active"`
		Ended   sql.NullString `db:"ended"`
	}
	q := s.db.Rebind(`SELECT
 (SELECT CAST(MAX(created_at) AS TEXT) FROM threads) AS created,
 (SELECT CAST(MAX(updated_at) AS TEXT) FROM threads WHERE active_minute =
  (SELECT MAX(active_minute) FROM threads WHERE active_minute IS NOT NULL)) AS active,
 (SELECT CAST(MAX(settled_at) AS TEXT) FROM threads WHERE settled_at IS NOT NULL) AS ended`)
	if s.onQuery != nil {
		s.onQuery(q, nil)
	}
	if err := s.db.GetContext(ctx, &row, q); err != nil {
		return "", fmt.Errorf("threadquery: version: %w", err)
	}
	sum := sha256.Sum256([]byte(row.Created.String + "|" + row.Active.String + "|" + row.Ended.String))
	return hex.EncodeToString(sum[:8]), nil
}
