// Package db holds the SQL migrations, one folder per dialect, embedded into
// the binary and applied by goose at start-up.
package db

import "embed"

// Postgres holds the PostgreSQL migrations (folder "postgres").
//
//go:embed postgres/*.sql
var Postgres embed.FS

// SQLite holds the SQLite migrations (folder "sqlite").
//
//go:embed sqlite/*.sql
var SQLite embed.FS
