package devregistry

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadConfig(write("users:\n  - email: A@Example.com\n    password: pw\n    email_verified: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9096" || c.Users[0].Subject != SubjectFor("a@example.com") {
		t.Fatalf("defaults not applied: %+v", c)
	}
	for name, body := range map[string]string{
		"unknown key":     "userz: []\n",
		"no password":     "users:\n  - email: a@example.com\n",
		"duplicate email": "users:\n  - {email: a@example.com, password: x}\n  - {email: A@example.com, password: y}\n",
		"client secret":   "clients:\n  - id: x\n",
		"license key":     "licenses:\n  - account: x\n",
	} {
		if _, err := LoadConfig(write(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLicenseAPI(t *testing.T) {
	r, err := Start("127.0.0.1:0", Config{Licenses: []License{{Key: "k1", Account: "acme", OwnerEmail: "o@example.com", ManagedIdentity: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get := func(auth string) (*http.Response, LicenseResponse) {
		req, _ := http.NewRequest(http.MethodGet, r.Issuer()+LicensePath, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body LicenseResponse
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	if resp, _ := get(""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
	if resp, _ := get("Bearer nope"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d", resp.StatusCode)
	}
	resp, body := get("Bearer k1")
	if resp.StatusCode != http.StatusOK || body.Account != "acme" || !body.ManagedIdentity || body.Products == nil || body.Suspended {
		t.Fatalf("k1: %d %+v", resp.StatusCode, body)
	}
	r.PutLicense(License{Key: "k1", Account: "acme", Suspended: true})
	if _, body = get("Bearer k1"); !body.Suspended {
		t.Fatalf("suspension not reported: %+v", body)
	}
	// Discovery advertises the endpoints the engine uses.
	dresp, err := http.Get(r.Issuer() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer dresp.Body.Close()
	var disc map[string]any
	_ = json.NewDecoder(dresp.Body).Decode(&disc)
	for _, k := range []string{"authorization_endpoint", "token_endpoint", "userinfo_endpoint", "end_session_endpoint", "jwks_uri"} {
		if s, _ := disc[k].(string); !strings.HasPrefix(s, r.Issuer()) {
			t.Errorf("discovery %s = %v", k, disc[k])
		}
	}
	if m, _ := disc["code_challenge_methods_supported"].([]any); len(m) == 0 {
		t.Errorf("PKCE not advertised: %v", disc["code_challenge_methods_supported"])
	}
}
