package delivery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/ports"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func row(seq int64, id, owner, thread, step string, created time.Time) ports.NotificationRecord {
	return ports.NotificationRecord{ID: id, Seq: seq, ThreadID: thread, StepName: step, OwnerID: owner, Source: "execution",
		NotificationType: "execution.success", CreatedAt: created}
}

// Which rows a session may be pushed: the routing (key, type, owner or
// joined) and the rule for rows raised before it subscribed.
func TestLedgerEligible(t *testing.T) {
	t.Parallel()
	subAt := t0.Add(time.Hour) // the session subscribes to ship an hour after the ledger started
	cases := []struct {
		name  string
		setup func(l *ledger, s sid)
		n     ports.NotificationRecord
		want  bool
	}{
		{"raised after it subscribed", nil, row(1, "n", "u1", "t1", "ship", subAt.Add(time.Second)), true},
		{"raised a moment before (commit slack)", nil, row(1, "n", "u1", "t1", "ship", subAt.Add(-time.Second)), true},
		{"another step", nil, row(1, "n", "u1", "t1", "pack", subAt.Add(time.Second)), false},
		{"another principal's thread", nil, row(1, "n", "u2", "t1", "ship", subAt.Add(time.Second)), false},
		{"another principal's thread it joined", func(l *ledger, s sid) { l.join(s, "t1") },
			row(1, "n", "u2", "t1", "ship", subAt.Add(time.Second)), true},
		{"old, nobody subscribed then", nil, row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute)), false},
		{"old, pushed before and never acknowledged", nil,
			func() ports.NotificationRecord {
				n := row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute))
				n.Deliveries = 1
				return n
			}(), true},
		{"old, raised before this hub knew the claims (restart)", nil, row(1, "n", "u1", "t1", "ship", t0.Add(-time.Minute)), true},
		{"old, of a thread it started", func(l *ledger, s sid) { l.follow(s, "t1", subAt) },
			row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute)), true},
		{"old, raised while a session of the principal held the key", func(l *ledger, s sid) {
			l.claims.claim("u1", "ship", subAt.Add(-20*time.Minute))
		}, row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute)), true},
		{"old, raised after that claim was released", func(l *ledger, s sid) {
			l.claims.claim("u1", "ship", subAt.Add(-20*time.Minute))
			l.claims.release("u1", "ship", subAt.Add(-15*time.Minute))
		}, row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute)), false},
		{"old, raised before that claim was released", func(l *ledger, s sid) {
			l.claims.claim("u1", "ship", subAt.Add(-20*time.Minute))
			l.claims.release("u1", "ship", subAt.Add(-5*time.Minute))
		}, row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute)), true},
		{"another principal's claim", func(l *ledger, s sid) { l.claims.claim("u2", "ship", subAt.Add(-20*time.Minute)) },
			row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute)), false},
		{"contract@step key", func(l *ledger, s sid) { l.subscribe(s, "c@pack", nil, subAt) },
			func() ports.NotificationRecord {
				n := row(1, "n", "u1", "t1", "pack", subAt.Add(time.Second))
				n.ContractName = "c"
				return n
			}(), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newLedger(t0)
			s := l.register("u1", 10)
			// The subscription's claim is taken before setup, as if the
			// principal had not held one before.
			l.subscribe(s, "ship", []string{"step.success"}, subAt)
			delete(l.claims, claimKey{"u1", "ship"})
			if c.setup != nil {
				c.setup(l, s)
			}
			if got := l.eligible(l.sessions[s], c.n); got != c.want {
				t.Fatalf("eligible = %v, want %v", got, c.want)
			}
		})
	}
}

func TestLedgerEventTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		subscribed []string
		typ        string
		want       bool
	}{
		{nil, "execution.failed", true},
		{[]string{"*"}, "validation.violated", true},
		{[]string{"step.success"}, "execution.success", true},
		{[]string{"step.success"}, "execution.failed", false},
		{[]string{"rule.*"}, "validation.passed", true},
		{[]string{"execution.*"}, "validation.passed", false},
	}
	for _, c := range cases {
		l := newLedger(t0)
		s := l.register("u1", 10)
		l.subscribe(s, "ship", c.subscribed, t0)
		n := row(1, "n", "u1", "t1", "ship", t0)
		n.NotificationType = c.typ
		if got := l.eligible(l.sessions[s], n); got != c.want {
			t.Errorf("subscribed %v, %s: %v, want %v", c.subscribed, c.typ, got, c.want)
		}
	}
}

