package contracts_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// payV1 is published: a charge needs an approval first.
const payV1 = `Feature: pay
Version: 1

Rule: Approval
  When step "approval" is submitted
  Then owner must be "reviewer"
  And this step is an entry point

Rule: Charge
  When step "charge" is submitted
  Then owner must be "processor"
  And step "approval" must have succeeded
  And this step is terminal
`

// payDraft drops the approval prerequisite (a charge may start a thread)
// and judges the charge's content.
const payDraft = `Feature: pay
Version: 2

Rule: Approval
  When step "approval" is submitted
  Then owner must be "reviewer"
  And this step is an entry point

Rule: Charge
  When step "charge" is submitted
  Then owner must be "processor"
  And this step is an entry point
  And content "amount" must be a number greater than 0
  And content "currency" must be one of "GBP", "USD", "EUR"
  And this step is terminal
`

// The seeded threads, oldest first: thread i charges amount 0 when i%4 == 0
// and JPY when i%6 == 0; it skips the approval (a recorded violation of
// v1) when i%5 == 0.
const seeded = 24

func amountBad(i int) bool   { return i%4 == 0 }
func currencyBad(i int) bool { return i%6 == 0 }
func noApproval(i int) bool  { return i%5 == 0 }

type replayFixture struct {
	app   contracts.Application
	ids   []string // oldest first
	db    *sqldb.DB
	store *contractstore.Store
}

