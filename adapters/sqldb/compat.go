package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/threadengine/engine/domain"
)

// GateMigration is the migration that created schema_compat: a database
// below it predates the gate and allows every binary.
const GateMigration = 30

// EmbeddedFloor is the min_binary_schema the embedded migrations leave: the
// highest floor any of their contract migrations sets (00108: binaries
// below 102 name thread_step_states.latest_context, which it drops; 00102
// set 101 before it, 00100 92).
// Tests compare a migrated database's window with it (EmbeddedFloorOf).
const EmbeddedFloor = 102

// EmbeddedFloorOf is EmbeddedFloor of the dialect: the same on both since
// 00102. SQLite's 00099 (binaries below 99 would write the transparency
// log's leaf rows into what is now a view) keeps its floor at 99 or above
// with a trigger while it is applied, which a floor of 101 or 102 does not
// fire; it matters for Downs that restore a floor below 99 (00100's,
// 00102's).
func EmbeddedFloorOf(d Dialect) int64 {
	if d == SQLite {
		return max(99, EmbeddedFloor)
	}
	return EmbeddedFloor
}

// ErrIncompatible is wrapped by the gate's refusal (errors.Is).
var ErrIncompatible = errors.New("binary outside the database's schema window")

// Compat is the schema compatibility window of a database as one binary
// sees it (docs/contributors/migrations.md): the binary may use the
// database while MinBinary <= Binary <= Database.
type Compat struct {
	Database  int64 // highest migration applied (goose_db_version)
	MinBinary int64 // schema_compat.min_binary_schema: the oldest binary schema allowed
	Binary    int64 // this binary's schema (its highest embedded migration)
}

// Err says why the binary may not use the database, or nil when it may.
func (c Compat) Err() error {
	switch {
	case c.Binary < c.MinBinary:
		return &domain.Error{Kind: domain.KindUnavailable, Code: domain.CodeUnavailable,
			Message: fmt.Sprintf("this engine's binary (schema %d) is older than its database allows (schema %d or newer, the database is at %d): "+
				"it refuses to serve; upgrade it, or roll the database back with the newer binary's `threadengine migrate down`",
				c.Binary, c.MinBinary, c.Database), Err: ErrIncompatible}
	case c.Database < c.Binary:
		return &domain.Error{Kind: domain.KindUnavailable, Code: domain.CodeUnavailable,
			Message: fmt.Sprintf("the database (schema %d) is older than this engine's binary (schema %d): it was rolled back under it; "+
				"it refuses to serve; run `threadengine migrate up` or deploy the release that matches the database",
				c.Database, c.Binary), Err: ErrIncompatible}
	}
	return nil
}

// BinarySchema is the schema this process claims (see OpenOptions).
func (d *DB) BinarySchema() int64 { return d.binarySchema }

// ReadCompat reads the database's window without changing the gate.
func (d *DB) ReadCompat(ctx context.Context) (Compat, error) {
	c := Compat{Binary: d.binarySchema, MinBinary: 1}
	var v sql.NullInt64
	if err := d.DB.GetContext(ctx, &v, `SELECT MAX(version_id) FROM goose_db_version WHERE is_applied`); err != nil {
		return c, fmt.Errorf("schema compatibility: read the schema version: %w", err)
	}
	c.Database = v.Int64
	if c.Database < GateMigration {
		return c, nil // schema_compat does not exist yet (or was rolled back)
	}
	if err := d.DB.GetContext(ctx, &c.MinBinary, `SELECT min_binary_schema FROM schema_compat WHERE id = 1`); err != nil {
		return c, fmt.Errorf("schema compatibility: read schema_compat: %w", err)
	}
	return c, nil
}

// gateState remembers the last decision, so a change is reported once.
type gateState struct {
	mu      sync.Mutex
	checked bool
	last    Compat
}

// CheckCompat reads the window and opens or closes the gate: while closed,
// Tx and ExecContext return Refusal's error instead of touching the
// database. It returns the window read and whether the gate changed since
// the previous check (the first check counts as a change only when it
// closes the gate). A failed read leaves the gate as it was.
func (d *DB) CheckCompat(ctx context.Context) (Compat, bool, error) {
	c, err := d.ReadCompat(ctx)
	if err != nil {
		return c, false, err
	}
	d.gate.mu.Lock()
	defer d.gate.mu.Unlock()
	was := d.refusal.Load() != nil
	if cerr := c.Err(); cerr != nil {
		d.refusal.Store(&cerr)
	} else {
		d.refusal.Store(nil)
	}
	now := d.refusal.Load() != nil
	changed := was != now || (!d.gate.checked && now)
	d.gate.checked, d.gate.last = true, c
	return c, changed, nil
}

// LastCompat is the window the latest successful CheckCompat read.
func (d *DB) LastCompat() Compat {
	d.gate.mu.Lock()
	defer d.gate.mu.Unlock()
	return d.gate.last
}

// Refusal is the gate's error while this binary may not use the database
// (an unavailable domain error naming both schemas), nil otherwise.
func (d *DB) Refusal() error {
	if p := d.refusal.Load(); p != nil {
		return *p
	}
	return nil
}

// ExecContext runs a statement outside a transaction, unless the gate is
// closed: every store writes through Tx or this method, so a binary
// outside the window writes nothing.
func (d *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := d.Refusal(); err != nil {
		return nil, err
	}
	return d.DB.ExecContext(ctx, query, args...)
}
