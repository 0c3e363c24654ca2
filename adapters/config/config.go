// Package config loads the engine configuration: defaults, then an optional
// YAML file, then THREADENGINE_* environment variables ("__" separates levels:
// THREADENGINE_SERVER__LISTEN sets server.listen). Invalid values fail at start
// with a message naming the key.
package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/threadengine/engine/domain"
)

// EnvPrefix starts every environment override.
const EnvPrefix = "THREADENGINE_"

// Config is the whole engine configuration.
type Config struct {
	Server    Server    `koanf:"server"`
	Database  Database  `koanf:"database"`
	Registry  Registry  `koanf:"registry"`
	Auth      Auth      `koanf:"auth"`
	Security  Security  `koanf:"security"`
	Log       Log       `koanf:"log"`
	Limits    Limits    `koanf:"limits"`
	Metrics   Metrics   `koanf:"metrics"`
	Retention Retention `koanf:"retention"`
	// Notifications tunes the delivery of pushed notifications.
	Notifications Notifications `koanf:"notifications"`
	// Alerts configures webhook deliveries and the alert sweep.
	Alerts Alerts `koanf:"alerts"`
	// Telemetry exports the engine's own traces; Audit keeps the audit log.
	Telemetry Telemetry `koanf:"telemetry"`
	Audit     Audit     `koanf:"audit"`
	// Threads and Contracts: see sections.go.
	Threads   Threads   `koanf:"threads"`
	Contracts Contracts `koanf:"contracts"`
	// Transparency configures the transparency log.
	Transparency Transparency `koanf:"transparency"`
	// OTLP configures trace ingestion (its request limits are under limits.otlp).
	OTLP OTLP `koanf:"otlp"`
}

// OTLP configures OTLP trace ingestion (docs/integrators/otlp.md).
type OTLP struct {
	// TraceQuietPeriod: a trace's thread ends (completed or failed, from its
	// spans) once its root span has ended and no span arrived for this long.
	TraceQuietPeriod time.Duration `koanf:"trace_quiet_period"`
}

// Transparency configures the transparency log (docs/integrators/verification.md).
type Transparency struct {
	// Origin names the log in its checkpoints and keys; used when the first
	// signing key is generated (a random threadengine.local/log/… when
	// empty), fixed after.
	Origin string `koanf:"origin"`
	// CheckpointInterval is how often a checkpoint is signed while the log grows.
	CheckpointInterval time.Duration `koanf:"checkpoint_interval"`
	// Witnesses cosign checkpoints (C2SP tlog-witness); none by default.
	Witnesses []Witness `koanf:"witnesses"`
}

// Witness is one witness of the transparency log
// (docs/operators/transparency-witnesses.md).
type Witness struct {
	// URL is the witness's submission prefix (POST URL/add-checkpoint).
	URL string `koanf:"url"`
	// Key is its verifier key (C2SP Ed25519 cosignature key,
	// name+hash+base64).
	Key string `koanf:"key"`
}

// Alerts configures alert webhooks (docs/operators/alerts.md).
type Alerts struct {
	// SweepInterval is how often the sweep looks for overdue and silent
	// threads.
	SweepInterval time.Duration `koanf:"sweep_interval"`
	// SilentAfter flags an active thread without an update for that long
	// (0 turns the check off).
	SilentAfter time.Duration `koanf:"silent_after"`
	// PollInterval is how often the outbox is checked for due deliveries
	// (new alerts and tests also wake it at once).
	PollInterval time.Duration `koanf:"poll_interval"`
	// Timeout bounds one delivery request (connect to response read).
	Timeout time.Duration `koanf:"timeout"`
	// RetryBase, RetryMax and MaxAttempts are the backoff schedule.
	RetryBase   time.Duration `koanf:"retry_base"`
	RetryMax    time.Duration `koanf:"retry_max"`
	MaxAttempts int           `koanf:"max_attempts"`
	// Concurrency bounds the requests in flight per replica.
	Concurrency int `koanf:"concurrency"`
	// DeliveryLogRetention: settled deliveries older than it are deleted.
	DeliveryLogRetention time.Duration `koanf:"delivery_log_retention"`
	// AllowedHosts, when set, are the only hosts webhook URLs may name
	// ("*.example.com" for subdomains); comma-separated in the environment.
	AllowedHosts []string `koanf:"allowed_hosts"`
	// BlockPrivateAddresses refuses to connect to loopback, private and
	// link-local addresses (checked on the address dialled).
	BlockPrivateAddresses bool `koanf:"block_private_addresses"`
	// PrivateAnswerDetails logs the status, error and answer excerpt of a
	// failed delivery to a loopback, private or link-local address too
	// (off: one coded outcome, so the log cannot read internal services
	// or tell their open ports from closed ones). For receivers you run
	// on your own network.
	PrivateAnswerDetails bool `koanf:"private_answer_details"`
}

