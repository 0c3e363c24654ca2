package threadstore

// GroupCounters exposes the group-commit counters to tests.
func (s *Store) GroupCounters() (commits, fallbacks int64) {
	return s.groupCommits.Load(), s.groupFallbacks.Load()
}

// BackfillOne exposes the per-thread step of BackfillHealth to the tests.
var BackfillOne = (*Store).backfillOne

// SkipLogForBenchmark makes appends skip the transparency log.
func (s *Store) SkipLogForBenchmark() { s.noLog = true }

// AfterQueueRead runs f between ThreadLeaves' read of the queue and its read
// of the tree.
func (s *Store) AfterQueueRead(f func()) { s.queueRead = f }
