package delivery

import (
	"slices"
	"strings"
	"time"

	"github.com/threadengine/engine/ports"
)

// Following is the engine's side of the hosted engine's auto-subscription
// to "global": a session follows the threads it started or joined, and
// every notification of a followed thread (steps, validations, thread
// events) is pushed to it as a copy — what the Go SDK's WaitFor and the
// SDKs' thread-level handlers wait for without subscribing. A copy:
//
//   - is outside the session's maxInFlight and never leased: an SDK that
//     does not acknowledge it cannot starve the session's acknowledged
//     pushes;
//   - is pushed at most once per session (dropped when the socket's buffer
//     is full), never redelivered, and its ack token (ending ".c") settles
//     nothing: the notification stays the subscribers' (see Subscribe),
//     whoever else follows the thread;
//   - is not pushed to the session whose write raised it (a writer hears
//     its own steps in their replies) — except, rarely, when a read of
//     another replica's change of the thread runs between the commit and
//     this replica's Published (the read cannot tell whose write it was);
//   - comes at commit from this replica's writes, and from a read of the
//     log when another replica announces a change of a followed thread
//     (copies lost with a broadcast are not made up).
//
// A session follows at most maxFollows threads (the oldest is dropped) and
// stops following a thread when it ends.

// threadFollow is one followed thread.
type threadFollow struct {
	sessions map[sid]time.Time    // follower → rows raised before this are not copied to it
	afterSeq int64                // rows up to it were read by a follow read
	copied   map[string]time.Time // ids copied (at commit here, or by a read), by when: not copied twice
	due      bool                 // another replica changed it: read it
}

// copyPush is a copy of a row for a session that follows its thread.
type copyPush struct {
	n  ports.NotificationRecord
	to sid
}

// copyToken is a copy's ack token: it names the notification but settles
// nothing.
func copyToken(n ports.NotificationRecord) string { return n.ID + ".c" }

// follow makes session id follow thread (one it started, or joined) from
// now (a read of another replica's change may bring rows raised up to a
// minute before: the writers' clocks may differ).
func (l *ledger) follow(id sid, thread string, now time.Time) {
	s := l.sessions[id]
	if s == nil || s.followSet[thread] {
		return
	}
	if len(s.follows) >= maxFollows {
		oldest := s.follows[0]
		s.follows = s.follows[1:]
		delete(s.followSet, oldest)
		l.unfollowOne(oldest, id)
	}
	s.follows = append(s.follows, thread)
	s.followSet[thread] = true
	t := l.follows[thread]
	if t == nil {
		t = &threadFollow{sessions: map[sid]time.Time{}, copied: map[string]time.Time{}}
		l.follows[thread] = t
	}
	// Copies are of rows raised since the follow; a read of another
	// replica's change takes rows from a minute before it (the writers'
	// clocks may differ), which also bounds the first read of a thread.
	t.sessions[id] = now.Add(-oldRow)
}

// unfollowOne removes one follower of thread.
func (l *ledger) unfollowOne(thread string, id sid) {
	t := l.follows[thread]
	if t == nil {
		return
	}
	delete(t.sessions, id)
	if len(t.sessions) == 0 {
		delete(l.follows, thread)
	}
}

// ended: thread ended, nothing more will be raised on it; nobody follows
// it any longer.
func (l *ledger) ended(thread string) {
	t := l.follows[thread]
	if t == nil {
		return
	}
	for id := range t.sessions {
		if s := l.sessions[id]; s != nil {
			delete(s.followSet, thread)
			s.follows = slices.DeleteFunc(s.follows, func(x string) bool { return x == thread })
		}
	}
	delete(l.follows, thread)
}

func isThreadEnd(n ports.NotificationRecord) bool {
	return n.Source == "thread" || strings.HasPrefix(n.NotificationType, "thread.")
}

// copiedAt reports whether row id was copied already (at commit here or
// by a read, whichever came first: a row is copied once).
func (t *threadFollow) copiedAt(id string) bool {
	_, done := t.copied[id]
	return done
}

