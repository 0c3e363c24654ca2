package threadquery_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Every reader of validation results reads both stored forms (migration
// 00101, issue 28): a row of thread_validations, and a passed result without
// issues kept as validation_status on its attempt (the form the next release
// writes instead of a row). One attempt here has a violated row, another the
// compact form, a third neither; each read sees exactly one result for each
// of the first two, none for the third.
func TestValidationsReadBothForms(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		store := threadstore.New(db)
		th := threads.New(store, nil, nil, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleAdmin})
		a, err := graphqltest.SeedThread(ctx, th, "a", 2) // step-0 failed, step-0 success, step-1 success
		if err != nil {
			t.Fatal(err)
		}
		if err := graphqltest.InsertValidation(ctx, db, a, time.Now()); err != nil { // a row for step-0's success
			t.Fatal(err)
		}
		var compactID string
		if err := db.GetContext(ctx, &compactID, db.Rebind(`SELECT id FROM thread_activities WHERE thread_id = ? AND step_name = 'step-1'`), a.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE thread_activities SET validation_status = 'passed' WHERE id = ?`), compactID); err != nil {
			t.Fatal(err)
		}
		s := threadquery.New(db)

		// The attempts list: each attempt's result, from either form.
		att, err := s.Attempts(ctx, []string{a.ID}, 10, 0)
		if err != nil || len(att[a.ID]) != 3 {
			t.Fatalf("attempts %+v %v", att, err)
		}
		got := map[string]string{}
		for _, x := range att[a.ID] {
			got[x.ID] = x.Validation
		}
		if got[a.StepID] != "violated" || got[compactID] != "passed" || len(got) != 3 {
			t.Fatalf("attempts' validations %v (row on %s, compact on %s)", got, a.StepID, compactID)
		}
		for id, v := range got {
			if id != a.StepID && id != compactID && v != "" {
				t.Fatalf("an attempt without a result shows %q", v)
			}
		}

		// The thread's validations, newest first: the compact result is a
		// result like a row's, with the attempt's id and time and no issues.
		vs, err := s.Validations(ctx, []string{a.ID}, ports.ValidationFilter{Limit: 10})
		if err != nil || len(vs[a.ID]) != 2 {
			t.Fatalf("validations %+v %v", vs, err)
		}
		var compact *ports.ValidationView
		for i := range vs[a.ID] {
			if vs[a.ID][i].StepID == compactID {
				compact = &vs[a.ID][i]
			}
		}
		if compact == nil || compact.ID != compactID || compact.StepName != "step-1" || compact.IdempotencyKey != "k1" ||
			compact.OverallStatus != "passed" || compact.Issues != "[]" || compact.CriticalCount != 0 || compact.CreatedAt.IsZero() {
			t.Fatalf("the compact result as a validation: %+v", compact)
		}
		for _, c := range []struct {
			f    ports.ValidationFilter
			want string
		}{
			{ports.ValidationFilter{StepName: "step-1", Limit: 10}, compactID},
			{ports.ValidationFilter{StepID: compactID, Limit: 10}, compactID},
			{ports.ValidationFilter{StepName: "step-0", Limit: 10}, a.StepID},
			{ports.ValidationFilter{ValidationType: "invalid_transition", Limit: 10}, a.StepID},
		} {
			vs, err := s.Validations(ctx, []string{a.ID}, c.f)
			if err != nil || len(vs[a.ID]) != 1 || vs[a.ID][0].StepID != c.want {
				t.Fatalf("validations %+v: %+v %v, want the result of %s", c.f, vs, err, c.want)
			}
		}
		counts, err := s.Counts(ctx, []string{a.ID})
		if err != nil || counts[a.ID].Validations != 2 {
			t.Fatalf("counts %+v %v", counts, err)
		}
		k1 := ports.StepKey{ThreadID: a.ID, StepName: "step-1", IdempotencyKey: "k1"}
		k0 := ports.StepKey{ThreadID: a.ID, StepName: "step-0", IdempotencyKey: "k0"}
		latest, err := s.LatestValidations(ctx, []ports.StepKey{k0, k1})
		if err != nil || latest[k1].OverallStatus != "passed" || latest[k1].StepID != compactID || latest[k0].OverallStatus != "violated" {
			t.Fatalf("latest validations %+v %v", latest, err)
		}

		// waitForValidation's read of one attempt's result.
		v, ok, err := store.StepValidation(ctx, a.ID, compactID)
		if err != nil || !ok || v == nil || v.OverallStatus != "passed" || len(issues(v.Issues)) != 0 {
			t.Fatalf("the compact attempt's validation: %+v %v %v", v, ok, err)
		}
		if v, ok, err := store.StepValidation(ctx, a.ID, a.StepID); err != nil || !ok || v == nil || v.OverallStatus != "violated" || len(issues(v.Issues)) != 2 {
			t.Fatalf("the row attempt's validation: %+v %v %v", v, ok, err)
		}
	})
}

// issues is a stored result's issues as the store decodes them.
func issues(v any) []domain.ValidationIssue {
	is, _ := v.([]domain.ValidationIssue)
	return is
}
