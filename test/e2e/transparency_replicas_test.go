package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
)

// Two engine processes on one PostgreSQL database keep exactly one log:
// steps written concurrently on both get distinct leaf indexes in one tree,
// both publish the same key and consistent checkpoints, and an export taken
// from one verifies offline (CLI and Node) against a checkpoint saved from
// the other.
func TestTwoReplicasKeepOneLog(t *testing.T) {
	t.Parallel()
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		t.Skipf("%s not set", sqldbtest.PostgresEnv)
	}
	verifiers := offlineVerifiers(t)
	rs := startReplicaSet(t, 2)
	key, _ := rs.newKey(t, 0, "svc")
	e0, e1 := rs.engine(0), rs.engine(1)

	_, keys0 := e0.Do(t, http.MethodGet, "/v1/log/keys", "", nil)
	_, keys1 := e1.Do(t, http.MethodGet, "/v1/log/keys", "", nil)
	if string(keys0) != string(keys1) || !strings.Contains(string(keys0), "+") {
		t.Fatalf("replicas publish different keys:\n%s\n%s", keys0, keys1)
	}
	w0, w1 := connectWS(t, e0, key), connectWS(t, e1, key)
	shared := w0.ok(map[string]any{"action": "startThread", "label": "shared"})["threadId"].(string)
	w0.ok(step(shared, "a", "success", "a0", nil))
	w1.ok(step(shared, "b", "success", "b0", nil))
	resp, saved := e1.Do(t, http.MethodGet, "/v1/log/checkpoint", "", nil)
	wantStatus(t, resp, saved, http.StatusOK)

	// Concurrent writers on both replicas, on their own threads and the shared one.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e := rs.engine(i % 2)
			c := connectWS(t, e, key)
			own := c.ok(map[string]any{"action": "startThread", "label": fmt.Sprint("w", i)})["threadId"].(string)
			for j := 0; j < 15; j++ {
				c.ok(step(own, "s", "success", fmt.Sprint(i, "-", j), nil))
				c.ok(step(shared, "x", "success", fmt.Sprint("x", i, "-", j), nil))
			}
		}(i)
	}
	wg.Wait()

	db, err := sqldb.Open(context.Background(), rs.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Acknowledged steps are queued in their transaction; the replicas'
	// sequencers move them into the tree soon after. Move what is still
	// queued now, as a sequencer would, instead of waiting for them.
	if _, err := threadstore.New(db).FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	var size, leaves, distinct, steps int
	if err := db.QueryRow(`SELECT (SELECT size FROM tlog_state), (SELECT COUNT(*) FROM tlog_leaves),
 (SELECT COUNT(DISTINCT idx) FROM tlog_leaves), (SELECT COUNT(*) FROM thread_activities)`).Scan(&size, &leaves, &distinct, &steps); err != nil {
		t.Fatal(err)
	}
	if size != steps || leaves != steps || distinct != steps || steps != 2+4*30 {
		t.Fatalf("log size %d, leaves %d (%d distinct), steps %d", size, leaves, distinct, steps)
	}

	resp, body := e0.Do(t, http.MethodGet, "/v1/threads/"+shared+"/export?since="+strings.Split(string(saved), "\n")[1], rs.ownerKey, nil)
	wantStatus(t, resp, body, http.StatusOK)
	exportFile, keyFile, savedFile := writeFile(t, "shared.json", body), writeFile(t, "log.keys", keys0), writeFile(t, "saved", saved)
	for _, v := range verifiers {
		if out, ok := v.run(exportFile, keyFile, savedFile); !ok || !strings.Contains(out, "ok   thread "+shared) {
			t.Fatalf("%s rejects the export from replica 1 against replica 2's checkpoint:\n%s", v.name, out)
		}
	}
	// The replicas' latest checkpoints are of one log: consistent.
	resp, cp0 := e0.Do(t, http.MethodGet, "/v1/log/checkpoint", "", nil)
	wantStatus(t, resp, cp0, http.StatusOK)
	resp, body = e1.Do(t, http.MethodGet, "/v1/log/proof/consistency?old="+strings.Split(string(saved), "\n")[1]+"&new="+strings.Split(string(cp0), "\n")[1], "", nil)
	wantStatus(t, resp, body, http.StatusOK)
}
