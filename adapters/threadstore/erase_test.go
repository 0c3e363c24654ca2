package threadstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/identitystore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/ops"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/app/waits"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

const flowYAML = `contract_name: flow
version: 1
entry_points: [a]
parties: [p]
steps:
  - id: a
    owner: p
    business_context:
      required: [k]
  - id: b
    owner: p
transitions:
  - from: a
    to: b
terminal_steps: [b]
`

// fixedClock is a settable clock.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// eraseFixture is a store with a contract and the app on top of it.
type eraseFixture struct {
	db      *sqldb.DB
	store   *threadstore.Store
	threads *threadsapp.Module
	clock   *fixedClock
	ctx     context.Context
}

func newEraseFixture(t *testing.T, d sqldb.Dialect) *eraseFixture {
	t.Helper()
	db := sqldbtest.Open(t, d)
	c, err := domain.ParseContract([]byte(flowYAML))
	if err != nil {
		t.Fatal(err)
	}
	cs := contractstore.New(db)
	if err := cs.PutContractVersion(context.Background(), c, []byte(flowYAML), "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	f := &eraseFixture{db: db, store: threadstore.New(db), clock: &fixedClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		ctx: authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})}
	f.threads = threadsapp.New(f.store, cs, f.clock, []byte("secret"), nil)
	// A webhook on failed steps: each thread's failed attempt gets an
	// outbox row (webhook_deliveries).
	if _, err := db.Exec(db.Rebind(`INSERT INTO webhooks (id, name, url, secret, event_mask, created_at, updated_at)
 VALUES ('w', 'w', 'http://127.0.0.1:1/', 'whsec_eA==', ?, ?, ?)`), domain.EventStepFailed.Bit(), f.clock.t, f.clock.t); err != nil {
		t.Fatal(err)
	}
	return f
}

// populate starts a contract thread with a row in every thread table:
// refs, the owner's access, its application key, steps (one retried, with
// sub-steps), validations and notifications; end ends it (completed by its
// terminal step).
func (f *eraseFixture) populate(t *testing.T, label string, end bool) domain.Thread {
	t.Helper()
	th, _, err := f.threads.Application().Commands.StartThreadWithKey.Handle(f.ctx, threadsapp.KeyApp, uuid.NewString(), threadsapp.StartThreadInput{Contract: "flow", Role: "p", Label: label,
		Refs: map[string]string{"order": label}, Tags: []string{"web", label}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []threadsapp.RecordStepInput{
		{StepName: "a", Status: "failed", IdempotencyKey: "a1", Context: map[string]string{}},
		{StepName: "a", Status: "success", IdempotencyKey: "a1", Context: map[string]string{"k": "v"},
			SubSteps: []threadsapp.SubStepInput{{Name: "check", Status: "success"}}},
	}
	if end {
		steps = append(steps, threadsapp.RecordStepInput{StepName: "b", Status: "success", IdempotencyKey: "b1", Context: map[string]string{}})
	}
	for i, in := range steps {
		in.ThreadID = th.ID
		if i == 2 {
			in.InvocationID = "inv-b"
		}
		if _, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, in); err != nil {
			t.Fatal(err)
		}
		if i == 1 { // a waitFor grant for b (step_grants)
			if r, err := f.threads.Application().Commands.WaitForPermission.Handle(f.ctx, th.ID, "p", "b", "inv-b", time.Second); err != nil || r.Decision != waits.DecisionAllowed {
				t.Fatalf("grant for b: %+v, %v", r, err)
			}
		}
	}
	// An alert recorded by the sweep (thread_alerts).
	ok, err := f.store.RecordThreadAlert(f.ctx, th.ID, domain.AlertSilent, func(*domain.Thread) (ports.ThreadAlert, bool) {
		return ports.ThreadAlert{Validation: ports.ValidationRecord{ID: uuid.NewString(), StepName: "global",
			OverallStatus: domain.ValidationWarning, CreatedAt: f.clock.t}}, true
	})
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	// A refused step submission (step_refusals).
	if err := f.store.LogRefusal(f.ctx, ports.StepRefusal{ID: uuid.NewString(), ThreadID: th.ID, StepName: "a", PrincipalID: "u1",
		Code: "content_rule_failed", Message: "refused", CreatedAt: f.clock.t}); err != nil {
		t.Fatal(err)
	}
	return th
}

// threadTables lists every table with a thread_id column, from the schema
// itself, so a table added later is checked too.
func threadTables(t *testing.T, db *sqldb.DB) []string {
	t.Helper()
	var names []string
	q := `SELECT table_name FROM information_schema.columns WHERE column_name = 'thread_id' AND table_schema = current_schema() ORDER BY table_name`
	if db.Dialect == sqldb.SQLite {
		q = `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND p.name = 'thread_id' ORDER BY m.name`
	}
	if err := db.Select(&names, q); err != nil {
		t.Fatal(err)
	}
	if len(names) < 7 {
		t.Fatalf("found only %v with a thread_id column", names)
	}
	// The transparency log is append-only: a deleted thread's leaves stay,
	// queued or in the tree (ids and hashes, no content), and a tombstone is
	// added (TestDeletedStepsAreDetectedAndNamed). On SQLite the leaves
	// appended before migration 00099 are in tlog_leaves_v1, later ones
	// listed by thread in tlog_thread_leaves.
	return slices.DeleteFunc(names, func(n string) bool {
		return n == "tlog_leaves" || n == "tlog_leaves_v1" || n == "tlog_thread_leaves" || n == "tlog_pending"
	})
}

// rowsOf counts a thread's rows in every thread table and threads itself.
func rowsOf(t *testing.T, db *sqldb.DB, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range threadTables(t, db) {
		var n int
		if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE thread_id = ?`), id); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	var n int
	if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM threads WHERE id = ?`), id); err != nil {
		t.Fatal(err)
	}
	out["threads"] = n
	return out
}

func wantNoRows(t *testing.T, db *sqldb.DB, id string) {
	t.Helper()
	for table, n := range rowsOf(t, db, id) {
		if n != 0 {
			t.Errorf("%s still holds %d row(s) of deleted thread %s", table, n, id)
		}
	}
}

func wantAllRows(t *testing.T, f *eraseFixture, id string) {
	t.Helper()
	for table, n := range rowsOf(t, f.db, id) {
		if n == 0 {
			t.Errorf("%s lost the rows of kept thread %s", table, id)
		}
	}
	st, err := f.threads.Application().Queries.VerifyIntegrity.Handle(f.ctx, id)
	if err != nil || !st.Verified {
		t.Errorf("kept thread %s no longer verifies: %+v %v", id, st, err)
	}
}

func TestDeleteThreadsRemovesEveryRow(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			f := newEraseFixture(t, d)
			gone := f.populate(t, "gone", true)
			kept := f.populate(t, "kept", true)
			wantAllRows(t, f, gone.ID)

			recs, err := f.store.DeleteThreads(f.ctx, []string{gone.ID, "no-such-thread"})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].ID != gone.ID || recs[0].StepCount() != 3 || recs[0].ContractName != "flow" {
				t.Fatalf("deleted %+v", recs)
			}
			wantNoRows(t, f.db, gone.ID)
			wantNoOrphans(t, f.db)
			wantAllRows(t, f, kept.ID)
			if recs, err := f.store.DeleteThreads(f.ctx, []string{gone.ID}); err != nil || len(recs) != 0 {
				t.Fatalf("second delete %v %v", recs, err)
			}
		})
	}
}

