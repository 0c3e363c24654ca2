package integrity

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// store is an in-memory thread store with its transparency log. A step is
// appended as the engine does: its row, the thread row's head and its queued
// leaf at once; a flush moves queued leaves into the tree at once. after
// runs after every read, so a test can write between any two reads.
type store struct {
	threads map[string]ports.ThreadView
	acts    map[string][]ports.ActivityView
	tree    []ports.LogLeafRecord
	pending []ports.LogLeafRecord
	reads   int
	after   func(reads int)
	// splitLeaves reads the tree and the queue as two reads (a flush may
	// run between them), as the SQL store does.
	splitLeaves bool
}

func newStore() *store {
	return &store{threads: map[string]ports.ThreadView{}, acts: map[string][]ports.ActivityView{}}
}

func (s *store) read() {
	s.reads++
	if s.after != nil {
		s.after(s.reads)
	}
}

func (s *store) append(_ testing.TB, threadID string) {
	th := s.threads[threadID]
	th.ID = threadID
	a := ports.ActivityView{ID: fmt.Sprintf("%s-%d", threadID, th.StepCount+1), ThreadID: threadID, Seq: th.StepCount + 1,
		StepName: "s", IdempotencyKey: fmt.Sprint(th.StepCount + 1), Status: "success", Attempt: 1, Context: "{}", Metadata: "{}",
		RecordedAt: time.Date(2026, 1, 1, 0, 0, th.StepCount, 0, time.UTC), PrevHash: th.LastHash}
	h, err := domain.StepHash(a.Record(nil))
	if err != nil {
		panic(err)
	}
	a.Hash = h
	th.StepCount, th.LastHash = a.Seq, h
	s.threads[threadID] = th
	s.acts[threadID] = append(s.acts[threadID], a)
	data := domain.StepLeaf(threadID, a.ID, a.Seq, h).Data()
	s.pending = append(s.pending, ports.LogLeafRecord{Index: -1, Leaf: domain.StepLeaf(threadID, a.ID, a.Seq, h), Data: data,
		Stored: domain.LeafHash(data)})
}

func (s *store) flush() {
	for _, p := range s.pending {
		p.Index = int64(len(s.tree))
		s.tree = append(s.tree, p)
	}
	s.pending = nil
}

func (s *store) GetThreads(_ context.Context, ids []string) ([]ports.ThreadView, error) {
	var out []ports.ThreadView
	for _, id := range ids {
		if t, ok := s.threads[id]; ok {
			out = append(out, t)
		}
	}
	s.read()
	return out, nil
}

func (s *store) Activities(_ context.Context, ids []string) (map[string][]ports.ActivityView, error) {
	out := map[string][]ports.ActivityView{}
	for _, id := range ids {
		if as, ok := s.acts[id]; ok {
			out[id] = append([]ports.ActivityView(nil), as...)
		}
	}
	s.read()
	return out, nil
}

func (s *store) SubSteps(context.Context, []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	s.read()
	return nil, nil
}

func (s *store) ThreadLeaves(_ context.Context, ids []string) (map[string][]ports.LogLeafRecord, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[string][]ports.LogLeafRecord{}
	take := func(from []ports.LogLeafRecord) {
		for _, l := range from {
			if want[l.Leaf.ThreadID] {
				out[l.Leaf.ThreadID] = append(out[l.Leaf.ThreadID], l)
			}
		}
	}
	if s.splitLeaves {
		// The SQL store's order: the queue, then the tree (a leaf moved in
		// between is read twice, never missed).
		pending := append([]ports.LogLeafRecord(nil), s.pending...)
		s.read()
		tree := append([]ports.LogLeafRecord(nil), s.tree...)
		seen := map[string]bool{}
		take(tree)
		for _, l := range tree {
			seen[string(l.Data)] = true
		}
		for _, p := range pending {
			if !seen[string(p.Data)] {
				take([]ports.LogLeafRecord{p})
			}
		}
	} else {
		take(s.tree)
		take(s.pending)
	}
	s.read()
	return out, nil
}

