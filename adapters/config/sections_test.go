package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestThreadsAndContractsSections(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Threads.InvitationMaxTTL != 30*24*time.Hour || c.Contracts.Classifier.URL != "" || c.Contracts.Classifier.Timeout != 10*time.Second {
		t.Fatalf("defaults: %+v %+v", c.Threads, c.Contracts)
	}
	// Days are accepted from the environment and from a file.
	c, err = Load("", []string{"THREADENGINE_THREADS__INVITATION_MAX_TTL=90d",
		"THREADENGINE_CONTRACTS__CLASSIFIER__URL=http://127.0.0.1:9/v1", "THREADENGINE_CONTRACTS__CLASSIFIER__MODEL=m",
		"THREADENGINE_CONTRACTS__CLASSIFIER__KEY=k", "THREADENGINE_CONTRACTS__CLASSIFIER__TIMEOUT=3s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Threads.InvitationMaxTTL != 90*24*time.Hour || c.Contracts.Classifier != (Classifier{URL: "http://127.0.0.1:9/v1", Model: "m", Key: "k", Timeout: 3 * time.Second}) {
		t.Fatalf("env: %+v %+v", c.Threads, c.Contracts)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("threads:\n  invitation_max_ttl: 7d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(p, nil); err != nil || c.Threads.InvitationMaxTTL != 7*24*time.Hour {
		t.Fatalf("file: %v %v", c.Threads, err)
	}
	bad := map[string]string{
		"THREADENGINE_THREADS__INVITATION_MAX_TTL=0s":       "threads.invitation_max_ttl",
		"THREADENGINE_THREADS__INVITATION_MAX_TTL=400d":     "threads.invitation_max_ttl",
		"THREADENGINE_THREADS__INVITATION_TTL=1d":           "threads.invitation_ttl",
		"THREADENGINE_CONTRACTS__CLASSIFIER__URL=ftp://x":   "contracts.classifier.url",
		"THREADENGINE_CONTRACTS__CLASSIFIER__MODEL=m":       "contracts.classifier.url",
		"THREADENGINE_CONTRACTS__CLASSIFIER__TIMEOUT=0s":    "contracts.classifier.timeout",
		"THREADENGINE_CONTRACTS__CLASSIFIER__URL=http://x/": "contracts.classifier.model",
	}
	for env, key := range bad {
		if _, err := Load("", []string{env}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v does not name %s", env, err, key)
		}
	}
}

// The transparency section is read from a file and the environment (it
// was refused in a file and ignored in the environment before witnesses);
// witnesses are off by default, and a bad URL or key names the key.
func TestTransparencySection(t *testing.T) {
	c, err := Load("", nil)
	if err != nil || len(c.Transparency.Witnesses) != 0 || c.Transparency.CheckpointInterval != time.Second {
		t.Fatalf("defaults: %+v %v", c.Transparency, err)
	}
	const key = "witness.example/w1+122834fe+BCZ1KxGsLBUOXVif4ZgYNhpFDqSTPA0qNgtgs4TNFMno"
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("transparency:\n  origin: example.com/log\n  witnesses:\n    - url: http://127.0.0.1:9\n      key: "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(p, []string{"THREADENGINE_TRANSPARENCY__CHECKPOINT_INTERVAL=250ms"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Transparency.Origin != "example.com/log" || c.Transparency.CheckpointInterval != 250*time.Millisecond ||
		len(c.Transparency.Witnesses) != 1 || c.Transparency.Witnesses[0] != (Witness{URL: "http://127.0.0.1:9", Key: key}) {
		t.Fatalf("loaded %+v", c.Transparency)
	}
	for body, want := range map[string]string{
		"transparency:\n  witnesses:\n    - url: ftp://x\n      key: " + key + "\n":       "transparency.witnesses[0].url",
		"transparency:\n  witnesses:\n    - url: http://x\n      key: not-a-key\n":        "transparency.witnesses[0].key",
		"transparency:\n  witnesses:\n    - url: http://x\n      key: " + key[:40] + "\n": "transparency.witnesses[0].key",
	} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%q: %v", body, err)
		}
	}
}
