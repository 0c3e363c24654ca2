package sqldb

import (
	"context"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// ProviderFS exposes the migration provider over a test's own migrations.
func (d *DB) ProviderFS(ctx context.Context, fsys fs.FS) (*goose.Provider, error) {
	return d.providerFS(ctx, fsys)
}
