package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

// chainOf recomputes a thread's hash chain from an export alone (chain
// version 2 needs no secret): the export carries everything verification needs.
func chainOf(t *testing.T, _ *enginetest.Engine, x opshttp.ExportJSON) domain.ChainStatus {
	t.Helper()
	links := make([]domain.ChainLink, len(x.Attempts))
	for i, a := range x.Attempts {
		rec := domain.StepRecord{ThreadID: x.Thread.ID, StepID: a.ID, Seq: a.Seq, StepName: a.StepName,
			IdempotencyKey: a.IdempotencyKey, Status: a.Status, Attempt: a.Attempt, Actor: a.Actor, ActorService: a.ActorService,
			Context: a.Context, Metadata: a.Metadata, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, RecordedAt: a.RecordedAt,
			PrevHash: a.PrevHash}
		for _, s := range x.SubSteps {
			if s.StepID == a.ID {
				rec.SubSteps = append(rec.SubSteps, domain.SubStepRecord{ID: s.ID, Name: s.Name, Status: s.Status,
					Payload: s.Payload, RecordedAt: s.RecordedAt})
			}
		}
		links[i] = domain.ChainLink{ThreadID: x.Thread.ID, StepID: a.ID, StepName: a.StepName, PrevHash: a.PrevHash,
			Hash: a.Hash, RecordedAt: a.RecordedAt, Record: &rec}
	}
	return domain.VerifyChain(nil, links)
}

