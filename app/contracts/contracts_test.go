package contracts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

type auditLog struct {
	mu      sync.Mutex
	entries []ports.AuditEntry
}

func (a *auditLog) RecordAudit(_ context.Context, e ports.AuditEntry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, e)
	return nil
}

type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }

const appContract = `
contract_name: shop
version: %d
entry_points: [a]
steps: [{id: a, owner: svc}, {id: b, owner: svc}]
transitions: [{from: a, to: b}]
terminal_steps: [b]
`

func contractSrc(v int) []byte {
	return []byte(fmt.Sprintf(appContract, v))
}

func as(kind domain.PrincipalKind, role domain.Role) context.Context {
	return authz.WithPrincipal(context.Background(), domain.Principal{Kind: kind, ID: string(role) + "-" + string(kind), Role: role})
}

func newApp(t *testing.T, d sqldb.Dialect, audit ports.Audit) (contracts.Application, fixedClock) {
	clock := fixedClock{now: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)}
	store := contractstore.New(sqldbtest.Open(t, d))
	return contracts.New(contracts.Deps{Store: store, Eraser: store, Clock: clock, Audit: audit, NewID: func() string { return "audit-1" }}), clock
}

func TestContractsUseCases(t *testing.T) {
	t.Parallel()
	audit := &auditLog{}
	a, clock := newApp(t, sqldb.SQLite, audit)
	bg := context.Background()
	publish := a.Commands.Publish

	// Who may upload: admins and members (users or service accounts), not viewers or anonymous callers.
	uploads := []struct {
		name string
		ctx  context.Context
		kind domain.Kind
		ok   bool
	}{
		{"anonymous", bg, domain.KindUnauthenticated, false},
		{"viewer", as(domain.PrincipalUser, domain.RoleViewer), domain.KindForbidden, false},
		{"viewer service account", as(domain.PrincipalServiceAccount, domain.RoleViewer), domain.KindForbidden, false},
		{"member", as(domain.PrincipalUser, domain.RoleMember), 0, true},
		{"admin", as(domain.PrincipalUser, domain.RoleAdmin), 0, true},
		{"member service account", as(domain.PrincipalServiceAccount, domain.RoleMember), 0, true},
	}
	version := 0
	for _, tt := range uploads {
		out, err := publish.Handle(tt.ctx, contracts.Publish{Source: contractSrc(version + 1)})
		if !tt.ok {
			if domain.KindOf(err) != tt.kind {
				t.Errorf("%s: upload err = %v, want kind %s", tt.name, err, tt.kind)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: upload: %v", tt.name, err)
		}
		version++
		p, _ := authz.PrincipalFrom(tt.ctx)
		c, sum := out.Contract, out.Summary
		if c.Version != version || sum.CreatedBy != p.ID || sum.LatestVersion != version || !sum.CreatedAt.Equal(clock.Now().Truncate(time.Microsecond)) ||
			sum.SourceFormat != domain.ContractFormatYAML {
			t.Errorf("%s: uploaded %+v / %+v", tt.name, c, sum)
		}
	}
	if len(audit.entries) != 3 || audit.entries[2].Action != "contract.upload" || audit.entries[2].Target != "shop:3" {
		t.Errorf("audit = %+v", audit.entries)
	}

	member := as(domain.PrincipalUser, domain.RoleMember)
	_, err := publish.Handle(member, contracts.Publish{Source: contractSrc(2)})
	if domain.CodeOf(err) != domain.CodeContractVersionConflict {
		t.Errorf("old version: %v", err)
	}
	_, err = publish.Handle(member, contracts.Publish{Source: []byte("contract_name: x\nversion: 0\nsteps: []")})
	if domain.CodeOf(err) != domain.CodeInvalidContract || len(domain.ContractProblems(err)) < 3 {
		t.Errorf("invalid upload: %v %v", err, domain.ContractProblems(err))
	}

	// Reads need contracts.read, which every role has.
	viewer := as(domain.PrincipalUser, domain.RoleViewer)
	read := a.Queries.Read
	if _, err := read.Handle(bg, "shop", 0); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Errorf("anonymous read: %v", err)
	}
	if v, err := read.Handle(viewer, "shop", 0); err != nil || v.Contract.Version != 3 {
		t.Errorf("viewer latest = %+v, %v", v, err)
	}
	if v, err := read.Handle(viewer, "shop", 1); err != nil || v.Contract.Version != 1 || string(v.Source) != string(contractSrc(1)) || v.Summary.LatestVersion != 3 {
		t.Errorf("viewer v1 = %+v %v", v, err)
	}
	if l, err := a.Queries.List.Handle(viewer); err != nil || len(l) != 1 || l[0].Version != 3 {
		t.Errorf("list = %+v, %v", l, err)
	}
	if l, err := a.Queries.ListVersions.Handle(viewer, "shop"); err != nil || len(l) != 3 {
		t.Errorf("versions = %+v, %v", l, err)
	}
	if p, err := a.Queries.Preview.Handle(viewer, contractSrc(9)); err != nil || !p.Valid() || p.ContentHash == "" {
		t.Errorf("check: %+v %v", p, err)
	}
	if _, err := a.Queries.Preview.Handle(bg, contractSrc(9)); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Errorf("anonymous check: %v", err)
	}
	if v, _ := read.Handle(viewer, "shop", 0); v.Contract.Version != 3 {
		t.Error("Preview stored a version")
	}
	// A name no contract can have is not found, before any query.
	for _, name := range []string{"\x00", "a b", "../x", string(make([]byte, 200))} {
		if _, err := read.Handle(viewer, name, 0); domain.CodeOf(err) != domain.CodeNotFound {
			t.Errorf("read %q: %v", name, err)
		}
	}
	// Deletion: administrators only.
	if err := a.Commands.DeleteVersion.Handle(member, "shop", 1); domain.KindOf(err) != domain.KindForbidden {
		t.Errorf("member delete: %v", err)
	}
	if err := a.Commands.DeleteVersion.Handle(as(domain.PrincipalUser, domain.RoleAdmin), "shop", 1); err != nil {
		t.Errorf("admin delete: %v", err)
	}
}

