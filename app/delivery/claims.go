package delivery

import "time"

// A claim is what a subscription leaves behind: while a principal holds a
// claim on a routing key (one of its sessions subscribed to it, here or on
// another replica, and none unsubscribed from it explicitly since), the
// notifications raised for that key are held for the principal, and the
// next session of it that subscribes to the key gets them — an SDK that
// reconnects, or a session that was full. Notifications raised while
// nobody held a claim are not pushed to a later subscriber (unless their
// thread was started or joined on its session): a new subscriber is not
// flooded with the old notifications of earlier threads. An explicit
// unsubscribe releases the claim.
//
// Claims live in memory: each replica hears of the others' claims and
// releases by broadcast, and rows raised before a replica could have heard
// of them (before it started, or across a gap in broadcasts) count as held.

type claimKey struct{ principal, key string }

type claim struct {
	since    time.Time // the claim began
	released time.Time // zero while it lasts
	touched  time.Time // last subscribed, claimed or left here: claims untouched for the retention are forgotten
}

// claimTable holds the claims by principal and key.
type claimTable map[claimKey]*claim

// maxClaims bounds the table; the claims touched longest ago go first.
const maxClaims = 100_000

// claim starts the principal's claim on key at, or moves the start of the
// one that lasts back to at; it reports whether the claim now holds more
// than before (it started, or begins earlier).
func (t claimTable) claim(principal, key string, at time.Time) bool {
	k := claimKey{principal, key}
	if c := t[k]; c != nil {
		c.touched = at
		if c.released.IsZero() {
			if at.Before(c.since) {
				c.since = at
				return true
			}
			return false
		}
		c.since, c.released = at, time.Time{}
		return true
	}
	if len(t) >= maxClaims {
		t.evictOldest()
	}
	t[k] = &claim{since: at, touched: at}
	return true
}

// release ends the claim; it reports whether one was lasting.
func (t claimTable) release(principal, key string, at time.Time) bool {
	c := t[claimKey{principal, key}]
	if c == nil || !c.released.IsZero() {
		return false
	}
	c.released, c.touched = at, at
	return true
}

// touch marks the claim as used now (a session holding it left).
func (t claimTable) touch(principal, key string, at time.Time) {
	if c := t[claimKey{principal, key}]; c != nil {
		c.touched = at
	}
}

// covers reports whether a notification raised at is held by the claim.
// A row's timestamp is its writer's clock: commitSlack of tolerance.
func (t claimTable) covers(principal, key string, at time.Time) bool {
	c := t[claimKey{principal, key}]
	if c == nil || at.Before(c.since.Add(-commitSlack)) {
		return false
	}
	return c.released.IsZero() || at.Before(c.released)
}

// forget drops the claims untouched since before cutoff: what they held
// has expired from the log by then.
func (t claimTable) forget(cutoff time.Time) {
	for k, c := range t {
		if c.touched.Before(cutoff) {
			delete(t, k)
		}
	}
}

func (t claimTable) evictOldest() {
	var oldest claimKey
	var at time.Time
	for k, c := range t {
		if at.IsZero() || c.touched.Before(at) {
			oldest, at = k, c.touched
		}
	}
	delete(t, oldest)
}

// remoteClaim records a claim another replica made at (its clock, or the
// time the message arrived if earlier). When it holds rows no claim here
// held (it is new, or began before the one here), and a session of the
// principal here already holds the key, those rows may now go to it: the
// log is read again, and remoteClaim reports it. A broadcast can arrive
// after that session subscribed (an SDK leaving one replica and
// reconnecting to another at once): its subscription made a claim here
// from that moment, and the rows held from before were judged without
// the other replica's claim.
func (l *ledger) remoteClaim(principal, key string, at time.Time) (rescan bool) {
	if !l.claims.claim(principal, key, at) {
		return false // held nothing more
	}
	for id := range l.byPrincipal[principal] {
		if _, ok := l.sessions[id].keys[key]; ok {
			l.rescan()
			return true
		}
	}
	return false
}

// remoteRelease records a release on another replica, unless a session of
// the principal here still holds the key.
func (l *ledger) remoteRelease(principal, key string, at time.Time) {
	for id := range l.byPrincipal[principal] {
		if _, ok := l.sessions[id].keys[key]; ok {
			return
		}
	}
	l.claims.release(principal, key, at)
}

// forgetClaims drops claims untouched since before cutoff.
func (l *ledger) forgetClaims(cutoff time.Time) { l.claims.forget(cutoff) }