// pickAll runs one read over rows and leases every pick.
func pickAll(l *ledger, rows []ports.NotificationRecord, now time.Time) ([]push, pickResult) {
	_, m, _ := l.query(now, false, 3, pollLimit)
	r := l.pick(rows, m, pollLimit, now)
	ids := make([]string, len(r.picks))
	for i, p := range r.picks {
		ids[i] = p.n.ID
	}
	ps, _, _ := l.leased(r, ids, now, now.Add(30*time.Second))
	return ps, r
}

func pushedIDs(ps []push) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s→%d", p.n.ID, p.to))
	}
	return strings.Join(out, ",")
}

// maxInFlight: a full session takes nothing more, and the cursor stops
// before the first row it could not take; an ack makes room.
func TestLedgerPickRespectsRoom(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	s := l.register("u1", 2)
	l.subscribe(s, "ship", nil, t0)
	rows := []ports.NotificationRecord{row(1, "a", "u1", "t", "ship", t0), row(2, "b", "u1", "t", "ship", t0), row(3, "c", "u1", "t", "ship", t0)}
	now := t0.Add(10 * time.Second) // past the commit slack
	ps, r := pickAll(l, rows, now)
	if got := pushedIDs(ps); got != "a→1,b→1" || !r.blocked {
		t.Fatalf("pushed %s (blocked %v), want a and b, then blocked", got, r.blocked)
	}
	if l.cur.at != 0 { // first read of these rows: not settled yet
		t.Fatalf("cursor %d", l.cur.at)
	}
	if ps[0].token != "a.1" || ps[0].n.Deliveries != 1 {
		t.Fatalf("token %q deliveries %d", ps[0].token, ps[0].n.Deliveries)
	}
	if !l.ack(s, "a") || l.ack(s, "a") {
		t.Fatal("the first ack frees a place, the second nothing")
	}
	ps, _ = pickAll(l, rows[2:], now.Add(10*time.Second))
	if got := pushedIDs(ps); got != "c→1" {
		t.Fatalf("after the ack: %s", got)
	}
	if d := l.takePending(); d != 2 {
		t.Fatalf("pending moved by %d, want +3 -1", d)
	}
}

// Rows go round robin to the sessions that may take them.
func TestLedgerPickRoundRobin(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	a, b := l.register("u1", 10), l.register("u1", 10)
	l.subscribe(a, "ship", nil, t0)
	l.subscribe(b, "ship", nil, t0)
	var rows []ports.NotificationRecord
	for i := range 4 {
		rows = append(rows, row(int64(i+1), fmt.Sprint("n", i), "u1", "t", "ship", t0))
	}
	ps, _ := pickAll(l, rows, t0)
	count := map[sid]int{}
	for _, p := range ps {
		count[p.to]++
	}
	if count[a] != 2 || count[b] != 2 {
		t.Fatalf("spread %v", count)
	}
}

