// Package sqldb opens the engine's SQL database (PostgreSQL in production,
// embedded SQLite by default), applies migrations and runs transactions. The
// stores in sibling packages build on it.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threadengine/engine/domain"
)

// Dialect names a supported database.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// DefaultSQLitePath is where the embedded database lives when no URL is set.
const DefaultSQLitePath = "./data/threadengine.db"

// DB is an open, migrated database.
type DB struct {
	*sqlx.DB
	Dialect Dialect
	lock    *flock.Flock // SQLite: held while open (see lockDataFile)
	dsn     string       // as parsed from the URL, for the read pool
	// reads are the read pools opened on this database (OpenReads), closed
	// with it; readPool marks a read pool itself.
	reads    []*DB
	readPool bool

	// deadlocks and conflicts count the retryable failures TxRetry met
	// (PostgreSQL deadlocks; serialization failures and SQLite busy).
	deadlocks, conflicts atomic.Int64

	// binarySchema is the schema this binary claims (its highest embedded
	// migration unless OpenOptions.BinarySchema overrides it); refusal is
	// the schema compatibility gate's error while it is closed (compat.go).
	binarySchema int64
	refusal      atomic.Pointer[error]
	gate         gateState
}

// ConcurrencyFailures reports how many transactions run by TxRetry lost a
// deadlock, and how many another retryable race, since the DB was opened.
func (d *DB) ConcurrencyFailures() (deadlocks, other int64) {
	return d.deadlocks.Load(), d.conflicts.Load()
}

// Close closes the database and releases the SQLite process lock.
func (d *DB) Close() error {
	for _, r := range d.reads {
		if r != d {
			_ = r.DB.Close()
		}
	}
	d.reads = nil
	err := d.DB.Close()
	if d.lock != nil {
		_ = d.lock.Close() // unlocks
		d.lock = nil
	}
	return err
}

// Open connects to url and applies all migrations. An empty url opens the
// embedded SQLite database at DefaultSQLitePath. Accepted forms:
//
//	postgres://user@host:5432/db?sslmode=disable   (sslmode is required)
//	sqlite:///abs/path.db  sqlite://./rel/path.db  file:path.db
func Open(ctx context.Context, rawURL string) (*DB, error) {
	return OpenWith(ctx, rawURL, OpenOptions{})
}

// OpenAlongside opens the database without the SQLite process lock, for a
// short command (bootstrap-owner) run beside the serving engine: SQLite's own
// locking serialises its writes; it must not serve.
func OpenAlongside(ctx context.Context, rawURL string) (*DB, error) {
	return OpenWith(ctx, rawURL, OpenOptions{Alongside: true})
}

// OpenOptions change how OpenWith opens a database.
type OpenOptions struct {
	// Alongside skips the SQLite process lock (see OpenAlongside).
	Alongside bool
	// NoMigrate opens without applying migrations (threadengine migrate).
	NoMigrate bool
	// BinarySchema, when set, is the schema this process claims instead of
	// its highest embedded migration: tests run the code of this release as
	// an older or newer one against the compatibility gate.
	BinarySchema int64
	// MaxConns is the PostgreSQL pool size (0: 25). SQLite has one writer
	// connection whatever it says.
	MaxConns int
}

