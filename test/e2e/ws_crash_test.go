package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginebin"
	"github.com/threadengine/engine/test/enginetest"
)

const crashSecret = "crash-test-hash-chain-secret-0123456789"

// TestWSAckedStepsSurviveKill9 runs the real binary, writes steps over
// several connections, SIGKILLs the engine mid-stream, restarts it and checks
// that every step it acknowledged is stored, with an intact hash chain.
func TestWSAckedStepsSurviveKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the engine binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	bin := enginebin.Path(t)
	forEachDialectD(t, func(t *testing.T, d sqldb.Dialect) {
		dir := t.TempDir()
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "THREADENGINE_") { // e.g. the test-only Postgres URL is no config key
				env = append(env, kv)
			}
		}
		env = append(env, "THREADENGINE_DATABASE__URL="+sqldbtest.URL(t, d),
			"THREADENGINE_SECURITY__HASH_CHAIN_SECRET="+crashSecret, "THREADENGINE_LOG__LEVEL=warn",
			enginetest.MaxConnsEnv)
		boot := exec.Command(bin, "bootstrap-owner", "--email", "owner@example.com")
		boot.Env, boot.Dir = env, dir
		var bootErr bytes.Buffer
		boot.Stderr = &bootErr
		out, err := boot.Output()
		if err != nil {
			t.Fatalf("bootstrap-owner: %v: %s", err, bootErr.String())
		}
		lines := strings.Fields(strings.TrimSpace(string(out)))
		key := lines[len(lines)-1]

		proc, addr := startEngine(t, bin, dir, env)
		acked := writeUntilKilled(t, addr, key, proc)
		if len(acked) < 50 {
			t.Fatalf("only %d steps acknowledged before the kill", len(acked))
		}

		// Restart on the same database: it must come up (recovery), then stop it
		// cleanly and read the database directly.
		proc2, _ := startEngine(t, bin, dir, env)
		_ = proc2.Process.Signal(syscall.SIGTERM)
		_ = proc2.Wait()

		url := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "THREADENGINE_DATABASE__URL="); ok {
				url = v
			}
		}
		db, err := sqldb.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		threads := map[string]bool{}
		for stepID, threadID := range acked {
			var n int
			if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM thread_activities WHERE id = ? AND thread_id = ?`), stepID, threadID); err != nil || n != 1 {
				t.Fatalf("acknowledged step %s of thread %s is missing after kill -9 (%v)", stepID, threadID, err)
			}
			threads[threadID] = true
		}
		store := threadstore.New(db)
		for tid := range threads {
			acts, err := store.ListActivities(context.Background(), tid)
			if err != nil {
				t.Fatal(err)
			}
			links := make([]domain.ChainLink, len(acts))
			for i, a := range acts {
				links[i] = a.ChainLink()
			}
			if st := domain.VerifyChain(map[string][]byte{"1": []byte(crashSecret)}, links); !st.Verified {
				t.Fatalf("thread %s chain after crash: %+v", tid, st)
			}
		}
		// The transparency log holds every acknowledged step (appended in
		// the step's transaction), and its stored tree is whole: the tree
		// hash of its full size can be computed and every leaf is the one
		// the tree holds.
		ids := make([]string, 0, len(threads))
		for tid := range threads {
			ids = append(ids, tid)
		}
		leaves, err := store.ThreadLeaves(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		logged := map[string]bool{}
		for _, ls := range leaves {
			for _, l := range ls {
				if domain.LeafHash(l.Data) != l.Stored {
					t.Fatalf("leaf %d does not match the tree after kill -9", l.Index)
				}
				logged[l.Leaf.StepID] = true
			}
		}
		for stepID := range acked {
			if !logged[stepID] {
				t.Fatalf("acknowledged step %s is not in the transparency log after kill -9", stepID)
			}
		}
		st, err := store.LogState(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tlog.TreeHash(st.Size, store.Hashes(context.Background())); err != nil {
			t.Fatalf("log of size %d after kill -9: %v", st.Size, err)
		}
		t.Logf("%s: %d acknowledged steps on %d threads all present, and in the log, after kill -9", d, len(acked), len(threads))
	})
}

// startEngine runs "threadengine serve" on a port it picks itself (each
// start gets a new one) and returns once /healthz answers, with the address.
func startEngine(t *testing.T, bin, dir string, env []string) (*exec.Cmd, string) {
	t.Helper()
	anyPort, addressFile := enginetest.AnyPort(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env, cmd.Dir = append(append([]string{}, env...), anyPort...), dir
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if t.Failed() {
			t.Logf("engine log:\n%s", stderr.String())
		}
	})
	addr := enginetest.BoundAddr(t, addressFile, cmd.Process)
	// A hang guard, not a speed requirement: the machine may be shared.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd, addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("engine did not answer /healthz (its log follows)")
	return nil, ""
}

// writeUntilKilled pipelines steps on 4 connections and SIGKILLs the engine
// once 300 are acknowledged; it returns acknowledged step id → thread id.
func writeUntilKilled(t *testing.T, addr, key string, proc *exec.Cmd) map[string]string {
	var mu sync.Mutex
	acked := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	killed := make(chan struct{})
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			_ = proc.Process.Signal(syscall.SIGKILL)
			_, _ = proc.Process.Wait()
			close(killed)
		})
	}
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/threads", nil)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer conn.CloseNow()
			call := func(m map[string]any) map[string]any {
				b, _ := json.Marshal(m)
				if conn.Write(ctx, websocket.MessageText, b) != nil {
					return nil
				}
				_, data, err := conn.Read(ctx)
				if err != nil {
					return nil
				}
				var r map[string]any
				_ = json.Unmarshal(data, &r)
				return r
			}
			if r := call(map[string]any{"action": "connect", "apiKey": key}); r["status"] != "success" {
				t.Errorf("connect: %v", r)
				return
			}
			r := call(map[string]any{"action": "startThread", "refs": map[string]any{"label": fmt.Sprint("crash-", c)}})
			tid, _ := r["threadId"].(string)
			if tid == "" {
				t.Errorf("start: %v", r)
				return
			}
			// Writer: pipeline steps without waiting for replies.
			go func() {
				for i := 0; ; i++ {
					m := step(tid, fmt.Sprint("s", i%7), "success", fmt.Sprint("k", i), map[string]any{"i": fmt.Sprint(i)})
					b, _ := json.Marshal(m)
					if conn.Write(ctx, websocket.MessageText, b) != nil {
						return
					}
					select {
					case <-killed:
						return
					default:
					}
					if i%32 == 31 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			for {
				_, data, err := conn.Read(ctx)
				if err != nil {
					return // the engine died
				}
				var r map[string]any
				if json.Unmarshal(data, &r) != nil || r["status"] != "success" {
					continue
				}
				if id, _ := r["stepId"].(string); id != "" {
					mu.Lock()
					acked[id] = tid
					n := len(acked)
					mu.Unlock()
					if n >= 300 {
						kill()
					}
				}
			}
		}(c)
	}
	wg.Wait()
	kill()
	mu.Lock()
	defer mu.Unlock()
	return acked
}