// The cursor passes rows left to nobody and rows this hub pushed once they
// are older than the commit slack (by this hub's first read), or a
// minute old by their timestamp; a full page stops it at its last row.
func TestLedgerCursor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		rows []ports.NotificationRecord
		// reads at these offsets from t0 (the same rows each time)
		reads []time.Duration
		limit int
		want  int64
	}{
		{"young rows nobody wants", []ports.NotificationRecord{row(1, "x", "u1", "t", "pack", t0)}, []time.Duration{0}, pollLimit, 0},
		{"read again after the slack", []ports.NotificationRecord{row(1, "x", "u1", "t", "pack", t0)}, []time.Duration{0, 6 * time.Second}, pollLimit, 1},
		{"a row stamped by a slow clock still waits the slack here", []ports.NotificationRecord{row(1, "x", "u1", "t", "pack", t0.Add(-30*time.Second))},
			[]time.Duration{0}, pollLimit, 0},
		{"an old row passes at once", []ports.NotificationRecord{row(1, "x", "u1", "t", "pack", t0.Add(-2*time.Minute))}, []time.Duration{0}, pollLimit, 1},
		{"a full page stops at its last row", []ports.NotificationRecord{row(1, "x", "u1", "t", "pack", t0.Add(-2*time.Minute)), row(2, "y", "u1", "t", "pack", t0.Add(-2*time.Minute))},
			[]time.Duration{0}, 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newLedger(t0.Add(-time.Hour))
			s := l.register("u1", 10)
			l.subscribe(s, "ship", nil, t0)
			for _, d := range c.reads {
				_, m, _ := l.query(t0.Add(d), false, 3, c.limit)
				l.pick(c.rows, m, c.limit, t0.Add(d))
			}
			if l.cur.at != c.want {
				t.Fatalf("cursor %d, want %d", l.cur.at, c.want)
			}
		})
	}
}

// A pushed row is never read again: the cursor passes it from the pushed
// list once settled; a refused push sends the cursor back and is forgotten.
func TestLedgerPushedRowsAndRefusals(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	s := l.register("u1", 10)
	l.subscribe(s, "ship", nil, t0)
	ps, _ := pickAll(l, []ports.NotificationRecord{row(1, "a", "u1", "t", "ship", t0), row(2, "b", "u1", "t", "ship", t0)}, t0)
	if len(ps) != 2 {
		t.Fatalf("pushes %v", pushedIDs(ps))
	}
	_, m, _ := l.query(t0.Add(6*time.Second), false, 3, pollLimit)
	l.pick(nil, m, pollLimit, t0.Add(6*time.Second)) // the rows are leased: the read finds none
	if l.cur.at != 2 {
		t.Fatalf("cursor %d, want past both pushed rows", l.cur.at)
	}
	ps, _ = pickAll(l, []ports.NotificationRecord{row(3, "c", "u1", "t", "ship", t0.Add(-2*time.Minute))}, t0.Add(7*time.Second))
	if l.cur.at != 3 {
		t.Fatalf("cursor %d", l.cur.at)
	}
	l.refused(ps, readMark{after: 2})
	if l.cur.at != 2 || len(l.sessions[s].inFlight) != 2 {
		t.Fatalf("after a refusal: cursor %d, in flight %v", l.cur.at, l.sessions[s].inFlight)
	}
	l.leaseFailed(readMark{after: 1})
	if l.cur.at != 1 {
		t.Fatalf("after a failed lease: cursor %d", l.cur.at)
	}
}

// A rescan while a read is out (a new subscription) wins: the read does
// not move the cursor.
func TestLedgerRescanDuringARead(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	s := l.register("u1", 10)
	l.subscribe(s, "ship", nil, t0)
	l.setCursor(5)
	_, m, _ := l.query(t0, false, 3, pollLimit)
	l.subscribe(s, "pack", nil, t0) // rescan
	r := l.pick([]ports.NotificationRecord{row(9, "x", "u1", "t", "nope", t0.Add(-time.Hour))}, m, pollLimit, t0)
	if l.cur.at != 0 || !r.advanced {
		t.Fatalf("cursor %d advanced %v", l.cur.at, r.advanced)
	}
}