func seedReplay(t *testing.T, d sqldb.Dialect) replayFixture {
	t.Helper()
	db := sqldbtest.Open(t, d)
	clock := portstest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cs := contractstore.New(db)
	app := contracts.New(contracts.Deps{Store: cs, Threads: threadquery.New(db), Clock: clock})
	admin := as(domain.PrincipalUser, domain.RoleAdmin)
	if _, err := app.Commands.Publish.Handle(admin, contracts.Publish{Source: []byte(payV1)}); err != nil {
		t.Fatal(err)
	}
	th := threads.New(threadstore.New(db), cs, clock, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	cmd := th.Application().Commands
	f := replayFixture{app: app, db: db, store: cs}
	for i := 0; i < seeded; i++ {
		clock.Advance(time.Minute)
		r, err := cmd.StartThread.Handle(admin, threads.StartThreadInput{Contract: "pay", Role: "reviewer"})
		if err != nil {
			t.Fatal(err)
		}
		f.ids = append(f.ids, r.ID)
		if !noApproval(i) {
			clock.Advance(time.Second)
			if _, err := cmd.RecordStep.Handle(admin, threads.RecordStepInput{ThreadID: r.ID, Role: "reviewer", StepName: "approval",
				Status: "success", IdempotencyKey: "a", Context: map[string]string{"reference": fmt.Sprint("R-", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cmd.JoinThread.Handle(admin, threads.JoinInput{ThreadID: r.ID, Role: "processor"}); err != nil {
			t.Fatal(err)
		}
		amount, currency := "12.50", "EUR"
		if amountBad(i) {
			amount = "0"
		}
		if currencyBad(i) {
			currency = "JPY"
		}
		clock.Advance(time.Second)
		if _, err := cmd.RecordStep.Handle(admin, threads.RecordStepInput{ThreadID: r.ID, Role: "processor", StepName: "charge",
			Status: "success", IdempotencyKey: "c", Context: map[string]string{"amount": amount, "currency": currency}}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// expected is the replay of the draft over the newest n seeded threads,
// evaluated directly from how they were seeded.
type expected struct {
	refused, nowPass, newlyFailing, recordedViolated, amount, currency int
	amountEx, newlyEx                                                  []string
}

func expect(f replayFixture, n int) expected {
	var e expected
	for i := seeded - 1; i >= seeded-n; i-- {
		id := f.ids[i]
		bad := amountBad(i) || currencyBad(i)
		if bad {
			e.refused++
		}
		if amountBad(i) {
			e.amount++
			if len(e.amountEx) < domain.DefaultReplayExamples {
				e.amountEx = append(e.amountEx, id)
			}
		}
		if currencyBad(i) {
			e.currency++
		}
		switch {
		case noApproval(i):
			e.recordedViolated++
			if !bad {
				e.nowPass++
			}
		case bad:
			e.newlyFailing++
			if len(e.newlyEx) < domain.DefaultReplayExamples {
				e.newlyEx = append(e.newlyEx, id)
			}
		}
	}
	return e
}

func TestReplay(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := seedReplay(t, d)
			viewer := as(domain.PrincipalUser, domain.RoleViewer)
			for _, n := range []int{seeded, 10, 100} {
				r, err := f.app.Queries.Replay.Handle(viewer, contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft), Threads: n})
				if err != nil {
					t.Fatal(err)
				}
				judged := min(n, seeded)
				e := expect(f, judged)
				tl := r.Tally
				got := []int{tl.Threads, tl.Refused, tl.Violated, tl.Passed, tl.RecordedViolated, tl.NowPass, tl.NewlyFailing}
				want := []int{judged, e.refused, 0, judged - e.refused, e.recordedViolated, e.nowPass, e.newlyFailing}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("n=%d: threads, refused, violated, passed, recorded violated, now pass, newly failing = %v, want %v", n, got, want)
				}
				if !r.Complete || r.Stopped != "" || r.Requested != n || r.DraftVersion != 2 || r.Format != domain.ContractFormatGherkin {
					t.Fatalf("n=%d: %+v", n, r)
				}
				if len(r.Rules) != 2 {
					t.Fatalf("n=%d rules %+v", n, r.Rules)
				}
				amount := r.Rules[0]
				if amount.Step != "charge" || amount.Field != "amount" || amount.Rule != "gt" || amount.Type != "content_rule_failed" ||
					amount.Outcome != domain.ReplayRefused || amount.Threads != e.amount || !reflect.DeepEqual(amount.Examples, e.amountEx) {
					t.Fatalf("n=%d amount rule %+v, want %d threads, examples %v", n, amount, e.amount, e.amountEx)
				}
				if cur := r.Rules[1]; cur.Field != "currency" || cur.Rule != "one_of" || cur.Threads != e.currency {
					t.Fatalf("n=%d currency rule %+v, want %d threads", n, cur, e.currency)
				}
				if !reflect.DeepEqual(tl.NewlyFailingExamples, e.newlyEx) {
					t.Fatalf("n=%d newly failing examples %v, want %v", n, tl.NewlyFailingExamples, e.newlyEx)
				}
				if len(r.Versions) != 1 || r.Versions[0] != (contracts.ReplayVersion{Version: 1, Threads: judged}) || r.RowsRead < judged {
					t.Fatalf("n=%d versions %+v rows %d", n, r.Versions, r.RowsRead)
				}
			}
			// Replaying the published version itself: the threads recorded
			// as violated are violated again (a charge without approval
			// starts the thread and misses its prerequisite), nothing is
			// refused.
			r, err := f.app.Queries.Replay.Handle(viewer, contracts.ReplayRequest{Name: "pay", Source: []byte(payV1)})
			if err != nil {
				t.Fatal(err)
			}
			e := expect(f, seeded)
			if r.Requested != contracts.DefaultReplayThreads || r.Tally.Violated != e.recordedViolated || r.Tally.Refused != 0 ||
				r.Tally.NowPass != 0 || r.Tally.NewlyFailing != 0 || len(r.Rules) != 2 || r.Rules[0].Type != domain.IssueInvalidEntryPoint ||
				r.Rules[1].Type != domain.IssueMissingDependency || r.Rules[1].Threads != e.recordedViolated {
				t.Fatalf("published version: %+v %+v", r.Tally, r.Rules)
			}
		})
	}
}

// steppingClock moves on by step at every reading.
type steppingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// A replay that reaches its deadline or its row budget answers what it
// judged so far, marked incomplete.
func TestReplayLimits(t *testing.T) {
	t.Parallel()
	f := seedReplay(t, sqldb.SQLite)
	viewer := as(domain.PrincipalUser, domain.RoleViewer)
	tq := threadquery.New(f.db)
	// Each reading of the clock moves it 6 s: the first page is read at
	// 6 s, the second check is at 12 s, past the 10 s deadline.
	slow := contracts.New(contracts.Deps{Store: f.store, Threads: tq, Clock: &steppingClock{now: time.Now(), step: 6 * time.Second},
		ReplayLimits: contracts.ReplayLimits{Deadline: 10 * time.Second, PageSize: 4}})
	r, err := slow.Queries.Replay.Handle(viewer, contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete || r.Stopped != contracts.ReplayStoppedDeadline || r.Tally.Threads != 4 || r.Tally.Refused != expect(f, 4).refused {
		t.Fatalf("deadline: complete %v stopped %q judged %d refused %d", r.Complete, r.Stopped, r.Tally.Threads, r.Tally.Refused)
	}
	// A page of 4 threads reads more than 10 rows: the second is not read.
	rows := contracts.New(contracts.Deps{Store: f.store, Threads: tq, Clock: portstest.NewClock(time.Now()),
		ReplayLimits: contracts.ReplayLimits{MaxRows: 10, PageSize: 4}})
	r, err = rows.Queries.Replay.Handle(viewer, contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete || r.Stopped != contracts.ReplayStoppedRows || r.Tally.Threads != 4 || r.RowsRead <= 10 {
		t.Fatalf("rows: complete %v stopped %q judged %d rows %d", r.Complete, r.Stopped, r.Tally.Threads, r.RowsRead)
	}
	// At most 2 steps per thread: the thread is judged on those and counted as truncated.
	short := contracts.New(contracts.Deps{Store: f.store, Threads: tq, Clock: portstest.NewClock(time.Now()),
		ReplayLimits: contracts.ReplayLimits{MaxSteps: 1}})
	r, err = short.Queries.Replay.Handle(viewer, contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft)})
	if err != nil {
		t.Fatal(err)
	}
	withApproval := 0
	for i := 0; i < seeded; i++ {
		if !noApproval(i) {
			withApproval++
		}
	}
	if r.Truncated != withApproval || r.Tally.StepsJudged != seeded {
		t.Fatalf("truncated %d steps judged %d, want %d and %d", r.Truncated, r.Tally.StepsJudged, withApproval, seeded)
	}
}

func TestReplayRefusals(t *testing.T) {
	t.Parallel()
	f := seedReplay(t, sqldb.SQLite)
	viewer := as(domain.PrincipalUser, domain.RoleViewer)
	partyScoped := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalServiceAccount, ID: "sa",
		Role: domain.RoleMember, Scope: domain.ScopeParty})
	for _, tt := range []struct {
		name string
		ctx  context.Context
		req  contracts.ReplayRequest
		code domain.Code
	}{
		{"anonymous", context.Background(), contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft)}, domain.CodeUnauthenticated},
		{"party-scoped service account", partyScoped, contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft)}, domain.CodeForbidden},
		{"unknown contract", viewer, contracts.ReplayRequest{Name: "nope", Source: []byte(payDraft)}, domain.CodeNotFound},
		{"a name no contract has", viewer, contracts.ReplayRequest{Name: "a b", Source: []byte(payDraft)}, domain.CodeNotFound},
		{"invalid draft", viewer, contracts.ReplayRequest{Name: "pay", Source: []byte("Feature: pay\nRule: x\n  When step \"a\" is submitted\n")}, domain.CodeInvalidContract},
		{"a draft of another contract", viewer, contracts.ReplayRequest{Name: "pay", Source: []byte("Feature: other\n" + payDraft[len("Feature: pay\n"):])}, domain.CodeInvalidContract},
		{"too many threads", viewer, contracts.ReplayRequest{Name: "pay", Source: []byte(payDraft), Threads: contracts.MaxReplayThreads + 1}, domain.CodeValidationFailed},
	} {
		_, err := f.app.Queries.Replay.Handle(tt.ctx, tt.req)
		if domain.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	// The draft naming another contract is refused on its Feature line.
	_, err := f.app.Queries.Replay.Handle(viewer, contracts.ReplayRequest{Name: "pay", Source: []byte("Feature: other\n" + payDraft[len("Feature: pay\n"):])})
	if ps := domain.ContractProblems(err); len(ps) != 1 || ps[0].Line != 1 || ps[0].Field != "contract_name" {
		t.Fatalf("problems %+v", ps)
	}
}

