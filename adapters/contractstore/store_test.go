package contractstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/domain/gherkin"
	"github.com/threadengine/engine/ports"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 11, 22, 1, 2, 3, 123456789, time.UTC)
)

func eachDialect(t *testing.T, fn func(t *testing.T, s *contractstore.Store)) {
	t.Helper()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) { fn(t, contractstore.New(sqldbtest.Open(t, d))) })
}

func source(name string, version int, desc string) []byte {
	return []byte(fmt.Sprintf(`contract_name: %s
version: %d
description: %q
entry_points: [validate]
parties: [checkout, warehouse]
steps:
  - id: validate
    owner: checkout
    timeout: 30s
    business_context: {required: [items], optional: [coupon]}
  - id: ship
    owner: warehouse
transitions:
  - {from: validate, to: ship, max_retries: 2}
terminal_steps: [ship]
validation: {max_duration: 2d, multiple_terminals_severity: major}
`, name, version, desc))
}

func put(t *testing.T, s *contractstore.Store, name string, version int, at time.Time) (domain.Contract, []byte, error) {
	t.Helper()
	src := source(name, version, fmt.Sprintf("%s v%d", name, version))
	c, err := domain.ParseContract(src)
	if err != nil {
		t.Fatalf("ParseContract: %v %v", err, domain.ContractProblems(err))
	}
	return c, src, s.PutContractVersion(ctx, c, src, "user-1", at)
}

func wantKind(t *testing.T, err error, kind domain.Kind, code domain.Code) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != kind || de.Code != code {
		t.Fatalf("error = %v, want %s/%s", err, kind, code)
	}
}

func TestPutAndGet(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		c1, src1, err := put(t, s, "order_flow", 1, t0)
		if err != nil {
			t.Fatalf("put v1: %v", err)
		}
		got, err := s.GetContract(ctx, "order_flow", 0)
		if err != nil {
			t.Fatalf("GetContract latest: %v", err)
		}
		if !reflect.DeepEqual(got, c1) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, c1)
		}
		c3, src3, err := put(t, s, "order_flow", 3, t0.Add(time.Hour))
		if err != nil {
			t.Fatalf("put v3 (gaps are allowed): %v", err)
		}
		if got, _ := s.GetContract(ctx, "order_flow", 0); !reflect.DeepEqual(got, c3) {
			t.Errorf("latest = v%d, want v3", got.Version)
		}
		if got, _ := s.GetContract(ctx, "order_flow", 1); !reflect.DeepEqual(got, c1) {
			t.Errorf("pinned v1 = %+v", got)
		}
		src, sum, err := s.GetContractSource(ctx, "order_flow", 1)
		if err != nil || string(src) != string(src1) {
			t.Fatalf("source v1 = %q, %v", src, err)
		}
		want := ports.ContractSummary{Name: "order_flow", Version: 1, Description: "order_flow v1", StepCount: 2,
			CreatedBy: "user-1", CreatedAt: t0.Truncate(time.Microsecond), LatestVersion: 3,
			SourceFormat: domain.ContractFormatYAML, ContentHash: c1.ContentHash()}
		if sum != want {
			t.Errorf("summary v1 = %+v, want %+v", sum, want)
		}
		src, sum, err = s.GetContractSource(ctx, "order_flow", 0)
		if err != nil || string(src) != string(src3) || sum.Version != 3 || sum.LatestVersion != 3 {
			t.Errorf("latest source = %d %+v %v", len(src), sum, err)
		}
	})
}

// TestTextRoundTrip stores characters JSON and JSONB treat specially.
func TestTextRoundTrip(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		src := []byte("contract_name: text\nversion: 1\ndescription: \"Zürich ✓ <b>&amp; \\\"q\\\" \\t 😀\"\nentry_points: [\"étape 1\"]\nsteps: [{id: \"étape 1\", business_context: {required: [\"clé\"]}}]\n")
		c, err := domain.ParseContract(src)
		if err != nil {
			t.Fatalf("%v %v", err, domain.ContractProblems(err))
		}
		if err := s.PutContractVersion(ctx, c, src, "u", t0); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetContract(ctx, "text", 1)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip\n got %+v\nwant %+v (%v)", got, c, err)
		}
		back, _, err := s.GetContractSource(ctx, "text", 1)
		if err != nil || string(back) != string(src) {
			t.Fatalf("source = %q, %v", back, err)
		}
	})
}

func TestVersionMustIncrease(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		if _, _, err := put(t, s, "c", 2, t0); err != nil {
			t.Fatal(err)
		}
		_, _, err := put(t, s, "c", 2, t0)
		wantKind(t, err, domain.KindConflict, domain.CodeContractVersionConflict)
		if de := domain.AsError(err); de.Details["latestVersion"] != 2 {
			t.Errorf("details = %v", de.Details)
		}
		_, _, err = put(t, s, "c", 1, t0)
		wantKind(t, err, domain.KindConflict, domain.CodeContractVersionConflict)
		// Another contract's versions are independent.
		if _, _, err := put(t, s, "d", 1, t0); err != nil {
			t.Fatalf("other contract v1: %v", err)
		}
		vs, err := s.ListContractVersions(ctx, "c")
		if err != nil || len(vs) != 1 {
			t.Fatalf("versions after rejected uploads = %+v, %v", vs, err)
		}
	})
}

func TestNotFound(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		_, err := s.GetContract(ctx, "nope", 0)
		wantKind(t, err, domain.KindNotFound, domain.CodeNotFound)
		if _, _, err := put(t, s, "yes", 1, t0); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetContract(ctx, "yes", 2)
		wantKind(t, err, domain.KindNotFound, domain.CodeNotFound)
		_, _, err = s.GetContractSource(ctx, "yes", 5)
		wantKind(t, err, domain.KindNotFound, domain.CodeNotFound)
		_, err = s.ListContractVersions(ctx, "nope")
		wantKind(t, err, domain.KindNotFound, domain.CodeNotFound)
	})
}