// OpenWith is Open with options. After migrating it checks the schema
// compatibility gate once (CheckCompat): a binary outside the database's
// window opens, but refuses every transaction and write until a later
// check finds it inside again.
func OpenWith(ctx context.Context, rawURL string, opt OpenOptions) (*DB, error) {
	dialect, dsn, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var d *DB
	switch dialect {
	case Postgres:
		x, err := sqlx.Open("postgres", dsn)
		if err != nil {
			return nil, fmt.Errorf("database.url: %w", err)
		}
		n := opt.MaxConns
		if n <= 0 {
			n = 25
		}
		x.SetMaxOpenConns(n)
		x.SetMaxIdleConns(n)
		x.SetConnMaxIdleTime(5 * time.Minute)
		d = &DB{DB: x, Dialect: Postgres}
	case SQLite:
		if dir := filepath.Dir(dsn); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("database.url: create %s: %w", dir, err)
			}
		}
		// WAL lets readers proceed during a write; busy_timeout makes a second
		// writer wait instead of failing; foreign keys are off by default in SQLite.
		q := "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
		var lock *flock.Flock
		if !opt.Alongside && dsn != ":memory:" && !strings.Contains(dsn, "mode=memory") {
			if lock, err = lockDataFile(dsn); err != nil {
				return nil, err
			}
		}
		x, err := sqlx.Open("sqlite", "file:"+dsn+q)
		if err != nil {
			if lock != nil {
				_ = lock.Close()
			}
			return nil, fmt.Errorf("database.url: %w", err)
		}
		// One writer at a time is SQLite's model; a single connection also makes
		// BEGIN IMMEDIATE the lock that serialises invariant checks.
		x.SetMaxOpenConns(1)
		d = &DB{DB: x, Dialect: SQLite, lock: lock}
	}
	d.dsn = dsn
	d.binarySchema = opt.BinarySchema
	if d.binarySchema == 0 {
		d.binarySchema = EmbeddedSchema(d.Dialect)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.PingContext(pingCtx); err != nil {
		d.Close()
		return nil, fmt.Errorf("database.url: cannot connect: %w", err)
	}
	if opt.NoMigrate {
		return d, nil
	}
	if err := d.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if _, _, err := d.CheckCompat(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func parseURL(raw string) (Dialect, string, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return SQLite, DefaultSQLitePath, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return "", "", fmt.Errorf("database.url: %w", err)
		}
		// lib/pq's default sslmode has changed between releases; being explicit
		// keeps behaviour stable across upgrades.
		if u.Query().Get("sslmode") == "" {
			return "", "", errors.New("database.url: set sslmode explicitly (e.g. ?sslmode=disable for a local server, ?sslmode=verify-full in production)")
		}
		return Postgres, raw, nil
	case strings.HasPrefix(raw, "sqlite://"):
		return SQLite, strings.TrimPrefix(raw, "sqlite://"), nil
	case strings.HasPrefix(raw, "file:"):
		return SQLite, strings.TrimPrefix(raw, "file:"), nil
	}
	return "", "", fmt.Errorf("database.url: unsupported URL %q: use postgres://… or sqlite://path", redact(raw))
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = url.User(u.User.Username())
		return u.String()
	}
	return raw
}

// Tx runs fn in one transaction, committing when fn returns nil. On SQLite the
// transaction starts IMMEDIATE (see Open), so it holds the write lock from its
// first statement: read-check-write sequences cannot interleave.
//
// While the schema compatibility gate is closed it returns the gate's
// error (unavailable) without starting a transaction.
func (d *DB) Tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	if err := d.Refusal(); err != nil {
		return err
	}
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		return TranslateError(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return unreachable(cancelled(ctx, err))
	}
	if err := tx.Commit(); err != nil {
		return TranslateError(cancelled(ctx, err))
	}
	return nil
}

// cancelled reports a transaction that failed because ctx ended (the client
// went away or a deadline passed) as that cancellation. What the failing
// statement says depends on when the cancellation landed: sql.ErrTxDone
// after database/sql rolled the transaction back, or driver.ErrBadConn when
// lib/pq gave up the connection in the middle of a statement. Either would
// otherwise surface as an internal error or a database outage although
// nothing is wrong with the engine. A domain error fn returned is kept.
func cancelled(ctx context.Context, err error) error {
	if ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	return TranslateError(fmt.Errorf("%w (%w)", ctx.Err(), err))
}

// XactLock takes the PostgreSQL transaction-level advisory lock key inside
// tx (held until it ends). Taken as a transaction's first statement, it
// puts every transaction that takes it in one queue, whatever rows each
// then locks: one lock order, so no deadlock among them. SQLite needs none:
// its IMMEDIATE transactions already hold the database write lock.
func (d *DB) XactLock(ctx context.Context, tx *sqlx.Tx, key int64) error {
	if d.Dialect != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
	return err
}

