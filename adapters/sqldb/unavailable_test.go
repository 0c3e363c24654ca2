package sqldb_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
)

// wantUnavailable checks that err is the database's retryable refusal.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	p := domain.Public(err)
	if !errors.Is(err, sqldb.ErrUnavailable) || p.Code != domain.CodeUnavailable || p.Status != 503 ||
		p.RetryAfter != sqldb.UnavailableRetryAfter || p.Internal {
		t.Fatalf("%s: %v (public view %+v), want the database's unavailable error", what, err, p)
	}
	t.Logf("%s: %v", what, err)
}

func TestConnectionFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{driver.ErrBadConn, true},
		{fmt.Errorf("query: %w", driver.ErrBadConn), true},
		{sql.ErrConnDone, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errors.New("connection refused"))}, true},
		{&pq.Error{Code: "08006"}, true}, // connection_failure
		{&pq.Error{Code: "08001"}, true}, // sqlclient_unable_to_establish_sqlconnection
		{&pq.Error{Code: "57P01"}, true}, // admin_shutdown
		{&pq.Error{Code: "57P03"}, true}, // cannot_connect_now
		{&pq.Error{Code: "53300"}, true}, // too_many_connections
		{&pq.Error{Code: "23505"}, false},
		{&pq.Error{Code: "40001"}, false}, // retried by TxRetry, not an outage
		{&pq.Error{Code: "57014"}, false}, // query_canceled (statement_timeout)
		{errors.New("sql: database is closed"), true},
		{sql.ErrNoRows, false},
		{errors.New("syntax error"), false},
	} {
		if got := sqldb.IsConnectionFailure(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

// A PostgreSQL server that goes away (connections reset, port closed) and
// one that is not there at all make every kind of call answer the
// retryable unavailable error, not an internal one.
func TestPostgresOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	base := sqldbtest.URL(t, sqldb.Postgres)
	out := sqldbtest.NewOutage(t, base)
	ctx := context.Background()
	db, err := sqldb.Open(ctx, out.Via(t, base))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.GetContext(ctx, &n, "SELECT COUNT(*) FROM users"); err != nil {
		t.Fatal(err)
	}
	out.Cut()
	wantUnavailable(t, "read", sqldb.TranslateError(db.GetContext(ctx, &n, "SELECT COUNT(*) FROM users")))
	wantUnavailable(t, "transaction", db.TxRetry(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM users WHERE id = 'x'")
		return err
	}))
	wantUnavailable(t, "transaction (Tx)", db.Tx(ctx, func(tx *sqlx.Tx) error { return nil }))

	// Nothing listens on the port at all.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "postgres://postgres@" + ln.Addr().String() + "/test?sslmode=disable"
	ln.Close()
	x, err := sqlx.Open("postgres", closed)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	wantUnavailable(t, "closed port", sqldb.TranslateError(x.PingContext(ctx)))
}

// A connection the server ends (pg_terminate_backend: admin_shutdown, as in
// a fast shutdown) fails its next statement as unavailable.
func TestPostgresTerminatedConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, sqldb.Postgres)
	ctx := context.Background()
	conn, err := db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pid int
	if err := conn.GetContext(ctx, &pid, "SELECT pg_backend_pid()"); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := db.GetContext(ctx, &ok, "SELECT pg_terminate_backend($1)", pid); err != nil || !ok {
		t.Fatalf("terminate backend %d: %v %v", pid, ok, err)
	}
	var n int
	wantUnavailable(t, "terminated connection", sqldb.TranslateError(conn.GetContext(ctx, &n, "SELECT 1")))
}

// SQLite: a closed database, and a database another process holds locked
// past the request's deadline, are unavailable, not internal.
func TestSQLiteUnavailable(t *testing.T) {
	t.Parallel()
	u := sqldbtest.URL(t, sqldb.SQLite)
	ctx := context.Background()
	db, err := sqldb.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	locker, err := sqlx.Open("sqlite", "file:"+u[len("sqlite://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	lc, err := locker.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if _, err := lc.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = db.TxRetry(short, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(short, "DELETE FROM users WHERE id = 'x'")
		return err
	})
	cancel()
	if p := domain.Public(err); p.Code != domain.CodeUnavailable || !p.Retryable() {
		t.Fatalf("locked database: %v (%+v)", err, p)
	}
	_, _ = lc.ExecContext(ctx, "ROLLBACK")

	db.Close()
	var n int
	wantUnavailable(t, "closed database", sqldb.TranslateError(db.GetContext(ctx, &n, "SELECT COUNT(*) FROM users")))
}
