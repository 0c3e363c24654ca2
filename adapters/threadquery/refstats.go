package threadquery

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
)

// Ref substring search on PostgreSQL reads the pg_trgm index
// thread_refs_value_trgm with every trigram of the term. pg_trgm splits a
// term into words at characters other than letters and digits, and a
// GIN scan advances every trigram's posting list to each candidate of the
// rarest one: a term such as "ord-123456", whose word "ord" (and the word
// boundaries "rd ", "  1") is in most refs, reads those trigrams' whole
// posting lists, which grow with the refs (at 1 M threads 643 index pages,
// 7.6 ms, against 19 pages for "123456" alone). So the index is asked for
// the term's uncommon words only ('%123456%', each word in the term's
// order), and the term itself is a filter on the few rows that returns:
// the same rows, since every value containing the term contains its words
// in that order. Which words are common comes from the statistics ANALYZE
// keeps on the index expression (the planner's own: its most common values
// and histogram), read at most every refStatsTTL.

// refStatsTTL is how long the statistics read from pg_stats are used.
const refStatsTTL = 10 * time.Minute

// commonShare is the share of refs above which a word is left out of the
// index condition: its posting lists cost more than they narrow. Five
// histogram values of the 101 ANALYZE keeps by default: a word left out
// is clearly common, one kept costs at most that share's posting lists
// (what the whole term's condition read anyway).
const commonShare = 0.05

// refStats is a sample of LOWER(ref_value) with each value's weight (its
// share of the refs).
type refStats struct {
	vals    []string
	weights []float64
}

// share estimates the share of refs containing w, as the planner does for
// LIKE '%w%': the most common values that contain it plus the histogram's
// share of the rest.
func (st refStats) share(w string) float64 {
	s := 0.0
	for i, v := range st.vals {
		if strings.Contains(v, w) {
			s += st.weights[i]
		}
	}
	return s
}

type refStatsCache struct {
	mu    sync.Mutex
	stats refStats
	at    time.Time
}

// refStats returns the cached statistics of LOWER(ref_value), reading them
// when stale; none (and so the whole term in the index condition) when the
// table was not analyzed or could not be read.
func (s *Store) refStats(ctx context.Context) refStats {
	c := &s.refStatsCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < refStatsTTL {
		return c.stats
	}
	c.at = time.Now()
	c.stats = refStats{}
	read := s.readPGRefStats
	if s.db.Dialect == sqldb.SQLite {
		read = s.sampleRefStats
	}
	st, err := read(ctx)
	if err != nil {
		// A read cut by its caller's deadline, or pg_stats not readable:
		// the whole term serves meanwhile, and the read is tried again in
		// a minute rather than at the next TTL.
		c.at = c.at.Add(time.Minute - refStatsTTL)
		return c.stats
	}
	c.stats = st
	return st
}

// readPGRefStats reads ANALYZE's statistics of the trigram index's
// expression.
func (s *Store) readPGRefStats(ctx context.Context) (refStats, error) {
	var rows []struct {
		V string  `db:"v"`
		F float64 `db:"f"`
	}
	// The most common values with their frequencies (f), then the
	// histogram's values (f = -1), which share what the former leave.
	err := s.db.SelectContext(ctx, &rows, `SELECT m.v, m.f FROM pg_stats s,
 unnest(CAST(CAST(s.most_common_vals AS TEXT) AS TEXT[]), s.most_common_freqs) AS m(v, f)
 WHERE s.schemaname = current_schema() AND s.tablename = 'thread_refs_value_trgm'
 UNION ALL SELECT h.v, -1 FROM pg_stats s, unnest(CAST(CAST(s.histogram_bounds AS TEXT) AS TEXT[])) AS h(v)
 WHERE s.schemaname = current_schema() AND s.tablename = 'thread_refs_value_trgm'`)
	if err != nil || len(rows) == 0 {
		return refStats{}, err
	}
	rest, hist := 1.0, 0
	for _, r := range rows {
		if r.F >= 0 {
			rest -= r.F
		} else {
			hist++
		}
	}
	st := refStats{}
	for _, r := range rows {
		w := r.F
		if w < 0 {
			w = max(rest, 0) / float64(hist)
		}
		st.vals, st.weights = append(st.vals, r.V), append(st.weights, w)
	}
	return st, nil
}

// refSampleSize is how many refs SQLite's statistics draw: a word in 5 %
// of the refs is in ≈ 25 of them, give or take 10. refSampleRounds bounds
// the draws when most rowids are gone (5,000 point reads).
const (
	refSampleSize   = 500
	refSampleRounds = 10
)

// sampleRefStats draws refs at random rowids on SQLite, whose ANALYZE keeps
// no value statistics: the FTS5 trigram table, like pg_trgm, reads every
// trigram's posting list of the term it is given, and a common word's
// ("ord" of "ord-123456") grows with the refs (at 1 M threads 15.6 ms
// against 7.4 at 100 k). One point read per rowid drawn, every
// refStatsTTL; fewer than 50 refs found give no statistics (a small table
// is cheap to search whole).
func (s *Store) sampleRefStats(ctx context.Context) (refStats, error) {
	var span struct {
		Lo sql.NullInt64 `db:"lo"`
		Hi sql.NullInt64 `db:"hi"`
	}
	if err := s.db.GetContext(ctx, &span, `SELECT MIN(rowid) AS lo, MAX(rowid) AS hi FROM thread_refs`); err != nil || !span.Lo.Valid {
		return refStats{}, err
	}
	// Retention leaves gaps in the rowids (a year's oldest thread still
	// running keeps the lowest): draws go on in rounds until the sample
	// holds refSampleSize refs, each once (a rowid drawn again adds
	// nothing), at most refSampleRounds of them.
	seen := map[int64]string{}
	for round := 0; round < refSampleRounds && len(seen) < refSampleSize; round++ {
		ids := make([]any, refSampleSize)
		for i := range ids {
			ids[i] = span.Lo.Int64 + rand.Int64N(span.Hi.Int64-span.Lo.Int64+1)
		}
		q, args, err := sqlx.In(`SELECT rowid AS id, LOWER(ref_value) AS v FROM thread_refs WHERE rowid IN (?)`, ids)
		if err != nil {
			return refStats{}, err
		}
		var got []struct {
			ID int64  `db:"id"`
			V  string `db:"v"`
		}
		if err := s.db.SelectContext(ctx, &got, q, args...); err != nil {
			return refStats{}, err
		}
		for _, r := range got {
			seen[r.ID] = r.V
		}
	}
	vals := make([]string, 0, len(seen))
	for _, v := range seen {
		vals = append(vals, v)
	}
	if len(vals) < 50 {
		return refStats{}, nil
	}
	st := refStats{vals: vals, weights: make([]float64, len(vals))}
	for i := range vals {
		st.weights[i] = 1 / float64(len(vals))
	}
	return st, nil
}

// refIndexPattern is the LIKE pattern for the trigram index for the
// lower-cased term v: '%w1%w2%' of v's uncommon words, or "" when the
// whole term is the better condition (one word, every word common, or the
// uncommon ones too short to give a trigram).
func refIndexPattern(v string, st refStats) string {
	words := strings.FieldsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) < 2 || len(st.vals) == 0 {
		return ""
	}
	var kept []string
	long := false
	for _, w := range words {
		if st.share(w) <= commonShare {
			kept = append(kept, w)
			long = long || len([]rune(w)) >= 3
		}
	}
	if len(kept) == len(words) || !long {
		return ""
	}
	return "%" + strings.Join(kept, "%") + "%"
}
