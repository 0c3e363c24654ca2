package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
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
	"github.com/threadengine/engine/test/enginetest"
)

// syncBuffer is a process's output, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The witness end to end, with real processes: `threadengine witness` is an
// HTTP server; an engine configured with it gets its checkpoints cosigned
// (served with the cosignature, verifiable with the witness's key); a copy
// of the engine's database that goes on with another history (a fork of
// the log, signed with the same key) is refused: 409 for another tree of a
// size the witness cosigned, 422 for a larger one not consistent with it,
// and its checkpoints carry no cosignature.
func TestWitnessCosignsAndRefusesAFork(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the engine binary")
	}
	bin := engineBinary(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THREADENGINE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "THREADENGINE_LOG__LEVEL=warn", "THREADENGINE_TRANSPARENCY__CHECKPOINT_INTERVAL=100ms")
	dirA := t.TempDir()
	envA := append(env, "THREADENGINE_DATABASE__URL=sqlite://"+filepath.Join(dirA, "te.db"))
	boot := exec.Command(bin, "bootstrap-owner", "--email", "owner@example.com")
	boot.Env, boot.Dir = envA, dirA
	out, err := boot.Output()
	if err != nil {
		t.Fatalf("bootstrap-owner: %v", err)
	}
	fields := strings.Fields(strings.TrimSpace(string(out)))
	owner := fields[len(fields)-1]

	// The log's key, from a first start of the engine.
	a, addrA := startEngine(t, bin, dirA, envA)
	engA := &enginetest.Engine{URL: "http://" + addrA, AdminKey: owner}
	resp, logKeys := engA.Do(t, http.MethodGet, "/v1/log/keys", "", nil)
	wantStatus(t, resp, logKeys, http.StatusOK)
	logKey := strings.Split(strings.TrimSpace(string(logKeys)), "\n")[0]
	logVerifier, err := note.NewVerifier(logKey)
	if err != nil {
		t.Fatal(err)
	}
	stop(a)

	// The witness: a real process and HTTP server.
	wdir := t.TempDir()
	wout := &syncBuffer{}
	wcmd := exec.Command(bin, "witness", "--key", filepath.Join(wdir, "witness.key"), "--state", filepath.Join(wdir, "state.json"),
		"--log-key", logKey, "--listen", "127.0.0.1:0", "--name", "witness.example/w1")
	wcmd.Env, wcmd.Stderr = env, wout
	if err := wcmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wcmd.Process.Kill(); _, _ = wcmd.Process.Wait() })
	pollUntil(t, "the witness serving", func() bool { return strings.Contains(wout.String(), "witness: serving") })
	// It logs the address it bound (JSON): {"msg":"witness: serving","addr":"127.0.0.1:…",…}
	var serving struct{ Addr string }
	for _, line := range strings.Split(wout.String(), "\n") {
		if strings.Contains(line, "witness: serving") {
			if err := json.Unmarshal([]byte(line), &serving); err != nil {
				t.Fatalf("witness log line %q: %v", line, err)
			}
		}
	}
	waddr := serving.Addr
	wkeyRaw, err := os.ReadFile(filepath.Join(wdir, "witness.key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	wkey := strings.TrimSpace(string(wkeyRaw))
	witnessVerifier, err := domain.NewCosignatureVerifier(wkey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("transparency:\n  witnesses:\n    - url: http://"+waddr+"\n      key: "+wkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withWitness := func(e []string) []string { return append(append([]string{}, e...), "THREADENGINE_CONFIG="+cfg) }

	// cosigned: the latest checkpoint of e, once the witness cosigned its
	// size (at least min).
	cosigned := func(e *enginetest.Engine, min int64) string {
		var cp string
		pollUntil(t, "a cosigned checkpoint", func() bool {
			resp, body := e.Do(t, http.MethodGet, "/v1/log/checkpoint", "", nil)
			if resp.StatusCode != http.StatusOK {
				return false
			}
			n, err := note.Open(body, note.VerifierList(logVerifier, witnessVerifier))
			if err != nil || len(n.Sigs) != 2 {
				return false
			}
			size, _ := strconv.ParseInt(strings.Split(string(body), "\n")[1], 10, 64)
			cp = string(body)
			return size >= min
		})
		return cp
	}
	write := func(e *enginetest.Engine, key string, n int, tag string) string {
		c := connectWS(t, e, key)
		tid := c.ok(map[string]any{"action": "startThread", "label": tag})["threadId"].(string)
		for i := 0; i < n; i++ {
			c.ok(step(tid, "s", "success", tag+strconv.Itoa(i), nil))
		}
		return tid
	}
	// verify runs the offline verifier on e's export of tid, requiring the
	// witness's cosignature.
	keyFile := writeFile(t, "log.keys", logKeys)
	verify := func(e *enginetest.Engine, tid string) (string, bool) {
		resp, body := e.Do(t, http.MethodGet, "/v1/threads/"+tid+"/export", owner, nil)
		wantStatus(t, resp, body, http.StatusOK)
		out, err := exec.Command(bin, "verify", writeFile(t, "export-"+tid+".json", body), "--log-key", keyFile,
			"--witness-key", wkey).CombinedOutput()
		return string(out), err == nil
	}
	size := func(cp string) int64 {
		n, _ := strconv.ParseInt(strings.Split(cp, "\n")[1], 10, 64)
		return n
	}

	a, addrA = startEngine(t, bin, dirA, withWitness(envA))
	engA.URL = "http://" + addrA
	key, _ := (&replicaSet{addrs: []string{addrA}, ownerKey: owner}).newKey(t, 0, "svc")
	write(engA, key, 3, "a")
	first := cosigned(engA, 3)
	write(engA, key, 2, "a2")
	second := cosigned(engA, size(first)+2) // the witness moved on through a consistency proof
	stop(a)

	// The fork: a copy of the database at this point, going on differently.
	dirB := t.TempDir()
	for _, name := range []string{"te.db", "te.db-wal", "te.db-shm"} {
		if raw, err := os.ReadFile(filepath.Join(dirA, name)); err == nil {
			if err := os.WriteFile(filepath.Join(dirB, name), raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, addrA = startEngine(t, bin, dirA, withWitness(envA)) // stopped by its cleanup
	engA.URL = "http://" + addrA
	tidA := write(engA, key, 3, "a3")
	third := cosigned(engA, size(second)+3)
	if out, ok := verify(engA, tidA); !ok || !strings.Contains(out, "ok   thread "+tidA) {
		t.Fatalf("the honest log's export with the witness required:\n%s", out)
	}

	envB := append(env, "THREADENGINE_DATABASE__URL=sqlite://"+filepath.Join(dirB, "te.db"))
	b, addrB := startEngine(t, bin, dirB, envB) // without the witness at first
	engB := &enginetest.Engine{URL: "http://" + addrB, AdminKey: owner}
	write(engB, key, 3, "b") // other steps: the same size as third, another tree
	var forked []byte
	pollUntil(t, "the fork's checkpoint of the witnessed size", func() bool {
		var resp *http.Response
		resp, forked = engB.Do(t, http.MethodGet, "/v1/log/checkpoint?size="+strconv.FormatInt(size(third), 10), "", nil)
		return resp.StatusCode == http.StatusOK
	})
	if _, err := note.Open(forked, note.VerifierList(logVerifier)); err != nil || string(forked) == third {
		t.Fatalf("the fork's checkpoint: %v (same as the witnessed one: %v)", err, string(forked) == third)
	}
	post := func(body string) (int, string, string) {
		resp, err := http.Post("http://"+waddr+"/add-checkpoint", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	// Another tree of the size the witness cosigned: 409.
	if code, _, body := post("old " + strconv.FormatInt(size(third), 10) + "\n\n" + string(forked)); code != http.StatusConflict {
		t.Fatalf("a forked checkpoint of the cosigned size: %d %s", code, body)
	}
	// A stale old size: 409 with the witness's size.
	if code, ct, body := post("old 0\n\n" + string(forked)); code != http.StatusConflict || ct != "text/x.tlog.size" ||
		body != strconv.FormatInt(size(third), 10)+"\n" {
		t.Fatalf("old size 0: %d %q %q", code, ct, body)
	}
	if code, _, body := post("old 0\n\nunknown.example/log\n1\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"); code != http.StatusNotFound {
		t.Fatalf("an unknown log: %d %s", code, body)
	}
	// The fork grows past the witness's size, and its engine, now configured
	// with the witness, submits its checkpoint with a consistency proof from
	// the witness's size: 422, no cosignature.
	stop(b)
	_, addrB = startEngine(t, bin, dirB, withWitness(envB)) // stopped by its cleanup
	engB.URL = "http://" + addrB
	tidB := write(engB, key, 2, "b2")
	pollUntil(t, "the witness refusing the fork's engine", func() bool { return strings.Contains(wout.String(), `"status":422`) })
	resp, ckB := engB.Do(t, http.MethodGet, "/v1/log/checkpoint", "", nil)
	wantStatus(t, resp, ckB, http.StatusOK)
	forkSize := size(string(ckB))
	if forkSize <= size(third) {
		t.Fatalf("fork size %d, witnessed %d", forkSize, size(third))
	}
	if n, err := note.Open(ckB, note.VerifierList(witnessVerifier)); err == nil {
		t.Fatalf("the fork's checkpoint is cosigned: %v", n.Sigs)
	}
	if out, ok := verify(engB, tidB); ok || !strings.Contains(out, "no valid cosignature of witness witness.example/w1") {
		t.Fatalf("the fork's export passed with the witness required:\n%s", out)
	}
	// The same by hand, with the fork's own consistency proof.
	resp, proofBody := engB.Do(t, http.MethodGet, "/v1/log/proof/consistency?old="+strconv.FormatInt(size(third), 10)+
		"&new="+strconv.FormatInt(forkSize, 10), "", nil)
	wantStatus(t, resp, proofBody, http.StatusOK)
	proof := decode[struct {
		Proof []string `json:"proof"`
	}](t, proofBody).Proof
	req := "old " + strconv.FormatInt(size(third), 10) + "\n"
	for _, h := range proof {
		req += h + "\n"
	}
	if code, _, body := post(req + "\n" + string(ckB)); code != http.StatusUnprocessableEntity {
		t.Fatalf("a larger forked checkpoint with its consistency proof: %d %s", code, body)
	}
	// The honest log still gets cosigned after the refusals.
	write(engA, key, 1, "a4")
	cosigned(engA, size(third)+1)
}

// stop ends an engine process (SIGKILL: the database is consistent at
// every commit).
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_, _ = cmd.Process.Wait()
}
