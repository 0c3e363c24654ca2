package threadquery

import (
	"fmt"
	"strings"

	"github.com/threadengine/engine/adapters/sqldb"
)

// SetListContextBytes caps the context of each attempt a list returns
// (History, StepHistories, Attempts) at n bytes: a longer context is not
// read out of the database at all and comes back as the marker
// TruncatedContext, unless the read asks for one attempt (limit 1 of one
// step or thread). 0 (the default) returns every context whole. Call it
// before serving.
func (s *Store) SetListContextBytes(n int) { s.listContext = max(n, 0) }

// TruncatedContext is the context returned in place of one longer than
// the list cap: valid JSON naming the real size, so a client can tell it
// from a context and read the attempt alone.
func TruncatedContext(bytes int64) string {
	return fmt.Sprintf(`{"$truncated":true,"bytes":%d,"read":"this attempt alone: stepHistory(threadId, stepName, idempotencyKey, limit: 1, offset: n)"}`, bytes)
}

// listCols is activityCols for a list read: the context column replaced
// by the capped one when the list may return more than one attempt.
func (s *Store) listCols(one bool) string {
	if s.listContext <= 0 || one {
		return activityCols
	}
	text := `CAST(a.context AS TEXT)`
	size := contextSize(s.db.Dialect, "a")
	capped := fmt.Sprintf(`CASE WHEN %s > %d THEN NULL ELSE %s END AS context, %s AS context_bytes`, size, s.listContext, text, size)
	return strings.Replace(activityCols, text+` AS context`, capped, 1)
}

// contextSize is the size in bytes of the context of the attempt aliased
// a: its context_bytes, written with it (migration 00105), else — a row the
// previous release wrote — the length of its text. COALESCE evaluates the
// second only when the first is NULL, so a context is not read (on
// PostgreSQL, serialized from jsonb) to be sized.
func contextSize(d sqldb.Dialect, a string) string {
	if d == sqldb.SQLite {
		return `COALESCE(` + a + `.context_bytes, length(CAST(` + a + `.context AS BLOB)))`
	}
	return `COALESCE(` + a + `.context_bytes, octet_length(CAST(` + a + `.context AS TEXT)))`
}