// Retention configures the sweeper that deletes old threads.
type Retention struct {
	// ThreadsDays deletes threads that ended more than this many days ago
	// (0 keeps them forever). An administrator can override it in the UI.
	ThreadsDays int `koanf:"threads_days"`
	// ActiveIdleDays deletes threads still active whose last step is older
	// than this many days (0 never deletes active threads).
	ActiveIdleDays int `koanf:"active_idle_days"`
	// SweepInterval is how often the sweeper runs.
	SweepInterval time.Duration `koanf:"sweep_interval"`
	// BatchSize is how many threads one deletion transaction removes;
	// BatchPause is the pause between two batches, left to ingestion.
	BatchSize  int           `koanf:"batch_size"`
	BatchPause time.Duration `koanf:"batch_pause"`
	// StepRefusals is how long the log of refused step submissions
	// (content rules broken; GET /v1/refusals) keeps an entry.
	StepRefusals time.Duration `koanf:"step_refusals"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// GET /metrics; empty leaves the endpoint open.
	Token string `koanf:"token"`
	// GaugeInterval is how often the gauges read from the database (active
	// threads by health) are refreshed.
	GaugeInterval time.Duration `koanf:"gauge_interval"`
}

// Notifications tunes delivery from the stored notification log.
type Notifications struct {
	// Retention is how long a notification nobody acknowledged is kept for
	// delivery before it is expired (and counted).
	Retention time.Duration `koanf:"retention"`
	// RedeliverAfter: an unacknowledged push is sent again after it.
	RedeliverAfter time.Duration `koanf:"redeliver_after"`
	// MaxDeliveries bounds the pushes of one notification.
	MaxDeliveries int `koanf:"max_deliveries"`
	// WaitRecheck: a pending wait (waitForPermission, waitForValidation)
	// re-reads what it waits for this often even when nothing wakes it.
	WaitRecheck time.Duration `koanf:"wait_recheck"`
	// SettledRetention is how long a settled notification (acknowledged,
	// expired or dropped) is kept before it is deleted: it stays in the
	// thread's notification history that long.
	SettledRetention time.Duration `koanf:"settled_retention"`
}

// Server configures the HTTP listener.
type Server struct {
	// Listen is host:port to bind.
	Listen string `koanf:"listen"`
	// PublicURL is the address clients reach the engine at; only advertised.
	PublicURL string `koanf:"public_url"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	// TrustedProxies are the CIDRs (or addresses) of reverse proxies whose
	// X-Forwarded-For names the client (for logs and the sign-in throttle);
	// from any other peer the header is ignored.
	TrustedProxies []string `koanf:"trusted_proxies"`
	// PprofListen, when set, serves Go's profiler (net/http/pprof) on this
	// separate loopback host:port, for profiling a running engine. It is
	// unauthenticated, so only loopback addresses are accepted; empty (the
	// default) serves nothing.
	PprofListen string `koanf:"pprof_listen"`
	// AddressFile, when set, is where serve writes the host:port it bound
	// (useful with port 0 in Listen), then on a second line PprofListen's
	// when that is set: written once the listeners are open, to a temporary
	// file renamed into place, so a reader sees all of it or nothing. Empty
	// (the default) writes nothing.
	AddressFile string `koanf:"address_file"`
}

// Database selects the store.
type Database struct {
	// URL is postgres://… (sslmode required) or sqlite://path; empty means
	// embedded SQLite at ./data/threadengine.db.
	URL string `koanf:"url"`
	// MaxConns is the PostgreSQL writers' pool (the read pool is
	// limits.graphql.pool_conns). Every replica holds up to MaxConns +
	// pool_conns connections, so replicas × that must stay under the
	// server's max_connections (100 by default). SQLite ignores it.
	MaxConns int `koanf:"max_conns"`
}

// minDatabaseConns is the smallest writers' pool: a step's group commit,
// the transparency log's sequencer, the notification hub's poller and the
// sweeps each hold a connection while they run, and a request's own
// transaction needs one beside them.
const minDatabaseConns = 4