// AsyncCommit is a condition to AND into the WHERE of a write that runs as
// its own transaction and whose loss in a database crash is harmless: a
// notification's lease, release or acknowledgement (delivery is at least
// once, so what a crash loses is pushed again with the same id). On
// PostgreSQL it turns synchronous_commit off for that transaction only (an
// uncorrelated subquery: a one-time filter, run once before the scan), so
// the statement does not queue for the WAL flush that each step's commit
// waits for; it is still flushed within three wal_writer_delay (0.6 s by
// default). SQLite commits without a sync already (synchronous=NORMAL).
func (d *DB) AsyncCommit() string {
	if d.Dialect == Postgres {
		return ` AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'`
	}
	return ""
}

// ForUpdate is the row-locking suffix for SELECTs inside Tx. SQLite has no row
// locks; its IMMEDIATE transaction already holds the database write lock.
func (d *DB) ForUpdate() string {
	if d.Dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// ForKeyShare is the suffix that keeps a row from being deleted (or its key
// changed) until the transaction ends, while others may read and lock it the
// same way; SQLite's IMMEDIATE transaction already excludes other writers.
func (d *DB) ForKeyShare() string {
	if d.Dialect == Postgres {
		return " FOR KEY SHARE"
	}
	return ""
}

// isBadText reports PostgreSQL refusing a text value: a NUL byte or invalid
// UTF-8 (SQLite stores such text as given). Ids are checked before they
// reach a store (domain.ValidID); this catches any other text field.
func isBadText(err error) bool {
	var pqe *pq.Error
	return errors.As(err, &pqe) && (pqe.Code == "22021" || pqe.Code == "22P05")
}

// isStatementTimeout reports PostgreSQL stopping a statement at its
// statement_timeout (the read pool's, ReadOptions.StatementTimeout).
func isStatementTimeout(err error) bool {
	var pqe *pq.Error
	return errors.As(err, &pqe) && pqe.Code == "57014" && strings.Contains(pqe.Message, "statement timeout")
}

// IsUniqueViolation reports whether err is a unique-constraint failure.
func IsUniqueViolation(err error) bool {
	var pqe *pq.Error
	if errors.As(err, &pqe) {
		return pqe.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// IsSerializationFailure reports a retryable concurrency failure (Postgres
// deadlock or serialization error, SQLite busy).
func IsSerializationFailure(err error) bool {
	var pqe *pq.Error
	if errors.As(err, &pqe) {
		return pqe.Code == "40001" || pqe.Code == "40P01"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_BUSY
	}
	return false
}

// NotFoundAs is TranslateError for single-row reads: no row becomes a
// not-found error naming what was looked for.
func NotFoundAs(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.NotFound(what)
	}
	return TranslateError(err)
}

// TranslateError turns driver errors into domain errors: sql.ErrNoRows into
// not found, an ended context and connection failures (IsConnectionFailure)
// into unavailable (ErrUnavailable, with a retry delay), the rest into
// internal. Raw driver messages never reach clients.
func TranslateError(err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ErrNotFound
	}
	if isBadText(err) {
		return &domain.Error{Kind: domain.KindInvalid, Code: domain.CodeValidationFailed,
			Message: "text must be valid UTF-8 without NUL bytes", Err: err}
	}
	if isStatementTimeout(err) {
		return &domain.Error{Kind: domain.KindUnavailable, Code: domain.CodeQueryTimeout,
			Message: "the read ran longer than its deadline and was stopped; ask for less or retry later", Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// Also a deadline met while waiting for a pooled connection.
		return &domain.Error{Kind: domain.KindUnavailable, Code: domain.CodeUnavailable, Message: "the request was cancelled or timed out", Err: err}
	}
	if IsConnectionFailure(err) {
		return unavailable(err)
	}
	return domain.Internal(err, "a database error occurred")
}

// UTCHour is an expression for the UTC hour of a timestamp column as text,
// "YYYY-MM-DD HH" on both dialects (parse with time.Parse("2006-01-02 15")).
func (d *DB) UTCHour(col string) string {
	if d.Dialect == Postgres {
		return `to_char(date_trunc('hour', ` + col + ` AT TIME ZONE 'UTC'), 'YYYY-MM-DD HH24')`
	}
	return `REPLACE(SUBSTR(` + col + `, 1, 13), 'T', ' ')`
}
