package ops_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/ports/portstest"
)

func as(p domain.Principal) context.Context { return authz.WithPrincipal(context.Background(), p) }

type failingAudit struct{}

func (failingAudit) RecordAudit(context.Context, ports.AuditEntry) error {
	return errors.New("audit table unavailable")
}

func settingsFixture(audit ports.Audit, log *slog.Logger) (*ops.EngineSettings, *portstest.Identity) {
	st := portstest.NewIdentity()
	return &ops.EngineSettings{
		Store: st, ConfigURL: "http://127.0.0.1:8081", Audit: audit, Log: log,
		Clock: portstest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), NewID: func() string { return "id-1" },
	}, st
}

func TestEngineSettingsPermissionsInApp(t *testing.T) {
	t.Parallel()
	s, st := settingsFixture(nil, nil)
	admin := as(domain.Principal{Kind: domain.PrincipalUser, ID: "a", Role: domain.RoleAdmin})
	member := as(domain.Principal{Kind: domain.PrincipalUser, ID: "m", Role: domain.RoleMember})
	s.Audit = st

	if _, err := s.Get(context.Background()); domain.KindOf(err) != domain.KindUnauthenticated {
		t.Fatalf("anonymous get: %v", err)
	}
	v, err := s.Get(member)
	if err != nil || v.CanManage || v.Source != ops.EngineURLFromConfig || v.PublicURL != "http://127.0.0.1:8081" {
		t.Fatalf("member get: %+v %v", v, err)
	}
	if _, err := s.Set(member, "https://x.example.com"); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("member set: %v", err)
	}
	if _, err := s.Reset(member); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("member reset: %v", err)
	}
	// Permission before validation: a member learns nothing from a bad URL.
	if _, err := s.Set(member, "not a url"); domain.KindOf(err) != domain.KindForbidden {
		t.Fatalf("member set with a bad URL: %v", err)
	}
	v, err = s.Set(admin, "https://Example.com/engine/")
	if err != nil || v.PublicURL != "https://example.com/engine" || v.Source != ops.EngineURLFromUI || !v.CanManage ||
		v.Endpoints.WebSocket != "wss://example.com/engine/threads" {
		t.Fatalf("admin set: %+v %v", v, err)
	}
	if log := st.AuditLog(); len(log) != 1 || log[0].Action != "engine.public_url.set" || log[0].ActorID != "a" {
		t.Fatalf("audit: %+v", log)
	}
	if v, err = s.Reset(admin); err != nil || v.Source != ops.EngineURLFromConfig {
		t.Fatalf("admin reset: %+v %v", v, err)
	}
}

// An audit failure neither undoes the change nor fails the request, and it
// is logged rather than dropped.
func TestEngineSettingsAuditFailureIsLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s, _ := settingsFixture(failingAudit{}, slog.New(slog.NewTextHandler(&buf, nil)))
	admin := as(domain.Principal{Kind: domain.PrincipalUser, ID: "a", Role: domain.RoleAdmin})
	v, err := s.Set(admin, "https://example.com")
	if err != nil || v.PublicURL != "https://example.com" {
		t.Fatalf("set: %+v %v", v, err)
	}
	if got, src, err := s.Effective(context.Background()); err != nil || got != "https://example.com" || src != ops.EngineURLFromUI {
		t.Fatalf("stored: %q %q %v", got, src, err)
	}
	if !strings.Contains(buf.String(), "audit record failed") || !strings.Contains(buf.String(), "audit table unavailable") {
		t.Fatalf("audit failure not logged: %q", buf.String())
	}
}
