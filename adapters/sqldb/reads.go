package sqldb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/domain"
)

// ReadOptions size the pool of connections that serve reads (queries,
// exports, MCP) apart from the writers' pool.
type ReadOptions struct {
	// Conns is the most connections reads hold at once. Writers keep their
	// own pool, so however many reads run and however long each takes,
	// they never hold a connection a writer needs.
	Conns int
	// StatementTimeout, when positive, is PostgreSQL's statement_timeout on
	// every read connection: the server stops a statement after it even if
	// the engine's own deadline did not reach it (SQLite reads are stopped
	// by their context's deadline, which modernc.org/sqlite turns into
	// sqlite3_interrupt).
	StatementTimeout time.Duration
}

// errReadOnly refuses a transaction on the read pool: writes use the DB
// OpenWith returned.
var errReadOnly = domain.Internal(errors.New("sqldb: transaction on the read pool"), "a database error occurred")

// OpenReads opens the read pool of d: a second pool on the same database,
// read-only (PostgreSQL default_transaction_read_only, SQLite query_only),
// of opt.Conns connections. SQLite in WAL mode serves these readers beside
// the one writer connection. A database that cannot be shared between
// pools (an in-memory SQLite) returns d itself. The pool is closed with d.
func (d *DB) OpenReads(ctx context.Context, opt ReadOptions) (*DB, error) {
	if opt.Conns <= 0 {
		return nil, fmt.Errorf("sqldb: read pool of %d connections", opt.Conns)
	}
	var x *sqlx.DB
	var err error
	switch d.Dialect {
	case Postgres:
		u, perr := url.Parse(d.dsn)
		if perr != nil {
			return nil, fmt.Errorf("database.url: %w", perr)
		}
		q := u.Query()
		// lib/pq sends parameters it does not know as run-time
		// parameters of every connection.
		q.Set("default_transaction_read_only", "on")
		if opt.StatementTimeout > 0 {
			q.Set("statement_timeout", fmt.Sprint(opt.StatementTimeout.Milliseconds()))
		}
		u.RawQuery = q.Encode()
		x, err = sqlx.Open("postgres", u.String())
	case SQLite:
		if d.dsn == "" || d.dsn == ":memory:" || strings.Contains(d.dsn, "mode=memory") {
			return d, nil
		}
		x, err = sqlx.Open("sqlite", "file:"+d.dsn+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)&_pragma=foreign_keys(1)")
	}
	if err != nil {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	x.SetMaxOpenConns(opt.Conns)
	x.SetMaxIdleConns(opt.Conns)
	x.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := x.PingContext(pingCtx); err != nil {
		_ = x.Close()
		return nil, fmt.Errorf("database.url: read pool cannot connect: %w", err)
	}
	r := &DB{DB: x, Dialect: d.Dialect, dsn: d.dsn, binarySchema: d.binarySchema, readPool: true}
	var refuse error = errReadOnly
	r.refusal.Store(&refuse)
	d.reads = append(d.reads, r)
	return r, nil
}
