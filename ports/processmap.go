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

// ProcessMapHourlyKept is how far back the process map keeps hour rows
// (process_map_hourly; issue 28): the roll-up job deletes the hours before
// ProcessMapHourlyPruned, whose counts stay in the day rows
// (process_map_daily). A map's window ends within the kept span are whole
// UTC hours; ends before it are widened to whole UTC days.
const ProcessMapHourlyKept = 7 * 24 * time.Hour

// ProcessMapHourlyPruned is the first hour row the roll-up keeps at now (once
// it has caught up: it prunes a week of days a call): the
// day ProcessMapHourlyKept plus one day before now's UTC day (a day more
// than windows read at hour precision, so no read meets a pruned hour).
func ProcessMapHourlyPruned(now time.Time) time.Time {
	return now.UTC().Truncate(24 * time.Hour).Add(-ProcessMapHourlyKept - 24*time.Hour)
}

// ProcessMapHourlyHorizon: a window end before it is widened to whole UTC
// days (ProcessMapHourlyKept before now).
func ProcessMapHourlyHorizon(now time.Time) time.Time {
	return now.UTC().Add(-ProcessMapHourlyKept)
}

// ProcessMapReads reads the process map roll-up (process_map_hourly).
type ProcessMapReads interface {
	// ProcessMapRows sums the roll-up of one contract version over the
	// hours in [since, until).
	ProcessMapRows(ctx context.Context, contractName string, version int, since, until time.Time) ([]ProcessMapRow, error)
}