// Leased: only what the log granted is pushed; a pick whose session closed
// is released; a row pushed under a running lease is not picked again.
func TestLedgerLeased(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	a := l.register("u1", 10)
	b := l.register("u1", 10)
	l.subscribe(a, "ship", nil, t0)
	l.subscribe(b, "ship", nil, t0)
	rows := []ports.NotificationRecord{row(1, "x", "u1", "t", "ship", t0), row(2, "y", "u1", "t", "ship", t0), row(3, "z", "u1", "t", "ship", t0)}
	_, m, _ := l.query(t0, false, 3, pollLimit)
	r := l.pick(rows, m, pollLimit, t0)
	closed := r.picks[1].to
	l.close(closed, t0)
	ps, release, _ := l.leased(r, []string{"x", "y"}, t0, t0.Add(time.Minute)) // z: another replica leased it
	if len(ps) != 1 || ps[0].n.ID != "x" || !slices.Equal(release, []string{"y"}) {
		t.Fatalf("pushes %s release %v", pushedIDs(ps), release)
	}
	// x is in flight: a stale read that still finds it leaves it alone.
	_, m, _ = l.query(t0, false, 3, pollLimit)
	if r := l.pick(rows[:1], m, pollLimit, t0); len(r.picks) != 0 {
		t.Fatalf("picked a row in flight: %v", r.picks)
	}
}

// An explicit unsubscribe drops the session's pushes of that key (not
// those another of its keys wants) and ends the claim, unless another
// session of the principal here still holds the key.
func TestLedgerUnsubscribe(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	a, b := l.register("u1", 10), l.register("u1", 10)
	l.subscribe(a, "ship", nil, t0)
	l.subscribe(a, "global", nil, t0)
	l.subscribe(b, "ship", nil, t0)
	ship := row(1, "s", "u1", "t", "ship", t0)
	end := row(2, "e", "u1", "t", "global", t0)
	end.Source, end.NotificationType = "thread", "thread.completed"
	_, m, _ := l.query(t0, false, 3, pollLimit)
	r := l.pick([]ports.NotificationRecord{ship, end}, m, pollLimit, t0)
	for i := range r.picks {
		r.picks[i].to = a // both to a, for the test
	}
	l.leased(r, []string{"s", "e"}, t0, t0.Add(time.Minute))
	drop, released := l.unsubscribe(a, "ship", t0.Add(time.Second))
	if !slices.Equal(drop, []string{"s"}) || released {
		t.Fatalf("drop %v released %v: b still holds ship", drop, released)
	}
	if _, ok := l.sessions[a].inFlight["e"]; !ok {
		t.Fatal("the global push was dropped")
	}
	if _, released := l.unsubscribe(b, "ship", t0.Add(2*time.Second)); !released {
		t.Fatal("the last session's unsubscribe keeps the claim")
	}
	if l.claims.covers("u1", "ship", t0.Add(3*time.Second)) {
		t.Fatal("the released claim covers later rows")
	}
}

// Copies: a follower gets every notification of the threads it started
// (joined: from a minute before), outside maxInFlight, not the session
// whose write raised it, and stops following when the thread ends.
func TestLedgerCopies(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	writer, watcher, joiner, other := l.register("u1", 1), l.register("u1", 1), l.register("u2", 1), l.register("u1", 1)
	l.follow(writer, "t", t0)
	l.follow(watcher, "t", t0)
	l.follow(joiner, "t", t0.Add(2*time.Minute))
	_ = other
	old := row(0, "old", "u1", "t", "ship", t0.Add(30*time.Second)) // before the joiner's minute
	ship := row(0, "ship", "u1", "t", "ship", t0.Add(2*time.Minute))
	got := l.published([]ports.NotificationRecord{old, ship}, writer, t0.Add(2*time.Minute))
	var desc []string
	for _, c := range got {
		desc = append(desc, fmt.Sprintf("%s→%d", c.n.ID, c.to))
	}
	if want := fmt.Sprintf("old→%d,ship→%d,ship→%d", watcher, watcher, joiner); strings.Join(desc, ",") != want {
		t.Fatalf("copies %v, want %s", desc, want)
	}
	// The same rows read back later (another replica's change of the
	// thread) are not copied again; a row written there is.
	l.changedElsewhere([]string{"t"})
	q, ok := l.followQuery(pollLimit)
	if !ok || !slices.Equal(q.Threads, []string{"t"}) || q.AfterSeq != 0 {
		t.Fatalf("follow query %+v %v", q, ok)
	}
	old.Seq, ship.Seq = 1, 2
	there := row(3, "there", "u1", "t", "pack", t0.Add(3*time.Minute))
	copies, more := l.followed(q, []ports.NotificationRecord{old, ship, there}, t0.Add(3*time.Minute))
	if len(copies) != 3 || more { // there → writer, watcher, joiner
		t.Fatalf("copies of a read %+v", copies)
	}
	if _, due := l.followQuery(pollLimit); due {
		t.Fatal("still due after the read")
	}
	// A read that comes before the commit's Published: copied once.
	late := row(4, "late", "u1", "t", "pack", t0.Add(3*time.Minute))
	l.changedElsewhere([]string{"t"})
	q, _ = l.followQuery(pollLimit)
	if copies, _ := l.followed(q, []ports.NotificationRecord{late}, t0.Add(3*time.Minute)); len(copies) != 3 {
		t.Fatalf("copies of the read %v", copies)
	}
	late.Seq = 0
	if again := l.published([]ports.NotificationRecord{late}, writer, t0.Add(3*time.Minute)); len(again) != 0 {
		t.Fatalf("copied again at commit: %v", again)
	}
	end := row(0, "end", "u1", "t", "global", t0.Add(4*time.Minute))
	end.Source, end.NotificationType = "thread", "thread.completed"
	if got := l.published([]ports.NotificationRecord{end}, 0, t0.Add(4*time.Minute)); len(got) != 3 {
		t.Fatalf("copies of the end %v", got)
	}
	if len(l.follows) != 0 || len(l.sessions[watcher].follows) != 0 {
		t.Fatalf("an ended thread is still followed: %v", l.follows)
	}
	if len(l.sessions[watcher].inFlight) != 0 {
		t.Fatal("a copy took a place in maxInFlight")
	}
}