// remember records that row id was copied. Only rows copied to somebody
// are remembered (a thread only its writer follows costs nothing), for
// copyMemory (forgetCopies), at most maxLocalCopies per thread: past that
// a repeat is possible, which the SDKs drop by notificationId.
func (t *threadFollow) remember(id string, now time.Time) {
	if len(t.copied) >= maxLocalCopies {
		clear(t.copied)
	}
	t.copied[id] = now
}

// copyMemory is how long copied ids are remembered: a read that could
// return the row again comes within it (reads start a minute back, then
// after the last row read).
const copyMemory = 2 * oldRow

// forgetCopies drops the copied ids older than copyMemory.
func (l *ledger) forgetCopies(now time.Time) {
	for _, t := range l.follows {
		for id, at := range t.copied {
			if now.Sub(at) > copyMemory {
				delete(t.copied, id)
			}
		}
	}
}

// copies returns the copies of n for the followers of its thread raised
// since they follow it, but for skip.
func (l *ledger) copies(t *threadFollow, n ports.NotificationRecord, skip sid) []copyPush {
	ids := make([]sid, 0, len(t.sessions))
	for id, since := range t.sessions {
		if id != skip && !n.CreatedAt.Before(since) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]copyPush, len(ids))
	for i, id := range ids {
		out[i] = copyPush{n: n, to: id}
	}
	return out
}

// published returns the copies of rows just committed on this replica,
// for every follower but origin, the session whose write raised them (0:
// none).
func (l *ledger) published(ns []ports.NotificationRecord, origin sid, now time.Time) []copyPush {
	var out []copyPush
	for _, n := range ns {
		t := l.follows[n.ThreadID]
		if t == nil {
			continue
		}
		if t.copiedAt(n.ID) {
			continue // a read copied it first (it ran between the commit and this call)
		}
		if c := l.copies(t, n, origin); len(c) > 0 {
			t.remember(n.ID, now)
			out = append(out, c...)
		}
		if isThreadEnd(n) {
			l.ended(n.ThreadID)
		}
	}
	return out
}

// changedElsewhere marks the followed threads among threads as due for a
// read (another replica announced their change) and reports whether one
// is. Copies lost with a broadcast (a resync, a note from a replica older
// than notes) are not made up: reading every followed thread then would
// copy writers' own steps back to them.
func (l *ledger) changedElsewhere(threads []string) bool {
	due := false
	for _, id := range threads {
		if t := l.follows[id]; t != nil {
			t.due = true
			due = true
		}
	}
	return due
}

// followBatch bounds the threads of one follow read.
const followBatch = 200

// followQuery is the next read of followed threads that changed on other
// replicas; false when none is due.
func (l *ledger) followQuery(limit int) (ports.FollowQuery, bool) {
	var threads []string
	for id, t := range l.follows {
		if t.due {
			threads = append(threads, id)
		}
	}
	if len(threads) == 0 {
		return ports.FollowQuery{}, false
	}
	slices.Sort(threads)
	if len(threads) > followBatch {
		threads = threads[:followBatch]
	}
	q := ports.FollowQuery{Threads: threads, AfterSeq: math64Max, Limit: limit}
	first := true
	for _, id := range threads {
		t := l.follows[id]
		q.AfterSeq = min(q.AfterSeq, t.afterSeq)
		for _, since := range t.sessions {
			if first || since.Before(q.Since) {
				q.Since, first = since, false
			}
		}
	}
	return q, true
}

const math64Max = int64(^uint64(0) >> 1)

// followed returns the copies of the rows a follow read (q) returned that
// were not copied yet, and reports whether another read should follow.
func (l *ledger) followed(q ports.FollowQuery, rows []ports.NotificationRecord, now time.Time) ([]copyPush, bool) {
	more := len(rows) == q.Limit && q.Limit > 0
	for _, id := range q.Threads {
		if t := l.follows[id]; t != nil {
			t.due = more
		}
	}
	var out []copyPush
	for _, n := range rows {
		t := l.follows[n.ThreadID]
		if t == nil || n.Seq <= t.afterSeq {
			continue
		}
		t.afterSeq = n.Seq
		if !t.copiedAt(n.ID) {
			if c := l.copies(t, n, 0); len(c) > 0 {
				t.remember(n.ID, now)
				out = append(out, c...)
			}
		}
		if isThreadEnd(n) {
			l.ended(n.ThreadID)
		}
	}
	return out, more
}