// Retention on both stores with a fake clock: ended threads older than the
// period and active threads idle past their limit are gone with every row;
// the others are intact and their chains still verify.
func TestRetentionSweep(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			f := newEraseFixture(t, d)
			ids := identitystore.New(f.db)
			day := 24 * time.Hour
			var deletedNotice []string
			ret := ops.NewRetention(ops.RetentionDeps{Store: f.store, Settings: ids, Audit: ids, Clock: f.clock,
				NewID: func() string { return uuid.NewString() }, Deleted: func(ids []string) { deletedNotice = append(deletedNotice, ids...) },
				ConfigDays: 30, IdleDays: 90, BatchSize: 2})

			var oldEnded []domain.Thread
			for i := 0; i < 5; i++ { // more than two batches
				oldEnded = append(oldEnded, f.populate(t, fmt.Sprint("old-", i), true))
			}
			oldActive := f.populate(t, "old-active", false)
			f.clock.t = f.clock.t.Add(20 * day)
			recentActive := f.populate(t, "recent-active", false)
			f.clock.t = f.clock.t.Add(15 * day) // old ones ended 35 days ago; recent ones 15
			recentEnded := f.populate(t, "recent-ended", true)

			res, err := ret.Sweeper.Sweep(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Threads != 5 || res.Batches != 3 || len(deletedNotice) != 5 {
				t.Fatalf("sweep %+v, notified %d", res, len(deletedNotice))
			}
			for _, th := range oldEnded {
				wantNoRows(t, f.db, th.ID)
			}
			wantNoOrphans(t, f.db)
			for _, th := range []domain.Thread{oldActive, recentActive, recentEnded} {
				wantAllRows(t, f, th.ID)
			}
			// Nothing more to do.
			if res, err := ret.Sweeper.Sweep(f.ctx); err != nil || res.Threads != 0 {
				t.Fatalf("second sweep %+v %v", res, err)
			}
			// Active threads go only once idle longer than active_idle_days.
			f.clock.t = f.clock.t.Add(60 * day) // old-active idle 95 days, recent-active 75
			if res, err := ret.Sweeper.Sweep(f.ctx); err != nil || res.Threads != 2 {
				t.Fatalf("idle sweep %+v %v", res, err) // old-active and recent-ended (75 days after its end)
			}
			wantNoRows(t, f.db, oldActive.ID)
			wantNoRows(t, f.db, recentEnded.ID)
			wantAllRows(t, f, recentActive.ID)

			// Every thread deleted is audited by the system actor, its id
			// as the target.
			entries, err := ids.ListAudit(f.ctx, ports.AuditFilter{Action: "thread.retention_delete", Limit: 10})
			if err != nil || len(entries) != 7 || entries[0].ActorKind != domain.PrincipalSystem {
				t.Fatalf("audit %+v %v", entries, err)
			}
			for _, th := range append(oldEnded, oldActive, recentEnded) {
				if e, err := ids.ListAudit(f.ctx, ports.AuditFilter{Target: th.ID, Limit: 10}); err != nil || len(e) != 1 ||
					e[0].Action != "thread.retention_delete" {
					t.Fatalf("audit of swept thread %s: %+v %v", th.ID, e, err)
				}
			}

			// The UI override wins over the config; 0 keeps everything.
			admin := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "a", Role: domain.RoleAdmin})
			if v, err := ret.Set.Handle(admin, 0); err != nil || v.ThreadsDays != 0 || v.Source != ops.RetentionFromUI {
				t.Fatalf("set %+v %v", v, err)
			}
			if _, err := ret.Set.Handle(f.ctx, 5); domain.KindOf(err) != domain.KindForbidden {
				t.Fatalf("a member set retention: %v", err)
			}
			if _, err := ret.Set.Handle(admin, -1); domain.KindOf(err) != domain.KindInvalid {
				t.Fatalf("negative days: %v", err)
			}
			ended := f.populate(t, "ended-now", true)
			f.clock.t = f.clock.t.Add(40 * day)
			if _, err := ret.Set.Handle(admin, 0); err != nil {
				t.Fatal(err)
			}
			if res, err := ret.Sweeper.Sweep(f.ctx); err != nil || res.Threads != 1 { // only recent-active, idle 115 days
				t.Fatalf("sweep with override 0: %+v %v", res, err)
			}
			wantAllRows(t, f, ended.ID)
			if v, err := ret.Reset.Handle(admin); err != nil || v.ThreadsDays != 30 || v.Source != ops.RetentionFromConfig {
				t.Fatalf("reset %+v %v", v, err)
			}
			if res, err := ret.Sweeper.Sweep(f.ctx); err != nil || res.Threads != 1 {
				t.Fatalf("sweep after reset: %+v %v", res, err)
			}
			wantNoRows(t, f.db, ended.ID)
			wantNoOrphans(t, f.db)
		})
	}
}

