// Package identitystore keeps users, service accounts, API keys, sessions,
// identity bindings, the audit log, settings and the installation id in the
// engine's SQL database. One implementation serves SQLite and PostgreSQL.
package identitystore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Store implements the identity ports on a sqldb.DB.
type Store struct {
	db *sqldb.DB
}

var (
	_ ports.Users            = (*Store)(nil)
	_ ports.ServiceAccounts  = (*Store)(nil)
	_ ports.APIKeys          = (*Store)(nil)
	_ ports.Sessions         = (*Store)(nil)
	_ ports.IdentityBindings = (*Store)(nil)
	_ ports.Audit            = (*Store)(nil)
	_ ports.Settings         = (*Store)(nil)
	_ ports.Installation     = (*Store)(nil)
)

// New returns a store on an open, migrated database.
func New(db *sqldb.DB) *Store { return &Store{db: db} }

// maxTxAttempts bounds retries of a transaction that lost a Postgres deadlock
// or serialization race; the losers of such races normally succeed on the
// second attempt, so a handful is plenty.
const maxTxAttempts = 5

// callerError marks an error returned by a caller's closure so that it is
// returned unchanged instead of being translated as a database error.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }
func (e callerError) Unwrap() error { return e.err }

// tx runs fn in a transaction, retrying it when the database reports a
// retryable concurrency failure. Errors from fn that came from the caller's
// closure (callerError) come back unchanged; driver errors are translated.
func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = s.db.Tx(ctx, fn)
		var ce callerError
		if errors.As(err, &ce) {
			return ce.err
		}
		if err == nil || !sqldb.IsSerializationFailure(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt*attempt) * 5 * time.Millisecond)
	}
	if sqldb.IsSerializationFailure(err) {
		// Still contended after every attempt: the client may retry later.
		return &domain.Error{Kind: domain.KindUnavailable, Code: domain.CodeUnavailable, Message: "the database is busy; try again", Err: err}
	}
	return sqldb.TranslateError(err)
}

// q rewrites '?' placeholders for the dialect.
func (s *Store) q(query string) string { return s.db.Rebind(query) }

// ts is how every time is written: UTC with microsecond precision, the finest
// PostgreSQL keeps, so both dialects return identical values. SQLite stores
// UTC times as fixed-zone text, which therefore also compares in time order.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// isForeignKeyViolation reports a reference to a missing row.
func isForeignKeyViolation(err error) bool {
	var pqe *pq.Error
	if errors.As(err, &pqe) {
		return pqe.Code == "23503"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return false
}

func rowsAffected(res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	return n, nil
}