func TestLedgerFollowsAreBounded(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	s := l.register("u1", 10)
	for i := range maxFollows + 5 {
		l.follow(s, fmt.Sprint("t", i), t0)
	}
	if n := len(l.sessions[s].follows); n != maxFollows || len(l.follows) != maxFollows || l.sessions[s].followSet["t0"] {
		t.Fatalf("follows %d, threads %d", n, len(l.follows))
	}
	l.close(s, t0)
	if len(l.follows) != 0 {
		t.Fatalf("a closed session's follows remain: %d", len(l.follows))
	}
}

// A claim made on another replica that arrives after a session of the
// principal here subscribed to the key makes the rows it holds eligible
// and has the log read again for them (TestReplicasHeldNotifications
// failed 2 times in 24 under load when the broadcast came late).
func TestLedgerRemoteClaimAfterTheSubscription(t *testing.T) {
	t.Parallel()
	subAt := t0.Add(time.Hour)
	l := newLedger(t0)
	s := l.register("u1", 10)
	l.subscribe(s, "ship", []string{"step.success"}, subAt)
	delete(l.claims, claimKey{"u1", "ship"}) // no claim here before
	held := row(1, "n", "u1", "t1", "ship", subAt.Add(-10*time.Minute))
	if l.eligible(l.sessions[s], held) {
		t.Fatal("an old row is eligible before any claim")
	}
	l.setCursor(7) // the log read past the row
	if !l.remoteClaim("u1", "ship", subAt.Add(-20*time.Minute)) {
		t.Fatal("remoteClaim did not ask for the log to be read again")
	}
	if l.cur.at != 0 {
		t.Fatalf("cursor at %d after the claim, want 0 (read again)", l.cur.at)
	}
	if !l.eligible(l.sessions[s], held) {
		t.Fatal("the row raised under the remote claim is not eligible")
	}
	if l.remoteClaim("u1", "ship", subAt.Add(-15*time.Minute)) {
		t.Fatal("a claim beginning after the one that lasts asked for a rescan")
	}
	if l.remoteClaim("u2", "ship", subAt.Add(-20*time.Minute)) {
		t.Fatal("a claim of a principal with no session here asked for a rescan")
	}

	// The usual order: the session's own subscription claimed the key here
	// at subAt, then the other replica's earlier claim arrives.
	l = newLedger(t0)
	s = l.register("u1", 10)
	l.subscribe(s, "ship", []string{"step.success"}, subAt)
	if l.eligible(l.sessions[s], held) {
		t.Fatal("an old row is eligible under a claim made after it")
	}
	l.setCursor(7)
	if !l.remoteClaim("u1", "ship", subAt.Add(-20*time.Minute)) || l.cur.at != 0 {
		t.Fatalf("an earlier remote claim did not have the log read again (cursor %d)", l.cur.at)
	}
	if !l.eligible(l.sessions[s], held) {
		t.Fatal("the row raised under the earlier remote claim is not eligible")
	}
	if l.remoteClaim("u1", "ship", subAt.Add(-5*time.Minute)) {
		t.Fatal("a later remote claim asked for a rescan")
	}
}

