package ports

import (
	"context"
	"time"
)

// ProcessMapRow is one (kind, from, to, duration bucket) of a contract
// version's process map roll-up summed over a window.
type ProcessMapRow struct {
	Kind     string // "N" node (To is the step), "E" edge (From → To; From "" for a first step)
	From, To string
	Bucket   int // log2 ms bucket, -1 unknown
	Count    int64
	Example  string // one thread of the row
}

// ProcessMapReads reads the process map roll-up (process_map_hourly).
type ProcessMapReads interface {
	// ProcessMapRows sums the roll-up of one contract version over the
	// hours in [since, until).
	ProcessMapRows(ctx context.Context, contractName string, version int, since, until time.Time) ([]ProcessMapRow, error)
}
