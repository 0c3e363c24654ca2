package graphqltest

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/app/threads"
)

// Seeded describes one seeded thread.
type Seeded struct {
	ID       string
	RefKey   string
	RefValue string
	StepName string // the first step's name
	StepKey  string // the first step's idempotency key
	StepID   string // the first step's latest attempt id
}

// SeedThread records a thread through the write use cases (so rows and the
// hash chain are exactly what ingestion writes): steps step-0…step-(n-1),
// step-0 failing once and then succeeding (two attempts), each step with one
// sub-step, refs {orderId: "O-<tag>"}. ctx must carry a principal that may
// write threads.
func SeedThread(ctx context.Context, th *threads.Module, tag string, steps int) (Seeded, error) {
	t, err := th.Application().Commands.StartThread.Handle(ctx, threads.StartThreadInput{Refs: map[string]string{"orderId": "O-" + tag}, Label: "order " + tag})
	if err != nil {
		return Seeded{}, err
	}
	s := Seeded{ID: t.ID, RefKey: "orderId", RefValue: "O-" + tag, StepName: "step-0", StepKey: "k0"}
	start := time.Now().UTC().Add(-time.Minute)
	record := func(i int, status string, meta map[string]any) (threads.StepResult, error) {
		fin := start.Add(time.Duration(i+1) * 250 * time.Millisecond)
		return th.Application().Commands.RecordStep.Handle(ctx, threads.RecordStepInput{ThreadID: t.ID, StepName: fmt.Sprintf("step-%d", i),
			IdempotencyKey: fmt.Sprintf("k%d", i), Status: status,
			Context:  map[string]string{"orderId": "O-" + tag, "n": fmt.Sprint(i)},
			Metadata: meta, StartedAt: &start, FinishedAt: &fin,
			SubSteps: []threads.SubStepInput{{Name: fmt.Sprintf("sub-%d", i), Status: "success",
				Payload: map[string]any{"i": i}, RecordedAt: fin}}})
	}
	for i := 0; i < steps; i++ {
		if i == 0 {
			if _, err := record(0, "failed", map[string]any{"error": "card declined"}); err != nil {
				return Seeded{}, err
			}
		}
		r, err := record(i, "success", nil)
		if err != nil {
			return Seeded{}, err
		}
		if i == 0 {
			s.StepID = r.StepID
		}
	}
	return s, nil
}

// Link adds a linkedThread ref from parent to child.
func Link(ctx context.Context, th *threads.Module, parent, child string) error {
	return th.Application().Commands.AddRefs.Handle(ctx, threads.AddRefsInput{ThreadID: parent, Refs: map[string]string{"linkedThread:" + child: child}})
}

// InsertValidation writes one validation result row directly: contract
// validation needs a contract, which the query tests do not depend on.
func InsertValidation(ctx context.Context, db *sqldb.DB, s Seeded, at time.Time) error {
	issues := `[{"type":"invalid_transition","severity":"critical","message":"step-0 cannot follow nothing","field":"step","expected":"start","actual":"step-0","rule":"transitions"},` +
		`{"type":"missing_optional_field","severity":"info","message":"note is missing","field":"note"}]`
	_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO thread_validations (id, thread_id, step_id, step_name,
 idempotency_key, overall_status, issues, critical_count, warning_count, minor_count, info_count, created_at)
 VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`), uuid.NewString(), s.ID, s.StepID, s.StepName, s.StepKey, "violated", issues,
		1, 0, 0, 1, at.UTC().Truncate(time.Microsecond))
	return err
}