// Registry configures the identity registry (OIDC provider + license API).
type Registry struct {
	URL           string        `koanf:"url"`
	LicenseKey    string        `koanf:"license_key"`
	BrowserOrigin string        `koanf:"browser_origin"`
	ClientID      string        `koanf:"client_id"`
	ClientSecret  string        `koanf:"client_secret"`
	Product       string        `koanf:"product"`
	CheckInterval time.Duration `koanf:"check_interval"`
}

// Auth configures sessions.
type Auth struct {
	SessionTTL time.Duration `koanf:"session_ttl"`
	// CacheTTL is how long a successful API key or session authentication
	// is reused without reading the database (0 disables). Changes made
	// through this process invalidate it at once; another engine process
	// sharing the database sees them after at most CacheTTL.
	CacheTTL time.Duration `koanf:"cache_ttl"`
}

// Security holds installation secrets.
type Security struct {
	// HashChainSecret keys the step hash chain (HMAC-SHA256) and invitation
	// tokens. Empty means a random secret generated by the first engine to
	// start and kept in the database (installation_keys), shared by every
	// replica. When set, the database records its fingerprint and an engine
	// configured with a different key for the same version refuses to start.
	HashChainSecret string `koanf:"hash_chain_secret"`
	// HashChainSecretVersion names HashChainSecret in every hash it signs
	// (default "1"); a rotation sets a new secret with a new version.
	HashChainSecretVersion string `koanf:"hash_chain_secret_version"`
	// HashChainPreviousSecrets are retired configured secrets by version,
	// kept so chains signed with them stay verifiable.
	HashChainPreviousSecrets map[string]string `koanf:"hash_chain_previous_secrets"`
	// KeysEncryptionKey encrypts the keys kept in the database (hash-chain
	// secrets, the transparency log's signing keys) with AES-256-GCM: 32
	// bytes as 64 hex digits or base64. Empty: they are stored in clear.
	KeysEncryptionKey string `koanf:"keys_encryption_key"`
}

// Log configures structured logging.
type Log struct {
	Level  string `koanf:"level"`  // debug, info, warn, error
	Format string `koanf:"format"` // text or json
}

// Defaults returns the configuration used when nothing is set.
func Defaults() Config {
	return Config{
		Server:    Server{Listen: "127.0.0.1:8081", ShutdownTimeout: 30 * time.Second},
		Database:  Database{MaxConns: 25},
		Registry:  Registry{Product: "threadengine", CheckInterval: 15 * time.Minute},
		Auth:      Auth{SessionTTL: 8 * time.Hour, CacheTTL: 5 * time.Second},
		Log:       Log{Level: "info", Format: "text"},
		Limits:    DefaultLimits(),
		Retention: Retention{SweepInterval: time.Hour, BatchSize: 100, BatchPause: 200 * time.Millisecond, StepRefusals: 30 * 24 * time.Hour},
		Notifications: Notifications{Retention: 24 * time.Hour, RedeliverAfter: 30 * time.Second, MaxDeliveries: 3, WaitRecheck: 30 * time.Second,
			SettledRetention: 24 * time.Hour},
		Alerts: Alerts{SweepInterval: time.Minute, PollInterval: time.Second, Timeout: 10 * time.Second,
			RetryBase: 10 * time.Second, RetryMax: time.Hour, MaxAttempts: 8, Concurrency: 4,
			DeliveryLogRetention: 7 * 24 * time.Hour},
		Threads:      defaultThreads(),
		Contracts:    defaultContracts(),
		Metrics:      Metrics{GaugeInterval: time.Minute},
		Telemetry:    defaultTelemetry(),
		Transparency: Transparency{CheckpointInterval: time.Second},
		OTLP:         OTLP{TraceQuietPeriod: 30 * time.Second},
	}
}

