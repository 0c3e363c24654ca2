package threads

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

// hookClassifier is a classifier port that answers "yes" when the payment
// the facts carry has the amount it approves (any amount when approve is
// "*"), after running before (a concurrent writer committing while the
// classifier thinks).
type hookClassifier struct {
	approve string
	before  func(call int)

	mu    sync.Mutex
	calls int
}

func (c *hookClassifier) Classify(_ context.Context, q ports.ClassifyRequest) (ports.ClassifyAnswer, error) {
	c.mu.Lock()
	c.calls++
	n := c.calls
	c.mu.Unlock()
	if c.before != nil {
		c.before(n)
	}
	facts := q.State.(domain.SemanticFacts)
	if c.approve == "*" || facts.SuccessfulSteps["pay"]["amount"] == c.approve {
		return ports.ClassifyAnswer{Label: domain.SemanticYes, Probability: 0.99}, nil
	}
	return ports.ClassifyAnswer{Label: domain.SemanticNo, Probability: 0.99}, nil
}

func (c *hookClassifier) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// newSemanticFixture is the order contract with ship's note judged by cl
// against pay's amount, a thread k1 started as checkout, paid 10 and (when
// join) joined as warehouse.
func newSemanticFixture(t *testing.T, cl ports.Classifier, join bool) (threadsFixture, context.Context, string) {
	t.Helper()
	// pay may be paid again (pay → pay) before ship.
	c, err := domain.ParseContract([]byte(strings.Replace(orderYAML, "    to: ship\n", "    to: [pay, ship]\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Steps {
		switch c.Steps[i].Name {
		case "pay":
			c.Steps[i].Required = []string{"amount"}
		case "ship":
			c.Steps[i].Required = []string{"note"}
			c.Steps[i].SemanticRules = []domain.SemanticRule{{Field: "note", Question: "Does the note suit the payment?",
				ContextSteps: []string{"pay"}}}
		}
	}
	store := newFakeThreads()
	clock := portstest.NewClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	m := New(store, portstest.Contracts{"order": c}, clock, []byte("secret"), nil)
	m.SetOptions(Options{Classifier: cl})
	f := threadsFixture{threads: m, store: store, clock: clock}
	key := as("k1", domain.RoleMember)
	th, err := m.Application().Commands.StartThread.Handle(key, StartThreadInput{Contract: "order", Role: "checkout"})
	if err != nil {
		t.Fatal(err)
	}
	f.payAmount(t, key, th.ID, "pay", "10")
	if join {
		f.joinWarehouse(t, key, th.ID)
	}
	return f, key, th.ID
}

func (f threadsFixture) payAmount(t *testing.T, key context.Context, th, idem, amount string) {
	t.Helper()
	in := stepIn(th, "checkout", "pay", "success")
	in.IdempotencyKey, in.Context = idem, map[string]string{"amount": amount}
	if _, err := f.threads.Application().Commands.RecordStep.Handle(key, in); err != nil {
		t.Fatalf("pay %s: %v", amount, err)
	}
}

func (f threadsFixture) joinWarehouse(t *testing.T, key context.Context, th string) {
	t.Helper()
	if _, err := f.threads.Application().Commands.JoinThread.Handle(key, JoinInput{ThreadID: th, Role: "warehouse"}); err != nil {
		t.Fatalf("join as warehouse: %v", err)
	}
}

func shipIn(th string) RecordStepInput {
	in := stepIn(th, "warehouse", "ship", "success")
	in.Context = map[string]string{"note": "for the 10 paid"}
	return in
}

func (f threadsFixture) shipped(th string) bool {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	for _, a := range f.store.acts[th] {
		if a.StepName == "ship" {
			return true
		}
	}
	return false
}

// A payment recorded while the classifier judges ship's note against the
// previous one: the verdict no longer holds under the row lock, so ship is
// judged again against the new payment (and refused), never appended on
// the old answer.
func TestSemanticVerdictIsJudgedAgainWhenItsContextStepSucceedsMeanwhile(t *testing.T) {
	t.Parallel()
	cl := &hookClassifier{approve: "10"}
	f, key, th := newSemanticFixture(t, cl, true)
	cl.before = func(call int) {
		if call == 1 {
			f.payAmount(t, key, th, "pay-2", "99")
		}
	}
	_, err := f.threads.Application().Commands.RecordStep.Handle(key, shipIn(th))
	if domain.CodeOf(err) != domain.CodeContentRuleFailed {
		t.Fatalf("ship judged on a payment replaced meanwhile: %v", err)
	}
	if f.shipped(th) || cl.count() != 2 {
		t.Fatalf("shipped %v after %d judgements, want refused after 2", f.shipped(th), cl.count())
	}
	// Nothing changing meanwhile, a note the classifier approves is appended
	// after one judgement.
	cl.approve = "99"
	if _, err := f.threads.Application().Commands.RecordStep.Handle(key, shipIn(th)); err != nil || !f.shipped(th) || cl.count() != 3 {
		t.Fatalf("ship on a steady thread: %v (shipped %v, %d judgements)", err, f.shipped(th), cl.count())
	}
}

// A thread whose context step keeps succeeding under every verdict: the
// submission is judged maxSemanticJudgements times, then refused with a
// retryable error, nothing appended.
func TestSemanticVerdictStaleEveryTimeIsARetryableRefusal(t *testing.T) {
	t.Parallel()
	cl := &hookClassifier{approve: "*"}
	f, key, th := newSemanticFixture(t, cl, true)
	cl.before = func(call int) {
		f.payAmount(t, key, th, "pay-"+strconv.Itoa(call), "a"+strconv.Itoa(call)) // a new latest payment each time
	}
	_, err := f.threads.Application().Commands.RecordStep.Handle(key, shipIn(th))
	if de := domain.AsError(err); de == nil || de.Code != domain.CodeUnavailable || de.Kind.RetryAfter() == 0 {
		t.Fatalf("ship on a thread moving under every verdict: %v", err)
	}
	if f.shipped(th) || cl.count() != maxSemanticJudgements {
		t.Fatalf("shipped %v after %d judgements, want refused after %d", f.shipped(th), cl.count(), maxSemanticJudgements)
	}
}

// A writer that became a party between the gate's read and the append (the
// gate skipped it: RecordStep was expected to refuse it) is judged, not
// appended unjudged.
func TestSemanticGateJudgesAWriterThatJoinedMeanwhile(t *testing.T) {
	t.Parallel()
	cl := &hookClassifier{approve: "other"}
	f, key, th := newSemanticFixture(t, cl, false)
	f.store.mu.Lock()
	f.store.afterReadGrants = func() { f.joinWarehouse(t, key, th) }
	f.store.mu.Unlock()
	_, err := f.threads.Application().Commands.RecordStep.Handle(key, shipIn(th))
	if domain.CodeOf(err) != domain.CodeContentRuleFailed || f.shipped(th) || cl.count() != 1 {
		t.Fatalf("ship by a writer that joined meanwhile: %v (shipped %v, %d judgements)", err, f.shipped(th), cl.count())
	}
}