func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		putContract(t, e, enginetest.OrderFlowYAML)
		_, key := e.NewUser(t, domain.RoleMember)
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		c := connectWS(t, e, key)
		tid := c.ok(map[string]any{"action": "startThread", "contractName": "order_flow", "role": "checkout",
			"refs": map[string]any{"orderId": "O-1"}})["threadId"].(string)
		c.ok(step(tid, "validate", "failed", "v1", map[string]any{"items": "2"}))
		s := step(tid, "validate", "success", "v1", map[string]any{"items": "2", "note": "ünïcode <&>"})
		s["subSteps"] = []map[string]any{{"name": "stock", "status": "success", "payload": map[string]any{"sku": "A", "n": 2}}}
		s["threadify_metadata"] = map[string]any{"amount": 12.5, "nested": map[string]any{"ok": true}}
		c.ok(s)
		c.ok(step(tid, "pay", "success", "p1", nil))
		e.Clock.Advance(time.Second) // the stream is ordered by start time
		free := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
		c.ok(step(free, "x", "success", "x1", nil))
		c.ok(map[string]any{"action": "threadEnd", "threadId": free, "status": "cancelled"})

		resp, body := e.Do(t, http.MethodGet, "/v1/threads/"+tid+"/export", viewerKey, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.Contains(cd, tid) {
			t.Fatalf("content disposition %q", cd)
		}
		x := decode[opshttp.ExportJSON](t, body)
		if x.Thread.ID != tid || *x.Thread.ContractName != "order_flow" || x.Thread.Refs["orderId"] != "O-1" || x.Thread.StepCount != 3 {
			t.Fatalf("thread %+v", x.Thread)
		}
		if len(x.Steps) != 2 || len(x.Attempts) != 3 || len(x.SubSteps) != 1 || len(x.Validations) != 3 || len(x.Notifications) < 6 {
			t.Fatalf("rows: %d steps, %d attempts, %d sub-steps, %d validations, %d notifications",
				len(x.Steps), len(x.Attempts), len(x.SubSteps), len(x.Validations), len(x.Notifications))
		}
		if !x.Chain.Verified || x.Chain.TotalEvents != 3 {
			t.Fatalf("chain %+v", x.Chain)
		}
		// Round trip: the exported content is what was sent, byte for byte
		// in meaning, and the chain verifies from the export alone.
		var ctx map[string]string
		var meta map[string]any
		var payload map[string]any
		_ = json.Unmarshal(x.Attempts[1].Context, &ctx)
		_ = json.Unmarshal(x.Attempts[1].Metadata, &meta)
		_ = json.Unmarshal(x.SubSteps[0].Payload, &payload)
		if ctx["note"] != "ünïcode <&>" || meta["amount"] != 12.5 || payload["sku"] != "A" || x.SubSteps[0].StepID != x.Attempts[1].ID {
			t.Fatalf("content %v %v %v", ctx, meta, payload)
		}
		if st := chainOf(t, e, x); !st.Verified || st.TotalEvents != 3 {
			t.Fatalf("offline verification of the export: %+v", st)
		}
		// Tampering with the export is detected offline.
		x.Attempts[1].Context = json.RawMessage(`{"items":"3","note":"ünïcode <&>"}`)
		if st := chainOf(t, e, x); st.Verified {
			t.Fatal("a tampered export still verifies")
		}

		resp, body = e.Do(t, http.MethodGet, "/v1/threads/nope/export", key, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		resp, body = e.Do(t, http.MethodGet, "/v1/threads/"+tid+"/export", "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")

		// The stream: every thread, one line each, the same document as the single export.
		stream := func(q url.Values) []opshttp.ExportJSON {
			t.Helper()
			resp, body := e.Do(t, http.MethodGet, "/v1/threads/export?"+q.Encode(), viewerKey, nil)
			wantStatus(t, resp, body, http.StatusOK)
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
				t.Fatalf("content type %q", ct)
			}
			var out []opshttp.ExportJSON
			sc := bufio.NewScanner(bytes.NewReader(body))
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				var line opshttp.ExportJSON
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Thread.ID == "" {
					t.Fatalf("line %q: %v", sc.Bytes(), err)
				}
				out = append(out, line)
			}
			return out
		}
		all := stream(nil)
		if len(all) != 2 || all[0].Thread.ID != tid || all[1].Thread.ID != free {
			t.Fatalf("stream of all: %d lines", len(all))
		}
		one, _ := json.Marshal(all[0])
		_, body = e.Do(t, http.MethodGet, "/v1/threads/"+tid+"/export", viewerKey, nil)
		single, _ := json.Marshal(decode[opshttp.ExportJSON](t, body))
		if !bytes.Equal(one, single) {
			t.Fatalf("stream line and single export differ:\n%s\n%s", one, single)
		}
		if got := stream(url.Values{"status": {"cancelled"}}); len(got) != 1 || got[0].Thread.ID != free {
			t.Fatalf("status filter: %d", len(got))
		}
		if got := stream(url.Values{"contract": {"order_flow:1"}}); len(got) != 1 || got[0].Thread.ID != tid {
			t.Fatalf("contract filter: %d", len(got))
		}
		if got := stream(url.Values{"started_since": {"2999-01-01T00:00:00Z"}}); len(got) != 0 {
			t.Fatalf("time filter: %d", len(got))
		}
		resp, body = e.Do(t, http.MethodGet, "/v1/threads/export?started_since=soon", viewerKey, nil)
		wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed")
	})
}

// More threads than one export batch stream in order, each once.
func TestExportStreamPages(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, key := e.NewUser(t, domain.RoleMember)
		c := connectWS(t, e, key)
		want := map[string]bool{}
		for i := 0; i < 120; i++ {
			id := c.ok(map[string]any{"action": "startThread", "refs": map[string]any{}})["threadId"].(string)
			want[id] = true
		}
		resp, body := e.Do(t, http.MethodGet, "/v1/threads/export", key, nil)
		wantStatus(t, resp, body, http.StatusOK)
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if len(lines) != 120 {
			t.Fatalf("%d lines", len(lines))
		}
		for _, l := range lines {
			var x opshttp.ExportJSON
			if err := json.Unmarshal([]byte(l), &x); err != nil || !want[x.Thread.ID] {
				t.Fatalf("line %q %v", l, err)
			}
			delete(want, x.Thread.ID)
		}
	})
}