func (s *store) LogState(context.Context) (ports.LogState, error) {
	s.read()
	return ports.LogState{Size: int64(len(s.tree)), Backfilled: true}, nil
}

// A thread written while it is verified is never reported as tampered,
// truncated, missing steps or not in the log, whichever two reads the
// writes fall between.
func TestConcurrentWritesAreNoAlarm(t *testing.T) {
	t.Parallel()
	for _, write := range []struct {
		name string
		do   func(t *testing.T, s *store)
	}{
		{"a step", func(t *testing.T, s *store) { s.append(t, "th") }},
		{"a flush", func(_ *testing.T, s *store) { s.flush() }},
		{"a step and a flush", func(t *testing.T, s *store) { s.append(t, "th"); s.flush() }},
	} {
		for at := 1; at <= 8; at++ {
			t.Run(fmt.Sprintf("%s after read %d", write.name, at), func(t *testing.T) {
				t.Parallel()
				s := newStore()
				s.splitLeaves = true
				for i := 0; i < 3; i++ {
					s.append(t, "th")
				}
				s.flush()
				s.append(t, "th") // queued, not in the tree yet
				s.after = func(n int) {
					if n == at {
						write.do(t, s)
					}
				}
				got, err := Checker{Log: s}.Threads(context.Background(), s, []string{"th"}, true)
				if err != nil {
					t.Fatal(err)
				}
				if st := got["th"]; !st.Verified || st.Code != domain.ChainVerified {
					t.Fatalf("%+v (log %+v)", st, st.Log)
				}
			})
		}
	}
}

// What the concurrency allowances must not hide: a step deleted, a step
// written without its leaf, a tail stored without moving the thread's head,
// and a thread deleted in SQL.
func TestTamperingIsStillFound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		tamper func(s *store)
		code   domain.ChainCode
	}{
		{"newest step deleted", func(s *store) { s.acts["th"] = s.acts["th"][:2] }, domain.ChainMissingSteps},
		{"newest step deleted and the head moved back", func(s *store) {
			s.acts["th"] = s.acts["th"][:2]
			th := s.threads["th"]
			th.StepCount, th.LastHash = 2, s.acts["th"][1].Hash
			s.threads["th"] = th
		}, domain.ChainMissingSteps},
		{"step written without its leaf", func(s *store) {
			s.append(nil, "th")
			s.pending = nil
		}, domain.ChainNotInLog},
		{"tail without the head moved and without its leaf", func(s *store) {
			th := s.threads["th"]
			th.StepCount, th.LastHash = 2, s.acts["th"][1].Hash
			s.threads["th"] = th
			s.tree = s.tree[:2]
			s.pending = nil
		}, domain.ChainNotInLog},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore()
			for i := 0; i < 3; i++ {
				s.append(t, "th")
			}
			s.flush()
			c.tamper(s)
			got, err := Checker{Log: s}.Threads(context.Background(), s, []string{"th"}, true)
			if err != nil {
				t.Fatal(err)
			}
			if st := got["th"]; st.Verified || st.Code != c.code {
				t.Fatalf("%+v, want %s", st, c.code)
			}
		})
	}
	// Without a log, the head alone catches a tail stored without moving it.
	t.Run("tail without the head moved, no log", func(t *testing.T) {
		t.Parallel()
		s := newStore()
		for i := 0; i < 3; i++ {
			s.append(t, "th")
		}
		th := s.threads["th"]
		th.StepCount, th.LastHash = 2, s.acts["th"][1].Hash
		s.threads["th"] = th
		got, err := Checker{}.Threads(context.Background(), s, []string{"th"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if st := got["th"]; st.Verified || st.Code != domain.ChainTruncated {
			t.Fatalf("%+v", st)
		}
	})
	t.Run("thread deleted in SQL", func(t *testing.T) {
		t.Parallel()
		s := newStore()
		s.append(t, "th")
		s.flush()
		delete(s.threads, "th")
		delete(s.acts, "th")
		got, err := Checker{Log: s}.Threads(context.Background(), s, []string{"th"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if st := got["th"]; st.Code != domain.ChainThreadDeleted {
			t.Fatalf("%+v", st)
		}
	})
}