// Load reads defaults, then path (if non-empty; a missing file is an error),
// then the environment (environ as os.Environ returns it).
func Load(path string, environ []string) (Config, error) {
	k := koanf.New(".")
	d := Defaults()
	if err := k.Load(confmap.Provider(map[string]any{
		"server.listen":                   d.Server.Listen,
		"server.shutdown_timeout":         d.Server.ShutdownTimeout.String(),
		"registry.product":                d.Registry.Product,
		"registry.check_interval":         d.Registry.CheckInterval.String(),
		"auth.session_ttl":                d.Auth.SessionTTL.String(),
		"auth.cache_ttl":                  d.Auth.CacheTTL.String(),
		"log.level":                       d.Log.Level,
		"log.format":                      d.Log.Format,
		"notifications.retention":         d.Notifications.Retention.String(),
		"notifications.redeliver_after":   d.Notifications.RedeliverAfter.String(),
		"notifications.max_deliveries":    d.Notifications.MaxDeliveries,
		"notifications.wait_recheck":      d.Notifications.WaitRecheck.String(),
		"notifications.settled_retention": d.Notifications.SettledRetention.String(),
	}, "."), nil); err != nil {
		return Config{}, err
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return Config{}, fmt.Errorf("config file: %w", err)
		}
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	envMap := map[string]any{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || name == EnvPrefix+"CONFIG" {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "__", "."))
		// Only variables naming a config section are config; others with the
		// prefix (THREADENGINE_API_KEY for the CLI, test settings) are not ours.
		section, _, nested := strings.Cut(key, ".")
		if !nested || !knownSections[section] {
			continue
		}
		envMap[key] = val
	}
	if err := k.Load(confmap.Provider(envMap, "."), nil); err != nil {
		return Config{}, err
	}
	if err := checkKnownKeys(k); err != nil {
		return Config{}, err
	}
	// Unmarshalled over the defaults, so keys absent from every source
	// (the limits section) keep their default.
	c := Defaults()
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, c.Validate()
}

var knownSections = map[string]bool{"server": true, "database": true, "registry": true, "auth": true, "security": true, "log": true,
	"limits": true, "metrics": true, "retention": true, "notifications": true, "alerts": true, "telemetry": true, "audit": true,
	"threads": true, "contracts": true, "transparency": true}

var knownKeys = map[string]bool{
	"server.listen": true, "server.public_url": true, "server.shutdown_timeout": true, "server.trusted_proxies": true, "server.pprof_listen": true, "server.address_file": true,
	"database.url": true, "database.max_conns": true,
	"registry.url": true, "registry.license_key": true, "registry.browser_origin": true,
	"registry.client_id": true, "registry.client_secret": true, "registry.product": true, "registry.check_interval": true,
	"auth.session_ttl": true, "auth.cache_ttl": true,
	"security.hash_chain_secret": true, "security.hash_chain_secret_version": true,
	"log.level": true, "log.format": true,
	"metrics.token":          true,
	"retention.threads_days": true, "retention.active_idle_days": true, "retention.sweep_interval": true,
	"retention.batch_size": true, "retention.batch_pause": true, "retention.step_refusals": true,
	"notifications.retention": true, "notifications.redeliver_after": true, "notifications.max_deliveries": true, "notifications.wait_recheck": true, "notifications.settled_retention": true,
	"alerts.sweep_interval": true, "alerts.silent_after": true, "alerts.poll_interval": true, "alerts.timeout": true,
	"alerts.retry_base": true, "alerts.retry_max": true, "alerts.max_attempts": true, "alerts.concurrency": true,
	"alerts.delivery_log_retention": true, "alerts.allowed_hosts": true, "alerts.block_private_addresses": true,
	"alerts.private_answer_details": true,
}

// checkKnownKeys refuses typos: an unknown key would otherwise be silently ignored.
func checkKnownKeys(k *koanf.Koanf) error {
	for _, key := range k.Keys() {
		if strings.HasPrefix(key, "security.hash_chain_previous_secrets.") {
			continue // a map: one key per version
		}
		if !knownKeys[key] && !limitKeys()[key] && !telemetryKey(key) && !sectionKeys[key] {
			return fmt.Errorf("config: unknown key %q", key)
		}
	}
	return nil
}

