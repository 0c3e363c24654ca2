package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:8081" || c.Database.URL != "" || c.Auth.SessionTTL != 8*time.Hour || c.Auth.CacheTTL != 5*time.Second {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestFileThenEnvOverride(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("server:\n  listen: 127.0.0.1:9000\n  public_url: https://eng.example.com/\nauth:\n  session_ttl: 2h\n"), 0o600)
	c, err := Load(p, []string{"THREADENGINE_SERVER__LISTEN=127.0.0.1:9100", "THREADENGINE_REGISTRY__LICENSE_KEY=lk", "OTHER=1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:9100" {
		t.Errorf("env did not override file: %s", c.Server.Listen)
	}
	if c.Server.PublicURL != "https://eng.example.com" {
		t.Errorf("public_url not normalised: %s", c.Server.PublicURL)
	}
	if c.Database.MaxConns != 25 {
		t.Errorf("database.max_conns default %d, want 25", c.Database.MaxConns)
	}
	if c2, err := Load("", []string{"THREADENGINE_DATABASE__MAX_CONNS=10"}); err != nil || c2.Database.MaxConns != 10 {
		t.Errorf("database.max_conns from the environment: %d, %v", c2.Database.MaxConns, err)
	}
	if c.Auth.SessionTTL != 2*time.Hour || c.Registry.LicenseKey != "lk" {
		t.Errorf("values not loaded: %+v", c)
	}
}

func TestInvalidValuesNameTheKey(t *testing.T) {
	cases := map[string]string{
		"THREADENGINE_SERVER__LISTEN=nonsense":                     "server.listen",
		"THREADENGINE_SERVER__PUBLIC_URL=ftp://x":                  "server.public_url",
		"THREADENGINE_AUTH__SESSION_TTL=-1h":                       "auth.session_ttl",
		"THREADENGINE_AUTH__SESSION_TTL=soon":                      "session_ttl",
		"THREADENGINE_AUTH__CACHE_TTL=-1s":                         "auth.cache_ttl",
		"THREADENGINE_AUTH__CACHE_TTL=2m":                          "auth.cache_ttl",
		"THREADENGINE_REGISTRY__BROWSER_ORIGIN=http://example.com": "registry.browser_origin",
		"THREADENGINE_REGISTRY__BROWSER_ORIGIN=https://x.io/path":  "registry.browser_origin",
		"THREADENGINE_LOG__LEVEL=loud":                             "log.level",
		"THREADENGINE_SERVER__LISTN=127.0.0.1:1":                   "server.listn",
		"THREADENGINE_SECURITY__HASH_CHAIN_SECRET=short":           "security.hash_chain_secret",
		"THREADENGINE_DATABASE__MAX_CONNS=3":                       "database.max_conns",
	}
	for env, key := range cases {
		_, err := Load("", []string{env})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v does not name %s", env, err, key)
		}
	}
}

func TestAuthCacheTTLZeroDisables(t *testing.T) {
	c, err := Load("", []string{"THREADENGINE_AUTH__CACHE_TTL=0"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth.CacheTTL != 0 {
		t.Fatalf("cache_ttl = %v, want 0", c.Auth.CacheTTL)
	}
}

func TestUnrelatedPrefixedVariablesAreIgnored(t *testing.T) {
	if _, err := Load("", []string{"THREADENGINE_API_KEY=td_x", "THREADENGINE_TEST_POSTGRES_URL=postgres://x", "THREADENGINE_CONFIG=/x"}); err != nil {
		t.Fatalf("non-config variables rejected: %v", err)
	}
}

func TestMissingFileFails(t *testing.T) {
	if _, err := Load("/nonexistent/threadengine.yaml", nil); err == nil {
		t.Fatal("missing config file accepted")
	}
}

func TestLimitsDefaultsAndOverrides(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits != DefaultLimits() {
		t.Fatalf("limits = %+v, want the defaults", c.Limits)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("server:\n  trusted_proxies: [10.0.0.0/8, 192.168.1.7]\nlimits:\n  ws:\n    max_sockets: 5\n  otlp:\n    max_concurrent: 1\n"), 0o600)
	c, err = Load(p, []string{"THREADENGINE_LIMITS__WS__CONNECT_TIMEOUT=3s", "THREADENGINE_LIMITS__HTTP__READ_TIMEOUT=2s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.WS.MaxSockets != 5 || c.Limits.OTLP.MaxConcurrent != 1 || c.Limits.WS.ConnectTimeout != 3*time.Second ||
		c.Limits.HTTP.ReadTimeout != 2*time.Second || c.Limits.WS.MaxSubscriptions != DefaultLimits().WS.MaxSubscriptions {
		t.Errorf("limits not overridden key by key: %+v", c.Limits)
	}
	if len(c.Server.TrustedProxies) != 2 {
		t.Errorf("trusted_proxies = %v", c.Server.TrustedProxies)
	}
	c, err = Load("", []string{"THREADENGINE_SERVER__TRUSTED_PROXIES=10.0.0.1,fd00::/8"})
	if err != nil || len(c.Server.TrustedProxies) != 2 {
		t.Errorf("trusted_proxies from env = %v, %v", c.Server.TrustedProxies, err)
	}
	for env, key := range map[string]string{
		"THREADENGINE_LIMITS__WS__MAX_SOCKETS=0":            "limits.ws.max_sockets",
		"THREADENGINE_LIMITS__HTTP__READ_TIMEOUT=-1s":       "limits.http.read_timeout",
		"THREADENGINE_LIMITS__WS__MAX_SOKETS=1":             "limits.ws.max_sokets",
		"THREADENGINE_SERVER__TRUSTED_PROXIES=proxy.local":  "server.trusted_proxies",
		"THREADENGINE_LIMITS__OTLP__MAX_DECODED_BYTES=1000": "limits.otlp.max_decoded_bytes",
	} {
		if _, err := Load("", []string{env}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v does not name %s", env, err, key)
		}
	}
}

func TestPprofListenOnlyOnLoopback(t *testing.T) {
	c, err := Load("", []string{"THREADENGINE_SERVER__PPROF_LISTEN=127.0.0.1:6060"})
	if err != nil || c.Server.PprofListen != "127.0.0.1:6060" {
		t.Fatalf("pprof_listen = %q, %v", c.Server.PprofListen, err)
	}
	if c, _ := Load("", nil); c.Server.PprofListen != "" {
		t.Errorf("the profiler is on by default: %q", c.Server.PprofListen)
	}
	for _, v := range []string{"0.0.0.0:6060", ":6060", "10.0.0.1:6060", "6060"} {
		if _, err := Load("", []string{"THREADENGINE_SERVER__PPROF_LISTEN=" + v}); err == nil || !strings.Contains(err.Error(), "server.pprof_listen") {
			t.Errorf("%s: error %v does not refuse it naming server.pprof_listen", v, err)
		}
	}
}
