package threadquery

import (
	"context"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// ActiveThreadsByHealth counts active threads by health, for the
// threadengine_threads_active gauge. It reads active threads only (the
// status prefix of threads_status_created_id), so its cost follows the number
// of threads in progress, not the table: ended threads accumulate for a
// year and are counted by the ended-threads counter instead.
func (s *Store) ActiveThreadsByHealth(ctx context.Context) (map[domain.HealthStatus]int, error) {
	var rows []struct {
		Health string `db:"health"`
		N      int    `db:"n"`
	}
	q := s.db.Rebind(`SELECT health, COUNT(*) AS n FROM threads WHERE status = ? GROUP BY health`)
	if err := s.db.SelectContext(ctx, &rows, q, string(domain.ThreadActive)); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make(map[domain.HealthStatus]int, len(rows))
	for _, r := range rows {
		out[domain.HealthStatus(r.Health)] += r.N
	}
	return out, nil
}
