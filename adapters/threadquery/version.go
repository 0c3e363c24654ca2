package threadquery

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// ThreadsVersion: see ports.ThreadQueries. The newest start and, per
// status, the newest update are each one backward step on an index
// (threads_created_id, threads_created on SQLite; threads_status_updated),
// so the answer costs the same on 10 threads or 10 million; a deletion alone
// does not change it.
func (s *Store) ThreadsVersion(ctx context.Context) (string, error) {
	var row struct {
		Created   sql.NullString `db:"created"`
		Active    sql.NullString `db:"active"`
		Completed sql.NullString `db:"completed"`
		Failed    sql.NullString `db:"failed"`
		Cancelled sql.NullString `db:"cancelled"`
	}
	q := s.db.Rebind(`SELECT
 (SELECT CAST(MAX(created_at) AS TEXT) FROM threads) AS created,
 (SELECT CAST(MAX(updated_at) AS TEXT) FROM threads WHERE status = 'active') AS active,
 (SELECT CAST(MAX(updated_at) AS TEXT) FROM threads WHERE status = 'completed') AS completed,
 (SELECT CAST(MAX(updated_at) AS TEXT) FROM threads WHERE status = 'failed') AS failed,
 (SELECT CAST(MAX(updated_at) AS TEXT) FROM threads WHERE status = 'cancelled') AS cancelled`)
	if s.onQuery != nil {
		s.onQuery(q, nil)
	}
	if err := s.db.GetContext(ctx, &row, q); err != nil {
		return "", fmt.Errorf("threadquery: version: %w", err)
	}
	sum := sha256.Sum256([]byte(row.Created.String + "|" + row.Active.String + "|" + row.Completed.String + "|" +
		row.Failed.String + "|" + row.Cancelled.String))
	return hex.EncodeToString(sum[:8]), nil
}
