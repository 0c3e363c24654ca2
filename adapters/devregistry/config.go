// Package devregistry is a small but real identity registry for development
// and tests: an OpenID Provider (discovery, JWKS, authorization code + PKCE,
// userinfo, end-session) built on zitadel/oidc's op package, a password login
// page for users listed in a YAML file, and the license API the engine polls.
// State lives in memory; it is not meant for production.
package devregistry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is the YAML file cmd/devregistry reads.
type Config struct {
	// Listen is host:port; default 127.0.0.1:9096.
	Listen string `yaml:"listen"`
	// Issuer is the public base URL; default http://<listen>.
	Issuer   string    `yaml:"issuer"`
	Clients  []Client  `yaml:"clients"`
	Users    []User    `yaml:"users"`
	Licenses []License `yaml:"licenses"`
}

// Client is a registered relying party (the engine).
type Client struct {
	ID     string `yaml:"id"`
	Secret string `yaml:"secret"`
	// RedirectURIs are exact; RedirectURIGlobs use path.Match syntax, e.g.
	// "http://127.0.0.1:*/auth/callback" for engines on random test ports.
	RedirectURIs               []string `yaml:"redirect_uris"`
	RedirectURIGlobs           []string `yaml:"redirect_uri_globs"`
	PostLogoutRedirectURIs     []string `yaml:"post_logout_redirect_uris"`
	PostLogoutRedirectURIGlobs []string `yaml:"post_logout_redirect_uri_globs"`
}

// User is a person who can sign in on the registry's login page.
type User struct {
	// Subject is the stable OIDC "sub"; default derived from the email.
	Subject       string `yaml:"subject"`
	Email         string `yaml:"email"`
	EmailVerified bool   `yaml:"email_verified"`
	Name          string `yaml:"name"`
	Password      string `yaml:"password"`
}

// License is what the license API reports for one license key.
type License struct {
	Key             string   `yaml:"key"`
	Account         string   `yaml:"account"`
	OwnerEmail      string   `yaml:"owner_email"`
	Products        []string `yaml:"products"`
	ManagedIdentity bool     `yaml:"managed_identity"`
	Suspended       bool     `yaml:"suspended"`
}

// LoadConfig reads and checks a YAML config file.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, c.normalize()
}

func (c *Config) normalize() error {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:9096"
	}
	seen := map[string]bool{}
	for i := range c.Users {
		u := &c.Users[i]
		u.Email = strings.TrimSpace(u.Email)
		if u.Email == "" || !strings.Contains(u.Email, "@") {
			return fmt.Errorf("users[%d]: a valid email is required", i)
		}
		if u.Password == "" {
			return fmt.Errorf("users[%d] (%s): password is required", i, u.Email)
		}
		if u.Subject == "" {
			u.Subject = SubjectFor(u.Email)
		}
		if seen[strings.ToLower(u.Email)] {
			return fmt.Errorf("users[%d]: duplicate email %s", i, u.Email)
		}
		seen[strings.ToLower(u.Email)] = true
	}
	for i, cl := range c.Clients {
		if cl.ID == "" || cl.Secret == "" {
			return fmt.Errorf("clients[%d]: id and secret are required", i)
		}
	}
	for i, l := range c.Licenses {
		if l.Key == "" {
			return fmt.Errorf("licenses[%d]: key is required", i)
		}
	}
	return nil
}

// SubjectFor is the default subject of an email: stable across restarts, so
// the engine's identity bindings survive a devregistry restart.
func SubjectFor(email string) string {
	h := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return "dev-" + hex.EncodeToString(h[:8])
}
