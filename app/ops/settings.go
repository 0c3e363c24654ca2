package ops

import (
	"context"
	"log/slog"
	"net/url"
	"strings"

	"github.com/threadengine/engine/app/auditctx"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// PublicURLSetting is the ports.Settings key of the UI override of
// server.public_url.
const PublicURLSetting = "engine.public_url"

// maxURLLength bounds a stored engine URL; real addresses are far shorter.
const maxURLLength = 2048

// EngineURLSource says where the effective engine URL comes from.
type EngineURLSource string

const (
	EngineURLFromConfig EngineURLSource = "config"
	EngineURLFromUI     EngineURLSource = "ui"
	EngineURLUnset      EngineURLSource = "unset"
)

// Endpoints are the client addresses derived from the effective engine URL.
type Endpoints struct {
	HTTP      string `json:"http"`
	WebSocket string `json:"websocket"`
	GraphQL   string `json:"graphql"`
	OTel      string `json:"otel"`
	MCP       string `json:"mcp"`
}

// EngineSettingsView is what the settings use case answers (the body of
// GET/PUT/DELETE /v1/engine/settings).
type EngineSettingsView struct {
	PublicURL       string          `json:"public_url"`
	ConfigPublicURL string          `json:"config_public_url"`
	Source          EngineURLSource `json:"source"`
	CanManage       bool            `json:"can_manage"`
	Endpoints       Endpoints       `json:"endpoints"`
}

// EngineSettings is the engine-URL use case: the config value
// (server.public_url, needs a restart to change) can be overridden at run
// time by an administrator; the override is stored, so it survives restarts,
// and is read on every call, so it applies at once. Get is the query; Set
// and Reset are the commands (administrators only, audited).
type EngineSettings struct {
	Store     ports.Settings
	ConfigURL string
	Clock     ports.Clock
	// Audit is optional; without it (or NewID) changes are not audited.
	Audit ports.Audit
	NewID func() string
	// Log receives audit failures (slog.Default when nil).
	Log *slog.Logger
}

// Effective returns the engine URL in force and where it comes from. Other
// adapters that advertise the engine address should call it rather than
// reading the config, so a UI override applies to them too.
func (s *EngineSettings) Effective(ctx context.Context) (string, EngineURLSource, error) {
	v, ok, err := s.Store.GetSetting(ctx, PublicURLSetting)
	if err != nil {
		return "", "", err
	}
	if ok && v != "" {
		return v, EngineURLFromUI, nil
	}
	if s.ConfigURL != "" {
		return s.ConfigURL, EngineURLFromConfig, nil
	}
	return "", EngineURLUnset, nil
}

// Get returns the settings to any signed-in principal: every client needs the
// address it should use.
func (s *EngineSettings) Get(ctx context.Context) (EngineSettingsView, error) {
	p, err := authz.RequirePrincipal(ctx)
	if err != nil {
		return EngineSettingsView{}, err
	}
	return s.view(ctx, p)
}

// Set stores an override (administrators only).
func (s *EngineSettings) Set(ctx context.Context, raw string) (EngineSettingsView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return EngineSettingsView{}, err
	}
	norm, err := NormalizeEngineURL(raw)
	if err != nil {
		return EngineSettingsView{}, err
	}
	if err := s.Store.PutSetting(ctx, PublicURLSetting, norm, p.ID, s.Clock.Now().UTC()); err != nil {
		return EngineSettingsView{}, err
	}
	s.audit(ctx, p, "engine.public_url.set", map[string]any{"public_url": norm})
	return s.view(ctx, p)
}

// Reset removes the override so the config value applies again.
func (s *EngineSettings) Reset(ctx context.Context) (EngineSettingsView, error) {
	p, err := authz.Require(ctx, domain.PermSettingsManage)
	if err != nil {
		return EngineSettingsView{}, err
	}
	if err := s.Store.DeleteSetting(ctx, PublicURLSetting); err != nil && domain.KindOf(err) != domain.KindNotFound {
		return EngineSettingsView{}, err
	}
	s.audit(ctx, p, "engine.public_url.reset", nil)
	return s.view(ctx, p)
}

func (s *EngineSettings) audit(ctx context.Context, p domain.Principal, action string, details map[string]any) {
	if s.Audit == nil || s.NewID == nil {
		return
	}
	// The setting is already stored; an audit failure must not undo it (nor
	// tell the caller it failed), so it is logged, as the identity use cases do.
	// The action has committed: its line is written even if ctx ends now.
	ctx, cancel := auditctx.Detached(ctx)
	defer cancel()
	err := s.Audit.RecordAudit(ctx, ports.AuditEntry{
		ID: s.NewID(), At: s.Clock.Now().UTC(), ActorKind: p.Kind, ActorID: p.ID,
		Action: action, Target: PublicURLSetting, Details: details,
	})
	if err != nil {
		log := s.Log
		if log == nil {
			log = slog.Default()
		}
		log.ErrorContext(ctx, "audit record failed", "action", action, "target", PublicURLSetting, "err", err)
	}
}

func (s *EngineSettings) view(ctx context.Context, p domain.Principal) (EngineSettingsView, error) {
	eff, src, err := s.Effective(ctx)
	if err != nil {
		return EngineSettingsView{}, err
	}
	return EngineSettingsView{
		PublicURL: eff, ConfigPublicURL: s.ConfigURL, Source: src,
		CanManage: p.Can(domain.PermSettingsManage), Endpoints: EndpointsOf(eff),
	}, nil
}

// NormalizeEngineURL validates an engine address: absolute http(s), a host,
// no credentials, query or fragment. A path prefix (reverse proxy) is kept;
// a trailing slash is dropped so endpoints can be appended.
func NormalizeEngineURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	bad := func(msg string, args ...any) error { return domain.Invalid("public_url", msg, args...) }
	if raw == "" {
		return "", bad("public_url is required (use DELETE to return to the config default)")
	}
	if len(raw) > maxURLLength {
		return "", bad("public_url must be at most %d characters", maxURLLength)
	}
	if strings.ContainsAny(raw, " \t\r\n\\") {
		return "", bad("public_url must not contain spaces or backslashes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", bad("public_url is not a valid URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", bad("public_url must start with http:// or https://")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return "", bad("public_url must include a host, e.g. https://engine.example.com")
	}
	if u.User != nil {
		return "", bad("public_url must not contain credentials")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#") {
		return "", bad("public_url must not contain a query or a fragment")
	}
	if port := u.Port(); port != "" {
		if n, ok := atoiPort(port); !ok || n < 1 || n > 65535 {
			return "", bad("public_url has an invalid port")
		}
	}
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if strings.Contains(u.Path, "//") || strings.Contains("/"+u.Path+"/", "/../") || strings.Contains("/"+u.Path+"/", "/./") {
		return "", bad("public_url has an unusual path; give the proxy prefix plainly, e.g. https://example.com/engine")
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath(), nil
}

func atoiPort(s string) (int, bool) {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
		if n > 65535 {
			return n, true
		}
	}
	return n, len(s) > 0
}

// EndpointsOf derives client endpoints from an engine URL (keeping its path
// prefix); all empty for "".
func EndpointsOf(base string) Endpoints {
	if base == "" {
		return Endpoints{}
	}
	ws := "ws" + strings.TrimPrefix(base, "http")
	return Endpoints{
		HTTP:      base,
		WebSocket: ws + "/threads",
		GraphQL:   base + "/graphql",
		OTel:      base + "/v1/traces",
		MCP:       base + "/mcp",
	}
}