const payment = `Feature: payment
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

func TestGherkinPublishAndUpdate(t *testing.T) {
	t.Parallel()
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		a, _ := newApp(t, d, nil)
		member := as(domain.PrincipalUser, domain.RoleMember)
		publish := a.Commands.Publish
		src := func(v int, bound string) []byte { return []byte(fmt.Sprintf(payment, v, bound)) }

		if _, err := publish.Handle(member, contracts.Publish{Source: src(2, "0"), Name: "payment"}); domain.CodeOf(err) != domain.CodeNotFound {
			t.Errorf("update before create: %v", err)
		}
		out, err := publish.Handle(member, contracts.Publish{Source: src(2, "0")})
		if err != nil || out.Contract.Version != 2 || out.Summary.SourceFormat != domain.ContractFormatGherkin {
			t.Fatalf("create keeps the source's Version: %+v %v", out, err)
		}
		_, err = publish.Handle(member, contracts.Publish{Source: src(3, "0"), Name: "payment"})
		if domain.CodeOf(err) != domain.CodeContractUnchanged {
			t.Errorf("unchanged: %v", err)
		}
		_, err = publish.Handle(member, contracts.Publish{Source: src(2, "5"), Name: "payment"})
		if domain.CodeOf(err) != domain.CodeContractVersionConflict {
			t.Errorf("same version: %v", err)
		}
		_, err = publish.Handle(member, contracts.Publish{Source: src(3, "5"), Name: "other"})
		ps := domain.ContractProblems(err)
		if domain.CodeOf(err) != domain.CodeInvalidContract || len(ps) != 1 || ps[0].Line != 1 || ps[0].Field != "contract_name" {
			t.Errorf("name mismatch: %v %+v", err, ps)
		}
		if out, err := publish.Handle(member, contracts.Publish{Source: src(3, "5"), Name: "payment"}); err != nil || out.Contract.Version != 3 {
			t.Errorf("update: %+v %v", out, err)
		}
		// Includes resolve against published versions.
		inc := []byte("Feature: refund\nInclude: payment:3\nRule: Refund\n  When step \"refund\" is submitted\n  Then owner must be \"processor\"\n  And step \"charge\" must have succeeded\n")
		p, err := a.Queries.Preview.Handle(member, inc)
		if err != nil || !p.Valid() || len(p.Contract.Steps) != 3 || len(p.Graph.Nodes) != 3 {
			t.Errorf("preview with include: %+v %v", p, err)
		}
		p, _ = a.Queries.Preview.Handle(member, []byte("Feature: refund\nInclude: payment:9\nRule: R\n  When step \"r\" is submitted\n  Then owner must be \"x\"\n"))
		if p.Valid() || p.Problems[0].Message != `Included contract "payment" version 9 was not found` || p.Problems[0].Line != 2 {
			t.Errorf("missing include: %+v", p.Problems)
		}
	})
}