func TestLists(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		if l, err := s.ListContracts(ctx); err != nil || len(l) != 0 {
			t.Fatalf("empty list = %+v, %v", l, err)
		}
		for _, p := range []struct {
			name string
			v    int
		}{{"zeta", 1}, {"alpha", 1}, {"alpha", 2}, {"zeta", 5}, {"alpha", 7}} {
			if _, _, err := put(t, s, p.name, p.v, t0.Add(time.Duration(p.v)*time.Minute)); err != nil {
				t.Fatalf("put %s v%d: %v", p.name, p.v, err)
			}
		}
		l, err := s.ListContracts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range l {
			got = append(got, fmt.Sprintf("%s:%d/%d", c.Name, c.Version, c.LatestVersion))
		}
		if want := []string{"alpha:7/7", "zeta:5/5"}; !reflect.DeepEqual(got, want) {
			t.Errorf("ListContracts = %v, want %v", got, want)
		}
		vs, err := s.ListContractVersions(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		for _, c := range vs {
			got = append(got, fmt.Sprintf("%d/%d %s %s", c.Version, c.LatestVersion, c.Description, c.CreatedAt.Format(time.RFC3339Nano)))
		}
		want := []string{
			"7/7 alpha v7 2026-11-22T01:09:03.123456Z",
			"2/7 alpha v2 2026-11-22T01:04:03.123456Z",
			"1/7 alpha v1 2026-11-22T01:03:03.123456Z",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ListContractVersions = %v, want %v", got, want)
		}
	})
}

// TestConcurrentUploads races uploads of the same new contract: exactly one
// upload of each version wins and the others get a conflict, never an
// internal error.
func TestConcurrentUploads(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, _, errs[i] = put(t, s, "race", 1, t0)
			}(i)
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case domain.KindOf(err) != domain.KindConflict:
				t.Errorf("loser got %v, want a conflict", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d uploads of version 1 succeeded, want exactly 1", wins)
		}
	})
}

const gherkinV1 = `Feature: pay
Version: %d
Rule: Approve
  When step "approval" is submitted
  Then owner must be "reviewer"
Rule: Charge
  When step "charge" is submitted
  Then owner must be "processor"
  And step "approval" must have succeeded
  And content "amount" must be a number greater than %s
`

func gherkinVersion(t *testing.T, version int, bound string) ports.NewContractVersion {
	t.Helper()
	src := []byte(fmt.Sprintf(gherkinV1, version, bound))
	res, err := gherkin.Compile(src, nil)
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("compile: %v %v", res.Problems, err)
	}
	return ports.NewContractVersion{Contract: res.Contract, Source: src, SourceFormat: domain.ContractFormatGherkin,
		ContentHash: res.Contract.ContentHash(), CreatedBy: "u", At: t0}
}

// A Gherkin version keeps its source and format; an update needs an
// existing contract, a higher version and changed content.
func TestPublishGherkinAndUpdate(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *contractstore.Store) {
		v := gherkinVersion(t, 1, "0")
		v.Update = true
		wantKind(t, s.PublishContractVersion(ctx, v), domain.KindNotFound, domain.CodeNotFound)
		v.Update = false
		if err := s.PublishContractVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
		src, sum, err := s.GetContractSource(ctx, "pay", 0)
		if err != nil || string(src) != string(v.Source) || sum.SourceFormat != domain.ContractFormatGherkin || sum.ContentHash != v.ContentHash {
			t.Fatalf("stored %q %+v %v", src, sum, err)
		}
		got, err := s.GetContract(ctx, "pay", 1)
		if err != nil || !reflect.DeepEqual(got, v.Contract) {
			t.Fatalf("round trip\n got %+v\nwant %+v (%v)", got, v.Contract, err)
		}
		same := gherkinVersion(t, 2, "0")
		same.Update = true
		wantKind(t, s.PublishContractVersion(ctx, same), domain.KindConflict, domain.CodeContractUnchanged)
		old := gherkinVersion(t, 1, "5")
		old.Update = true
		wantKind(t, s.PublishContractVersion(ctx, old), domain.KindConflict, domain.CodeContractVersionConflict)
		changed := gherkinVersion(t, 5, "5")
		changed.Update = true
		if err := s.PublishContractVersion(ctx, changed); err != nil {
			t.Fatalf("update: %v", err)
		}
		if l, err := s.ListContractVersions(ctx, "pay"); err != nil || len(l) != 2 || l[0].Version != 5 || l[0].SourceFormat != domain.ContractFormatGherkin {
			t.Errorf("versions %+v %v", l, err)
		}
		// The same content is accepted by a plain publish (POST), as YAML
		// uploads always were.
		if err := s.PublishContractVersion(ctx, gherkinVersion(t, 6, "5")); err != nil {
			t.Errorf("publish unchanged without update: %v", err)
		}
	})
}

// Rows stored before content hashes were kept are compared by the hash of
// their definition.
func TestUnchangedAgainstOldRows(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		s := contractstore.New(db)
		if err := s.PublishContractVersion(ctx, gherkinVersion(t, 1, "0")); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `UPDATE contract_versions SET content_hash = ''`); err != nil {
			t.Fatal(err)
		}
		v := gherkinVersion(t, 2, "0")
		v.Update = true
		wantKind(t, s.PublishContractVersion(ctx, v), domain.KindConflict, domain.CodeContractUnchanged)
		if _, sum, _ := s.GetContractSource(ctx, "pay", 1); sum.ContentHash != v.ContentHash {
			t.Errorf("hash of an old row = %q", sum.ContentHash)
		}
	})
}
