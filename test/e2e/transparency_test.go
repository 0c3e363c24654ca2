package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginebin"
	"github.com/threadengine/engine/test/enginetest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// engineBinary builds cmd/threadengine once per test run.
func engineBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "threadengine-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "threadengine")
		binErr = enginebin.Build("", binPath)
	})
	if binErr != nil {
		t.Fatalf("building the engine: %v", binErr)
	}
	return binPath
}

// verifiers are the two offline verifiers: the engine's CLI and the
// independent Node.js one written from docs/integrators/verification.md.
type verifierRun struct {
	name string
	run  func(export, keys, saved string) (string, bool)
}

func offlineVerifiers(t *testing.T) []verifierRun {
	bin := engineBinary(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node (20 or later) is needed for the independent verifier (.ci/run installs it)")
	}
	run := func(name string, args ...string) (string, bool) {
		cmd := exec.Command(name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err == nil
	}
	return []verifierRun{
		{"threadengine verify", func(export, keys, saved string) (string, bool) {
			args := []string{"verify", export, "--log-key", keys}
			if saved != "" {
				args = append(args, "--checkpoint", saved)
			}
			return run(bin, args...)
		}},
		{"node verify.mjs", func(export, keys, saved string) (string, bool) {
			args := []string{"../verify/verify.mjs", export, keys}
			if saved != "" {
				args = append(args, saved)
			}
			return run(node, args...)
		}},
	}
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The end to end: steps written over the WebSocket, the log's key and
// a checkpoint fetched without credentials, more steps, an invited
// observer's party-scoped key fetching the export with a consistency proof;
// both offline verifiers accept it, and reject a changed value, a withheld
// step, a wrong key and a forged consistency proof, naming what failed.
func TestExportVerifiesOfflineWithTwoVerifiers(t *testing.T) {
	t.Parallel()
	verifiers := offlineVerifiers(t)
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, memberKey := e.NewUser(t, domain.RoleMember)
		auditorKey, _ := newServiceKey(t, e, "auditor", "party")
		c := connectWS(t, e, memberKey)
		tid := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{"order": "O-27"}})["threadId"].(string)
		s := step(tid, "pay", "success", "p1", map[string]any{"order": "O-27", "note": "ünïcode <&>"})
		// The example, and RFC 8785's tricky numbers.
		s["threadify_metadata"] = map[string]any{"small": 1e-7, "html": "<x>&", "big": 1e21, "neg": math.Copysign(0, -1), "third": 1.0 / 3}
		s["subSteps"] = []map[string]any{{"name": "auth", "status": "success", "payload": map[string]any{"n": 2.5}},
			{"name": "capture", "status": "success"}}
		c.ok(s)

		resp, keys := e.Do(t, http.MethodGet, "/v1/log/keys", "", nil)
		wantStatus(t, resp, keys, http.StatusOK)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("keys content type %q", ct)
		}
		if _, err := note.NewVerifier(strings.Split(strings.TrimSpace(string(keys)), "\n")[0]); err != nil {
			t.Fatalf("published key %q: %v", keys, err)
		}
		resp, saved := e.Do(t, http.MethodGet, "/v1/log/checkpoint", "", nil)
		wantStatus(t, resp, saved, http.StatusOK)
		savedSize := strings.Split(string(saved), "\n")[1]

		c.ok(step(tid, "ship", "success", "s1", nil))
		c.ok(step(tid, "ship", "success", "s2", nil))
		tok := c.ok(map[string]any{"action": "inviteParty", "threadId": tid, "role": "auditor", "accessLevel": "observer"})["threadToken"].(string)
		connectWS(t, e, auditorKey).ok(map[string]any{"action": "joinThread", "threadToken": tok})

		resp, body := e.Do(t, http.MethodGet, "/v1/threads/"+tid+"/export?since="+savedSize, auditorKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		keyFile, savedFile := writeFile(t, "log.keys", keys), writeFile(t, "saved.checkpoint", saved)
		exportFile := writeFile(t, "thread.json", body)
		for _, v := range verifiers {
			if out, ok := v.run(exportFile, keyFile, savedFile); !ok || !strings.Contains(out, "ok   thread "+tid) {
				t.Fatalf("%s rejects the export:\n%s", v.name, out)
			}
		}

		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		attempts := doc["attempts"].([]any)
		mutated := func(name string, edit func(d map[string]any)) string {
			var d map[string]any
			_ = json.Unmarshal(body, &d)
			edit(d)
			b, _ := json.Marshal(d)
			return writeFile(t, name, b)
		}
		cases := []struct {
			name, file, saved, keys string
			want                    []string // each verifier's output names one of these
		}{
			{"changed metadata", mutated("changed.json", func(d map[string]any) {
				a := d["attempts"].([]any)[0].(map[string]any)
				a["metadata"].(map[string]any)["small"] = 2e-7
			}), "", keyFile, []string{"seq 1"}},
			{"newest step withheld", mutated("withheld.json", func(d map[string]any) {
				d["attempts"] = d["attempts"].([]any)[:len(attempts)-1]
			}), "", keyFile, []string{"seq 3"}},
			{"wrong key", exportFile, "", writeFile(t, "other.keys", []byte(otherKey(t)+"\n")), []string{"signature", "checkpoint"}},
			{"forged consistency proof", mutated("forged.json", func(d map[string]any) {
				p := d["log"].(map[string]any)["consistency"].(map[string]any)["proof"].([]any)
				if len(p) > 0 {
					p[0] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
				}
			}), savedFile, keyFile, []string{"rewritten"}},
		}
		for _, tc := range cases {
			for _, v := range verifiers {
				out, ok := v.run(tc.file, tc.keys, tc.saved)
				named := false
				for _, w := range tc.want {
					named = named || strings.Contains(out, w)
				}
				if ok || !named {
					t.Errorf("%s, %s: passed=%v, output does not name %v:\n%s", tc.name, v.name, ok, tc.want, out)
				}
			}
		}

		// The log endpoints: proofs by leaf (public) and by step (the thread's readers only).
		resp, body = e.Do(t, http.MethodGet, "/v1/log/proof/consistency?old="+savedSize, "", nil)
		wantStatus(t, resp, body, http.StatusOK)
		stepID := attempts[0].(map[string]any)["id"].(string)
		resp, body = e.Do(t, http.MethodGet, "/v1/log/proof/inclusion?step="+stepID, auditorKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		resp, body = e.Do(t, http.MethodGet, "/v1/log/proof/inclusion?step="+stepID, "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
		other, _ := newServiceKey(t, e, "stranger", "party")
		resp, body = e.Do(t, http.MethodGet, "/v1/log/proof/inclusion?step="+stepID, other, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		resp, body = e.Do(t, http.MethodGet, "/v1/log/proof/inclusion?leaf=0&size=99999999", "", nil)
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
		n, _ := strconv.Atoi(savedSize)
		resp, body = e.Do(t, http.MethodGet, "/v1/log/checkpoint?size="+strconv.Itoa(n), "", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !bytes.Equal(body, saved) {
			t.Fatalf("checkpoint by size differs from the one saved:\n%s\n%s", body, saved)
		}
	})
}

func otherKey(t *testing.T) string {
	_, vkey, err := note.GenerateKey(rand.Reader, "someone.else/log")
	if err != nil {
		t.Fatal(err)
	}
	return vkey
}
