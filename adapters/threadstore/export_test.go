package threadstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// HasActivityQuery is HasActivity's statement (its plan is tested).
const HasActivityQuery = hasActivityQuery

// The sweeps' statements over threads (their plans are tested).
const (
	SilentThreadsQuery     = silentThreadsQuery
	QuietTraceThreadsQuery = quietTraceThreadsQuery
	ExpiredEndedQuery      = expiredEndedQuery
	ExpiredIdleQuery       = expiredIdleQuery
)

// DeleteByThreads is DeleteThreads' statement for table (col: its thread id
// column) and ids (its plan is tested).
func (s *Store) DeleteByThreads(table, col string, ids []string) (string, []any) {
	in, args := s.inIDs(col, ids)
	return s.q(`DELETE FROM ` + table + ` WHERE ` + in), args
}

// GroupCounters exposes the group-commit counters to tests.
func (s *Store) GroupCounters() (commits, fallbacks int64) {
	return s.groupCommits.Load(), s.groupFallbacks.Load()
}

// BackfillOne exposes the per-thread step of BackfillHealth to the tests.
var BackfillOne = (*Store).backfillOne

// SkipLogForBenchmark makes appends skip the transparency log.
func (s *Store) SkipLogForBenchmark() { s.noLog = true }

// QueueLeavesForTest makes steps queue their leaves on SQLite too (as a
// release before in-place appends did), so the outbox's drain is tested on
// both stores.
func (s *Store) QueueLeavesForTest() { s.queueLeaves = true }

// FlushGapForBenchmark sets how long a woken sequencer waits before it
// flushes (0: at once, as before the gap existed).
func (s *Store) FlushGapForBenchmark(d time.Duration) { s.logFlushGap = d }

// LogFlushes is how many sequencer transactions appended leaves.
func (s *Store) LogFlushes() int64 { return s.logFlushes.Load() }

// AfterQueueRead runs f between ThreadLeaves' read of the queue and its read
// of the tree.
func (s *Store) AfterQueueRead(f func()) { s.queueRead = f }

// WriteProcessMapForTest writes the process map rows of plans as an append
// round does, in one transaction.
func (s *Store) WriteProcessMapForTest(ctx context.Context, plans []ports.StepPlan) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error { return s.execParts(ctx, tx, s.processMapParts(plans)) })
}

// CachedStatementsContaining is how many statements in the store's prepared
// statement cache contain sub.
func (s *Store) CachedStatementsContaining(sub string) int {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	n := 0
	for q := range s.stmts {
		if strings.Contains(q, sub) {
			n++
		}
	}
	return n
}

// AppendTombstonesRolledBack appends tombstones of threads in a transaction
// that then rolls back (as a group commit that failed after its append).
func (s *Store) AppendTombstonesRolledBack(ctx context.Context, threadIDs []string) error {
	errRollback := errors.New("rolled back on purpose")
	err := s.logTx(ctx, false, func(tx *sqlx.Tx) error {
		ths := make([]domain.Thread, len(threadIDs))
		for i, id := range threadIDs {
			ths[i] = domain.Thread{ID: id}
		}
		if err := s.AppendTombstones(ctx, tx, ths, "test", time.Now()); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}

// LeavesJSON is the leaves column a batch of data is written with.
func LeavesJSON(data [][]byte) string {
	leaves := make([]leafIn, len(data))
	for i, d := range data {
		leaves[i].data = d
	}
	return leavesJSON(leaves)
}
