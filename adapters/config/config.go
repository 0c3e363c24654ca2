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
)

// EnvPrefix starts every environment override.
const EnvPrefix = "THREADENGINE_"

// Config is the whole engine configuration.
type Config struct {
	Server   Server   `koanf:"server"`
	Database Database `koanf:"database"`
	Registry Registry `koanf:"registry"`
	Auth     Auth     `koanf:"auth"`
	Security Security `koanf:"security"`
	Log      Log      `koanf:"log"`
}

// Server configures the HTTP listener.
type Server struct {
	// Listen is host:port to bind.
	Listen string `koanf:"listen"`
	// PublicURL is the address clients reach the engine at; only advertised.
	PublicURL string `koanf:"public_url"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
}

// Database selects the store.
type Database struct {
	// URL is postgres://… (sslmode required) or sqlite://path; empty means
	// embedded SQLite at ./data/threadengine.db.
	URL string `koanf:"url"`
}

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
	// HashChainSecret keys the step hash chain (HMAC-SHA256). Empty means a
	// random secret generated on first start and kept in data/hash_chain.key.
	HashChainSecret string `koanf:"hash_chain_secret"`
}

// Log configures structured logging.
type Log struct {
	Level  string `koanf:"level"`  // debug, info, warn, error
	Format string `koanf:"format"` // text or json
}

// Defaults returns the configuration used when nothing is set.
func Defaults() Config {
	return Config{
		Server:   Server{Listen: "127.0.0.1:8081", ShutdownTimeout: 30 * time.Second},
		Registry: Registry{Product: "threadengine", CheckInterval: 15 * time.Minute},
		Auth:     Auth{SessionTTL: 8 * time.Hour, CacheTTL: 5 * time.Second},
		Log:      Log{Level: "info", Format: "text"},
	}
}

// Load reads defaults, then path (if non-empty; a missing file is an error),
// then the environment (environ as os.Environ returns it).
func Load(path string, environ []string) (Config, error) {
	k := koanf.New(".")
	d := Defaults()
	if err := k.Load(confmap.Provider(map[string]any{
		"server.listen":           d.Server.Listen,
		"server.shutdown_timeout": d.Server.ShutdownTimeout.String(),
		"registry.product":        d.Registry.Product,
		"registry.check_interval": d.Registry.CheckInterval.String(),
		"auth.session_ttl":        d.Auth.SessionTTL.String(),
		"auth.cache_ttl":          d.Auth.CacheTTL.String(),
		"log.level":               d.Log.Level,
		"log.format":              d.Log.Format,
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
	var c Config
	if err := k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, c.Validate()
}

var knownSections = map[string]bool{"server": true, "database": true, "registry": true, "auth": true, "security": true, "log": true}

var knownKeys = map[string]bool{
	"server.listen": true, "server.public_url": true, "server.shutdown_timeout": true,
	"database.url": true,
	"registry.url": true, "registry.license_key": true, "registry.browser_origin": true,
	"registry.client_id": true, "registry.client_secret": true, "registry.product": true, "registry.check_interval": true,
	"auth.session_ttl": true, "auth.cache_ttl": true,
	"security.hash_chain_secret": true,
	"log.level":                  true, "log.format": true,
}

// checkKnownKeys refuses typos: an unknown key would otherwise be silently ignored.
func checkKnownKeys(k *koanf.Koanf) error {
	for _, key := range k.Keys() {
		if !knownKeys[key] {
			return fmt.Errorf("config: unknown key %q", key)
		}
	}
	return nil
}

// Validate checks every value and names the offending key.
func (c *Config) Validate() error {
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
	if c.Server.ShutdownTimeout <= 0 {
		return fmt.Errorf("config: server.shutdown_timeout must be positive")
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
	if c.Security.HashChainSecret != "" && len(c.Security.HashChainSecret) < 32 {
		return fmt.Errorf("config: security.hash_chain_secret must be at least 32 characters")
	}
	return nil
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