// wantNoOrphans checks that no thread table holds a row of a thread that
// is gone. On PostgreSQL most of these tables have no foreign key to
// threads (migration 00094): the writers' thread row locks and
// DeleteThreads' explicit deletes are what keep this true.
func wantNoOrphans(t *testing.T, db *sqldb.DB) {
	t.Helper()
	for _, table := range threadTables(t, db) {
		var n int
		if err := db.Get(&n, `SELECT COUNT(*) FROM `+table+` c WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = c.thread_id)`); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s holds %d row(s) of threads that are gone", table, n)
		}
	}
}

// Deleting threads while their steps, alerts and grants are being written
// leaves no row behind: each writer either commits before the delete (and
// its rows are deleted with the thread) or finds the thread gone.
func TestDeleteThreadsDuringWritesLeavesNoOrphans(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			f := newEraseFixture(t, d)
			for round := 0; round < 5; round++ {
				th := f.populate(t, fmt.Sprint("busy-", round), false)
				done := make(chan error, 1)
				go func() {
					for i := 0; ; i++ {
						_, err := f.threads.Application().Commands.RecordStep.Handle(f.ctx, threadsapp.RecordStepInput{ThreadID: th.ID,
							StepName: "a", Status: "success", IdempotencyKey: fmt.Sprint("w", i), Context: map[string]string{"k": "v"},
							SubSteps: []threadsapp.SubStepInput{{Name: "check", Status: "success"}}})
						// Other refusals (the contract closing the thread after
						// many attempts) go on until the thread is gone.
						if err != nil && domain.KindOf(err) == domain.KindNotFound {
							done <- err
							return
						}
					}
				}()
				recs, err := f.store.DeleteThreads(f.ctx, []string{th.ID})
				if err != nil || len(recs) != 1 {
					t.Fatalf("delete %v %v", recs, err)
				}
				if err := <-done; domain.KindOf(err) != domain.KindNotFound {
					t.Fatalf("a step on the deleted thread: %v, want not found", err)
				}
				// Every other writer of a thread's rows finds it gone too.
				if _, err := f.store.RecordThreadAlert(f.ctx, th.ID, domain.AlertSilent, func(*domain.Thread) (ports.ThreadAlert, bool) {
					return ports.ThreadAlert{Validation: ports.ValidationRecord{ID: uuid.NewString(), StepName: "global",
						OverallStatus: domain.ValidationWarning, CreatedAt: f.clock.t}}, true
				}); domain.KindOf(err) != domain.KindNotFound {
					t.Fatalf("an alert on the deleted thread: %v, want not found", err)
				}
				wantNoRows(t, f.db, th.ID)
				wantNoOrphans(t, f.db)
			}
		})
	}
}

