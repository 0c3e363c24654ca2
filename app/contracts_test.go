package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/app"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

type auditLog struct{ entries []ports.AuditEntry }

func (a *auditLog) RecordAudit(_ context.Context, e ports.AuditEntry) error {
	a.entries = append(a.entries, e)
	return nil
}

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

func TestContractsUseCases(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)}
	audit := &auditLog{}
	a := app.NewContracts(app.ContractsDeps{Store: contractstore.New(sqldbtest.Open(t, sqldb.SQLite)), Clock: clock,
		Audit: audit, NewID: func() string { return "audit-1" }})
	as := func(kind domain.PrincipalKind, role domain.Role) context.Context {
		return app.WithPrincipal(context.Background(), domain.Principal{Kind: kind, ID: string(role) + "-" + string(kind), Role: role})
	}
	bg := context.Background()

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
		c, sum, err := a.UploadContract(tt.ctx, contractSrc(version+1))
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
		p, _ := app.PrincipalFrom(tt.ctx)
		if c.Version != version || sum.CreatedBy != p.ID || sum.LatestVersion != version || !sum.CreatedAt.Equal(clock.Now().Truncate(time.Microsecond)) {
			t.Errorf("%s: uploaded %+v / %+v", tt.name, c, sum)
		}
	}
	if len(audit.entries) != 3 || audit.entries[2].Action != "contract.upload" || audit.entries[2].Target != "shop:3" {
		t.Errorf("audit = %+v", audit.entries)
	}

	member := as(domain.PrincipalUser, domain.RoleMember)
	_, _, err := a.UploadContract(member, contractSrc(2))
	if domain.CodeOf(err) != domain.CodeContractVersionConflict {
		t.Errorf("old version: %v", err)
	}
	_, _, err = a.UploadContract(member, []byte("contract_name: x\nversion: 0\nsteps: []"))
	if domain.CodeOf(err) != domain.CodeInvalidContract || len(domain.ContractProblems(err)) < 3 {
		t.Errorf("invalid upload: %v %v", err, domain.ContractProblems(err))
	}

	// Reads need contracts.read, which every role has.
	viewer := as(domain.PrincipalUser, domain.RoleViewer)
	if _, err := a.GetContract(bg, "shop", 0); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Errorf("anonymous read: %v", err)
	}
	if c, err := a.GetContract(viewer, "shop", 0); err != nil || c.Version != 3 {
		t.Errorf("viewer latest = %d, %v", c.Version, err)
	}
	if c, src, sum, err := a.GetContractSource(viewer, "shop", 1); err != nil || c.Version != 1 || string(src) != string(contractSrc(1)) || sum.LatestVersion != 3 {
		t.Errorf("viewer v1 = %d %q %+v %v", c.Version, src, sum, err)
	}
	if l, err := a.ListContracts(viewer); err != nil || len(l) != 1 || l[0].Version != 3 {
		t.Errorf("list = %+v, %v", l, err)
	}
	if l, err := a.ListContractVersions(viewer, "shop"); err != nil || len(l) != 3 {
		t.Errorf("versions = %+v, %v", l, err)
	}
	if _, err := a.CheckContract(viewer, contractSrc(9)); err != nil {
		t.Errorf("check: %v", err)
	}
	if _, err := a.CheckContract(bg, contractSrc(9)); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Errorf("anonymous check: %v", err)
	}
	if c, _ := a.GetContract(viewer, "shop", 0); c.Version != 3 {
		t.Error("CheckContract stored a version")
	}
}
