package sqldb

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threadengine/engine/domain"
)

// UnavailableRetryAfter is how long clients are told to wait before
// retrying a request the database could not serve: long enough for a
// PostgreSQL restart or fail-over to begin accepting connections, short
// enough that a blip costs a client little.
const UnavailableRetryAfter = 2 * time.Second

// ErrUnavailable is a request the database could not serve because it
// cannot be reached, is shutting down or starting up, has no connection to
// spare, or (SQLite) is locked by another process or closed. Clients get
// code unavailable and a Retry-After; the driver's error is only logged.
// A write whose connection broke during commit may or may not have been
// applied: step reports are deduplicated by their idempotency key when
// retried.
var ErrUnavailable = domain.NewBase(domain.KindUnavailable, domain.CodeUnavailable, "the database is unavailable; retry later")

// unavailable is ErrUnavailable caused by err.
func unavailable(err error) error {
	return ErrUnavailable.WithCause(err).WithRetryAfter(UnavailableRetryAfter)
}

// IsConnectionFailure reports an error that says the database is out of
// reach rather than that the statement was wrong: a refused, reset or timed
// out connection, a connection database/sql or the driver found broken,
// PostgreSQL's connection exceptions (class 08), admin_shutdown (57P01),
// crash_shutdown (57P02), cannot_connect_now (57P03, starting up or in
// recovery) and too_many_connections (53300); SQLite busy or locked after
// its busy timeout, a file it cannot open, and a closed database.
func IsConnectionFailure(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var pqe *pq.Error
	if errors.As(err, &pqe) {
		switch pqe.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		return pqe.Code.Class() == "08"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN:
			return true
		}
		return false
	}
	var ne net.Error // dial refused, connection reset, I/O timeout
	if errors.As(err, &ne) {
		return true
	}
	// database/sql's error for a closed *sql.DB is not exported.
	return strings.Contains(err.Error(), "sql: database is closed")
}

// unreachable turns a connection failure that is not yet a domain error
// into ErrUnavailable and returns any other error as is.
func unreachable(err error) error {
	var de *domain.Error
	if errors.As(err, &de) || !IsConnectionFailure(err) {
		return err
	}
	return unavailable(err)
}