// blockingReader holds every page until released, so replays overlap.
type blockingReader struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingReader) ContractThreads(ctx context.Context, _ string, _ *ports.ReplayCursor, _, _ int) ([]ports.ReplayThread, int, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	return nil, 1, nil
}

func err0(_ contracts.ReplayResult, err error) error { return err }

// One replay per caller at a time, and at most Concurrent per replica.
func TestReplayGate(t *testing.T) {
	t.Parallel()
	c, err := domain.ParseContract(contractSrc(1))
	if err != nil {
		t.Fatal(err)
	}
	br := blockingReader{entered: make(chan struct{}), release: make(chan struct{})}
	replay := contracts.NewReplayHandler(portstest.Contracts{"shop": c}, br, portstest.NewClock(time.Now()), contracts.ReplayLimits{Concurrent: 2})
	req := contracts.ReplayRequest{Name: "shop", Source: contractSrc(2)}
	run := func(ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() { _, err := replay.Handle(ctx, req); done <- err }()
		return done
	}
	first := run(as(domain.PrincipalUser, domain.RoleAdmin))
	<-br.entered
	if de := domain.AsError(err0(replay.Handle(as(domain.PrincipalUser, domain.RoleAdmin), req))); de == nil || de.Details["limit"] != "replays_per_caller" {
		t.Fatal("a caller's second replay ran beside its first")
	}
	second := run(as(domain.PrincipalUser, domain.RoleMember))
	<-br.entered
	_, err = replay.Handle(as(domain.PrincipalUser, domain.RoleViewer), req)
	if de := domain.AsError(err); de == nil || de.Code != domain.CodeLimitExceeded || de.Kind != domain.KindRateLimited || de.Details["limit"] != "replays_running" {
		t.Fatalf("third replay on the replica: %v", err)
	}
	close(br.release)
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	// Released: the caller may replay again.
	go func() { <-br.entered }()
	if _, err := replay.Handle(as(domain.PrincipalUser, domain.RoleAdmin), req); err != nil {
		t.Fatal(err)
	}
}
