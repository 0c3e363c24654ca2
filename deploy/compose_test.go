package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/config"
)

type composeService struct {
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	Environment map[string]string `json:"environment"`
	DependsOn   map[string]string `json:"depends_on"`
	Healthcheck []string          `json:"healthcheck"`
	Volumes     []string          `json:"volumes"`
}

// The compose file loads as `docker compose config` would (compose-go:
// interpolation, the Compose specification's schema), with the example
// environment filled in; the engine waits for a healthy PostgreSQL, checks
// itself with its own binary, keeps its data in volumes, and its settings
// are ones the engine accepts.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile("compose.env.example")
	if err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(t.TempDir(), "env")
	filled := strings.Replace(string(example), "HASH_CHAIN_SECRET=\n", "HASH_CHAIN_SECRET=0123456789abcdef0123456789abcdef\n", 1)
	if filled == string(example) {
		t.Fatal("compose.env.example has no empty HASH_CHAIN_SECRET= line to fill")
	}
	if err := os.WriteFile(envFile, []byte(filled), 0o600); err != nil {
		t.Fatal(err)
	}
	var services []composeService
	if err := json.Unmarshal(runCheck(t, "compose", "compose.yaml", envFile), &services); err != nil {
		t.Fatal(err)
	}
	byName := map[string]composeService{}
	for _, s := range services {
		byName[s.Name] = s
	}
	engine, pg := byName["engine"], byName["postgres"]
	if engine.Name == "" || pg.Name == "" {
		t.Fatalf("services %v: want engine and postgres", services)
	}
	if engine.DependsOn["postgres"] != "service_healthy" || len(pg.Healthcheck) == 0 {
		t.Errorf("engine depends on %v, postgres health check %v: the engine must wait for a healthy database", engine.DependsOn, pg.Healthcheck)
	}
	if strings.Join(engine.Healthcheck, " ") != "CMD /usr/local/bin/threadengine healthcheck" {
		t.Errorf("engine health check %v", engine.Healthcheck)
	}
	for _, s := range []composeService{engine, pg} {
		if len(s.Volumes) == 0 {
			t.Errorf("%s keeps its data in no volume", s.Name)
		}
	}
	var env []string
	for k, v := range engine.Environment {
		env = append(env, k+"="+v)
	}
	cfg, err := config.Load("", env)
	if err != nil {
		t.Fatalf("engine environment %v: %v", env, err)
	}
	if !strings.HasPrefix(cfg.Database.URL, "postgres://threadengine:change-me@postgres:5432/") {
		t.Errorf("database.url %q", cfg.Database.URL)
	}

	// Without the secret, compose refuses to start (the file says why).
	noSecret := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(noSecret, example, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := tryCheck(t, "compose", "compose.yaml", noSecret); err == nil || !strings.Contains(stderr, "HASH_CHAIN_SECRET") {
		t.Errorf("compose without HASH_CHAIN_SECRET: %v %s", err, stderr)
	}
}