// A thread whose rows remain cannot be deleted by any other path (by hand):
// on SQLite the foreign keys refuse it, on PostgreSQL the statement guard
// of migration 00094 does.
func TestThreadWithRowsIsNotDeletedByHand(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			f := newEraseFixture(t, d)
			th := f.populate(t, "by-hand", true)
			if _, err := f.db.Exec(f.db.Rebind(`DELETE FROM threads WHERE id = ?`), th.ID); err == nil {
				t.Fatal("a thread with steps was deleted by hand")
			}
			if d == sqldb.Postgres {
				if _, err := f.db.Exec(`TRUNCATE threads CASCADE`); err == nil {
					t.Fatal("threads was truncated with its steps left behind")
				}
			}
			wantAllRows(t, f, th.ID)
			wantNoOrphans(t, f.db)
		})
	}
}

// Each statement of a deletion batch (DeleteThreads: one per table holding
// a thread's rows, then threads, whose foreign keys look into the children
// on SQLite) finds the batch's rows through an index, never by reading a
// whole table: a scan costs every batch the table's size, however few rows
// the batch deletes (webhook_deliveries read the whole outbox before
// migration 00109).
func TestDeleteThreadsStatementsSearchByThread(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		st := threadstore.New(db)
		ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
		tables := append(threadTables(t, db), "threads")
		for _, table := range tables {
			col := "thread_id"
			if table == "threads" {
				col = "id"
			}
			q, args := st.DeleteByThreads(table, col, ids)
			plan := strings.Join(sqldbtest.Explain(t, db, q, args, "enable_seqscan = off"), "\n")
			if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "SCAN ") {
				t.Errorf("%s: the batch's delete reads a whole table:\n%s", table, plan)
			}
		}
	})
}
