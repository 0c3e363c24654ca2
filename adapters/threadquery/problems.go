package threadquery

import (
	"context"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

var _ ports.ProblemReads = (*Store)(nil)

type problemRow struct {
	ContractName    string `db:"contract_name"`
	ContractVersion int    `db:"contract_version"`
	Rule            string `db:"rule"`
	Step            string `db:"step"`
	Message         string `db:"message"`
	Hour            string `db:"h"`
	Count           int    `db:"n"`
	Example         string `db:"example"`
}

// ProblemRows: see ports.ProblemReads. Grouped in SQL by cause and UTC hour
// over the (health, created_at) index; a free-form thread's message is part
// of its cause (classified by the use case).
func (s *Store) ProblemRows(ctx context.Context, since, until time.Time, limit int) ([]ports.ProblemRow, error) {
	hour := `REPLACE(SUBSTR(created_at, 1, 13), 'T', ' ')`
	if s.db.Dialect == sqldb.Postgres {
		hour = `to_char(date_trunc('hour', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD HH24')`
	}
	q := `SELECT COALESCE(contract_name, '') AS contract_name, COALESCE(contract_version, 0) AS contract_version,
 COALESCE(first_issue_type, '') AS rule, COALESCE(first_issue_step, '') AS step,
 CASE WHEN contract_name IS NULL THEN COALESCE(first_issue_message, '') ELSE '' END AS message,
 ` + hour + ` AS h, COUNT(*) AS n, MIN(id) AS example
 FROM threads WHERE health IN ('FAILED', 'VIOLATED') AND created_at >= ? AND created_at < ?
 GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 6, 1, 2, 3, 4, 5 LIMIT ?`
	var rows []problemRow
	if err := s.selectRaw(ctx, &rows, q, sqldb.Time(since), sqldb.Time(until), limit); err != nil {
		return nil, err
	}
	out := make([]ports.ProblemRow, 0, len(rows))
	for _, r := range rows {
		h, err := time.Parse("2006-01-02 15", strings.TrimSpace(r.Hour))
		if err != nil {
			continue
		}
		out = append(out, ports.ProblemRow{ContractName: r.ContractName, ContractVersion: r.ContractVersion, Rule: r.Rule, Step: r.Step,
			Message: r.Message, Hour: h.UTC(), Count: r.Count, Example: r.Example})
	}
	return out, nil
}
