// Package identitystore keeps users, service accounts, API keys, sessions,
// identity bindings, the audit log, settings and the installation id in the
// engine's SQL database. One implementation serves SQLite and PostgreSQL.
package identitystore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threadengine/engine/adapters/sqldb"
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

// tx runs fn in one transaction, retried on concurrency failures
// (sqldb.TxRetry); a rule's refusal wrapped with sqldb.CallerError comes back
// unchanged.
func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.db.TxRetry(ctx, fn)
}

// q rewrites '?' placeholders for the dialect.
func (s *Store) q(query string) string { return s.db.Rebind(query) }

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