func TestClaimTable(t *testing.T) {
	t.Parallel()
	c := claimTable{}
	if !c.claim("u", "k", t0) || c.claim("u", "k", t0.Add(time.Minute)) {
		t.Fatal("a claim starts once while it lasts")
	}
	if !c.covers("u", "k", t0.Add(time.Hour)) || c.covers("u", "k", t0.Add(-time.Minute)) {
		t.Fatal("covers")
	}
	if !c.release("u", "k", t0.Add(2*time.Hour)) || c.release("u", "k", t0.Add(3*time.Hour)) {
		t.Fatal("release")
	}
	if !c.covers("u", "k", t0.Add(time.Hour)) || c.covers("u", "k", t0.Add(2*time.Hour)) {
		t.Fatal("a released claim covers what was raised while it lasted")
	}
	if !c.claim("u", "k", t0.Add(4*time.Hour)) || c.covers("u", "k", t0.Add(time.Hour)) {
		t.Fatal("a new claim after a release starts afresh")
	}
	c.forget(t0.Add(5 * time.Hour))
	if len(c) != 0 {
		t.Fatal("forget")
	}
}

// A burst is split into notes under the broadcast's payload limit; too
// many threads to name become "all".
func TestOutboxEncode(t *testing.T) {
	t.Parallel()
	var o outbox
	var ids []string
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("%036d", i))
	}
	o.add(ids, true)
	o.claims = []claimNote{{"u1", "ship"}}
	notes := o.encode("me", t0)
	seen := 0
	for _, p := range notes {
		if len(p) > maxNoteBytes {
			t.Fatalf("note of %d bytes", len(p))
		}
		var n note
		if err := json.Unmarshal([]byte(p), &n); err != nil || n.From != "me" {
			t.Fatalf("note %s: %v", p, err)
		}
		seen += len(n.Threads)
	}
	if seen != 300 || len(notes) < 3 {
		t.Fatalf("%d threads in %d notes", seen, len(notes))
	}
	var big outbox
	for i := range maxNotes * maxNoteBytes / 20 {
		big.add([]string{fmt.Sprintf("%036d", i)}, false)
	}
	notes = big.encode("me", t0)
	var n note
	if len(notes) != 1 || json.Unmarshal([]byte(notes[0]), &n) != nil || !n.All {
		t.Fatalf("a huge burst: %d notes", len(notes))
	}
}

// A thread only its writer follows copies nothing and remembers nothing;
// remembered copies are forgotten after copyMemory.
func TestLedgerCopyMemory(t *testing.T) {
	t.Parallel()
	l := newLedger(t0)
	writer, watcher := l.register("u1", 10), l.register("u1", 10)
	l.follow(writer, "alone", t0)
	l.follow(writer, "shared", t0)
	l.follow(watcher, "shared", t0)
	for i := range 100 {
		l.published([]ports.NotificationRecord{row(0, fmt.Sprint("a", i), "u1", "alone", "s", t0), row(0, fmt.Sprint("s", i), "u1", "shared", "s", t0)}, writer, t0)
	}
	if n, m := len(l.follows["alone"].copied), len(l.follows["shared"].copied); n != 0 || m != 100 {
		t.Fatalf("remembered %d ids of a thread only its writer follows, %d of a shared one", n, m)
	}
	l.forgetCopies(t0.Add(copyMemory + time.Second))
	if m := len(l.follows["shared"].copied); m != 0 {
		t.Fatalf("%d copied ids kept past copyMemory", m)
	}
}