// Validate checks every value and names the offending key.
func (c *Config) Validate() error {
	if c.Database.MaxConns < minDatabaseConns {
		return fmt.Errorf("config: database.max_conns %d: want at least %d", c.Database.MaxConns, minDatabaseConns)
	}
	if _, _, err := net.SplitHostPort(c.Server.Listen); err != nil {
		return fmt.Errorf("config: server.listen %q: want host:port", c.Server.Listen)
	}
	if c.Server.PublicURL != "" {
		u, err := checkHTTPURL(c.Server.PublicURL, true)
		if err != nil {
			return fmt.Errorf("config: server.public_url: %w", err)
		}
		c.Server.PublicURL = strings.TrimSuffix(u.String(), "/")
	}
	if c.Registry.URL != "" {
		if _, err := checkHTTPURL(c.Registry.URL, true); err != nil {
			return fmt.Errorf("config: registry.url: %w", err)
		}
		c.Registry.URL = strings.TrimSuffix(c.Registry.URL, "/")
	}
	if c.Registry.BrowserOrigin != "" {
		u, err := checkHTTPURL(c.Registry.BrowserOrigin, false)
		if err != nil {
			return fmt.Errorf("config: registry.browser_origin: %w", err)
		}
		if u.Scheme == "http" && !isLoopback(u.Hostname()) {
			return fmt.Errorf("config: registry.browser_origin: must be https (http is allowed only on loopback)")
		}
		c.Registry.BrowserOrigin = u.Scheme + "://" + u.Host
	}
	if c.Auth.SessionTTL <= 0 {
		return fmt.Errorf("config: auth.session_ttl must be positive")
	}
	// Bounded so a multi-replica installation never trusts a stale
	// authentication for long.
	if c.Auth.CacheTTL < 0 || c.Auth.CacheTTL > time.Minute {
		return fmt.Errorf("config: auth.cache_ttl must be between 0 (disabled) and 1m")
	}
	if c.Notifications.Retention < time.Minute {
		return fmt.Errorf("config: notifications.retention must be at least 1m")
	}
	if c.Notifications.RedeliverAfter < 100*time.Millisecond || c.Notifications.RedeliverAfter > time.Hour {
		return fmt.Errorf("config: notifications.redeliver_after must be between 100ms and 1h")
	}
	if c.Notifications.MaxDeliveries < 1 || c.Notifications.MaxDeliveries > 100 {
		return fmt.Errorf("config: notifications.max_deliveries must be between 1 and 100")
	}
	if c.Notifications.WaitRecheck < time.Second || c.Notifications.WaitRecheck > 24*time.Hour {
		return fmt.Errorf("config: notifications.wait_recheck must be between 1s and 24h")
	}
	if c.Notifications.SettledRetention < time.Minute {
		return fmt.Errorf("config: notifications.settled_retention must be at least 1m")
	}
	if c.Server.ShutdownTimeout <= 0 {
		return fmt.Errorf("config: server.shutdown_timeout must be positive")
	}
	if c.Server.PprofListen != "" {
		host, _, err := net.SplitHostPort(c.Server.PprofListen)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			return fmt.Errorf("config: server.pprof_listen %q: want a loopback host:port such as 127.0.0.1:6060 (the profiler is unauthenticated)", c.Server.PprofListen)
		}
	}
	if c.Registry.CheckInterval < time.Second {
		return fmt.Errorf("config: registry.check_interval must be at least 1s")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log.level %q: want debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("config: log.format %q: want text or json", c.Log.Format)
	}
	// From the environment the list is one comma-separated string.
	var proxies []string
	for _, p := range c.Server.TrustedProxies {
		for _, one := range strings.Split(p, ",") {
			if one = strings.TrimSpace(one); one != "" {
				proxies = append(proxies, one)
			}
		}
	}
	c.Server.TrustedProxies = proxies
	if _, err := ParseTrustedProxies(c.Server.TrustedProxies); err != nil {
		return fmt.Errorf("config: server.trusted_proxies: %w", err)
	}
	if c.Transparency.CheckpointInterval < 10*time.Millisecond || c.Transparency.CheckpointInterval > time.Hour {
		return fmt.Errorf("config: transparency.checkpoint_interval must be between 10ms and 1h")
	}
	for i, w := range c.Transparency.Witnesses {
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: transparency.witnesses[%d].url must be an http(s) URL", i)
		}
		if _, err := domain.NewCosignatureVerifier(w.Key); err != nil {
			return fmt.Errorf("config: transparency.witnesses[%d].key: %w", i, err)
		}
	}
	if c.OTLP.TraceQuietPeriod < 100*time.Millisecond || c.OTLP.TraceQuietPeriod > 24*time.Hour {
		return fmt.Errorf("config: otlp.trace_quiet_period must be between 100ms and 24h")
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if err := c.Alerts.validate(); err != nil {
		return err
	}
	if err := c.Telemetry.validate(); err != nil {
		return err
	}
	if err := c.Audit.validate(); err != nil {
		return err
	}
	if err := c.Metrics.validate(); err != nil {
		return err
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.Threads.validate(); err != nil {
		return err
	}
	if err := c.Contracts.validate(); err != nil {
		return err
	}
	if c.Security.HashChainSecret != "" && len(c.Security.HashChainSecret) < 32 {
		return fmt.Errorf("config: security.hash_chain_secret must be at least 32 characters")
	}
	if v := c.Security.HashChainSecretVersion; v != "" && !validKeyVersion(v) {
		return fmt.Errorf("config: security.hash_chain_secret_version %q: want 1-32 letters, digits, '-' or '_'", v)
	}
	if c.Security.HashChainSecretVersion != "" && c.Security.HashChainSecret == "" {
		return fmt.Errorf("config: security.hash_chain_secret_version is set but security.hash_chain_secret is not")
	}
	for v, sec := range c.Security.HashChainPreviousSecrets {
		if !validKeyVersion(v) {
			return fmt.Errorf("config: security.hash_chain_previous_secrets: version %q: want 1-32 letters, digits, '-' or '_'", v)
		}
		if len(sec) < 32 {
			return fmt.Errorf("config: security.hash_chain_previous_secrets.%s must be at least 32 characters", v)
		}
		cur := c.Security.HashChainSecretVersion
		if cur == "" {
			cur = "1"
		}
		if c.Security.HashChainSecret != "" && v == cur {
			return fmt.Errorf("config: security.hash_chain_previous_secrets.%s is the current version", v)
		}
	}
	return nil
}

// validKeyVersion: a version goes into every chain hash, before its ':'.
func validKeyVersion(v string) bool {
	if v == "" || len(v) > 32 {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func checkHTTPURL(raw string, allowPath bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q: host is missing", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q: must not contain credentials, a query or a fragment", raw)
	}
	if !allowPath && u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("%q: an origin has no path", raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OriginOf returns scheme://host of a URL, or "" if it does not parse.
func OriginOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

func (r Retention) validate() error {
	switch {
	case r.ThreadsDays < 0 || r.ThreadsDays > 36500:
		return fmt.Errorf("config: retention.threads_days must be between 0 (keep forever) and 36500")
	case r.ActiveIdleDays < 0 || r.ActiveIdleDays > 36500:
		return fmt.Errorf("config: retention.active_idle_days must be between 0 (never) and 36500")
	case r.SweepInterval < time.Second:
		return fmt.Errorf("config: retention.sweep_interval must be at least 1s")
	case r.BatchSize < 1 || r.BatchSize > 1000:
		return fmt.Errorf("config: retention.batch_size must be between 1 and 1000")
	case r.BatchPause < 0:
		return fmt.Errorf("config: retention.batch_pause must not be negative")
	case r.StepRefusals < time.Hour || r.StepRefusals > 3650*24*time.Hour:
		return fmt.Errorf("config: retention.step_refusals must be between 1h and 87600h (10 years)")
	}
	return nil
}

func (a *Alerts) validate() error {
	var hosts []string
	for _, h := range a.AllowedHosts {
		for _, one := range strings.Split(h, ",") {
			if one = strings.TrimSpace(one); one != "" {
				hosts = append(hosts, one)
			}
		}
	}
	a.AllowedHosts = hosts
	switch {
	case a.SweepInterval < time.Second:
		return fmt.Errorf("config: alerts.sweep_interval must be at least 1s")
	case a.SilentAfter < 0:
		return fmt.Errorf("config: alerts.silent_after must not be negative (0 turns it off)")
	case a.PollInterval < 10*time.Millisecond:
		return fmt.Errorf("config: alerts.poll_interval must be at least 10ms")
	case a.Timeout < 100*time.Millisecond || a.Timeout > 5*time.Minute:
		return fmt.Errorf("config: alerts.timeout must be between 100ms and 5m")
	case a.RetryBase < 10*time.Millisecond || a.RetryMax < a.RetryBase:
		return fmt.Errorf("config: alerts.retry_base must be at least 10ms and alerts.retry_max at least alerts.retry_base")
	case a.MaxAttempts < 1 || a.MaxAttempts > 100:
		return fmt.Errorf("config: alerts.max_attempts must be between 1 and 100")
	case a.Concurrency < 1 || a.Concurrency > 64:
		return fmt.Errorf("config: alerts.concurrency must be between 1 and 64")
	case a.DeliveryLogRetention < time.Hour:
		return fmt.Errorf("config: alerts.delivery_log_retention must be at least 1h")
	}
	return nil
}
