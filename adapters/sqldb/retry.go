package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/threadengine/engine/domain"
)

// maxTxAttempts bounds retries of a transaction that lost a Postgres deadlock
// or serialization race; the losers of such races normally succeed on the
// second attempt, so a handful is plenty.
const maxTxAttempts = 5

// callerError marks an error produced by a caller's rule (not the driver), so
// TxRetry returns it unchanged instead of translating it as a database error.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }
func (e callerError) Unwrap() error { return e.err }

// CallerError wraps err, returned from inside a TxRetry closure, so that it
// comes back to the caller as is (e.g. a domain rule's refusal).
func CallerError(err error) error {
	if err == nil {
		return nil
	}
	return callerError{err}
}

// TxRetry runs fn in a transaction (see Tx) and re-runs it when the database
// reports a retryable concurrency failure (deadlock, serialization, busy),
// after a short back-off that ends early with ctx. Errors wrapped with
// CallerError come back unchanged; driver errors are translated; a
// transaction still contended after every attempt (or when ctx ended) is
// reported as unavailable so the client may retry later.
func (d *DB) TxRetry(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = d.Tx(ctx, fn)
		var ce callerError
		if errors.As(err, &ce) {
			return ce.err
		}
		if err == nil || !IsSerializationFailure(err) {
			break
		}
		if isDeadlock(err) {
			d.deadlocks.Add(1)
		} else {
			d.conflicts.Add(1)
		}
		if attempt == maxTxAttempts || !backOff(ctx, time.Duration(attempt*attempt)*5*time.Millisecond) {
			break
		}
	}
	if IsSerializationFailure(err) {
		return errBusy.WithCause(err)
	}
	return TranslateError(err)
}

// errBusy: a transaction lost its concurrency race on every attempt.
var errBusy = domain.NewBase(domain.KindUnavailable, domain.CodeUnavailable, "the database is busy; try again")

// backOff waits d, or until ctx ends; it reports whether the wait ran its
// course (false: ctx ended, do not retry).
func backOff(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Time is how every time is written: UTC with microsecond precision, the
// finest PostgreSQL keeps, so both dialects return identical values (the hash
// chain hashes them). SQLite stores UTC times as fixed-zone text, which
// therefore also compares in time order.
func Time(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Minute is the minute of t as threads.active_minute holds an active
// thread's updated_at (migration 00106): Unix seconds / 60, floored. A
// range of updated_at lies within the range of its ends' minutes.
func Minute(t time.Time) int64 {
	s := t.Unix()
	if s < 0 && s%60 != 0 {
		return s/60 - 1
	}
	return s / 60
}

// TimePtr is Time for optional columns (nil stays NULL).
func TimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return Time(*t)
}

// FromNullTime reads an optional time column as UTC.
func FromNullTime(nt sql.NullTime) *time.Time {
	if !nt.Valid {
		return nil
	}
	t := nt.Time.UTC()
	return &t
}

func isDeadlock(err error) bool {
	var pqe *pq.Error
	return errors.As(err, &pqe) && pqe.Code == "40P01"
}
