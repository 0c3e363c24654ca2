package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// RFC 8785 appendix B: IEEE 754 doubles and their canonical JSON numbers.
func TestCanonicalNumbersRFC8785(t *testing.T) {
	t.Parallel()
	vectors := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"}, {0x8000000000000000, "0"}, {0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"}, {0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"}, {0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"}, {0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"}, {0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"}, {0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"}, {0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"}, {0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"}, {0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"}, {0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"}, {0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, v := range vectors {
		f := math.Float64frombits(v.bits)
		in, err := json.Marshal([]float64{f})
		if err != nil {
			t.Fatal(err)
		}
		out, err := jcs.Transform(in)
		if err != nil {
			t.Fatalf("%x: %v", v.bits, err)
		}
		if string(out) != "["+v.want+"]" {
			t.Errorf("%x (%s): canonical %s, want [%s]", v.bits, in, out, v.want)
		}
	}
	// 1e-7, 1e21 and -0 written in other spellings.
	for in, want := range map[string]string{`[1e-7]`: `[1e-7]`, `[0.0000001]`: `[1e-7]`, `[1E21]`: `[1e+21]`,
		`[-0]`: `[0]`, `[-0.0]`: `[0]`, `[4.50]`: `[4.5]`, `[1e-07]`: `[1e-7]`} {
		out, err := jcs.Transform([]byte(in))
		if err != nil || string(out) != want {
			t.Errorf("%s: %s %v, want %s", in, out, err, want)
		}
	}
}

// RFC 8785 section 3.2.4's example, byte for byte.
func TestCanonicalExampleRFC8785(t *testing.T) {
	t.Parallel()
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	out, err := jcs.Transform([]byte(in))
	if err != nil || string(out) != want {
		t.Fatalf("canonical %s %v\nwant      %s", out, err, want)
	}
	// Keys sort by UTF-16 code units, not UTF-8 bytes: U+10000 (a surrogate
	// pair, 0xD800…) sorts before U+E000.
	out, err = jcs.Transform([]byte(`{"\ue000":1,"\ud800\udc00":2}`))
	if err != nil || string(out) != "{\"\U00010000\":2,\"\ue000\":1}" {
		t.Fatalf("UTF-16 key order: %q %v", out, err)
	}
}

func sampleRecord() StepRecord {
	started := time.Date(2026, 3, 1, 10, 0, 0, 5000, time.UTC)
	return StepRecord{ThreadID: "th-1", StepID: "st-1", Seq: 1, StepName: "pay", IdempotencyKey: "k1", Status: "success",
		Attempt: 1, Actor: "svc-1", ActorService: "checkout", Context: json.RawMessage(`{"order":"o-1"}`),
		Metadata:  json.RawMessage(`{"small":1e-7,"html":"<x>&","n":{"b":1,"a":[1.50,"x"]}}`),
		StartedAt: &started, RecordedAt: time.Date(2026, 3, 1, 10, 0, 1, 123456789, time.UTC),
		SubSteps: []SubStepRecord{{ID: "ss-1", Name: "auth", Status: "success", Payload: json.RawMessage(`{"z":true}`),
			RecordedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}}}
}

// The canonical record is what docs/integrators/verification.md shows.
func TestStepRecordCanonicalForm(t *testing.T) {
	t.Parallel()
	got, err := sampleRecord().Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"actor":"svc-1","actor_service":"checkout","attempt":1,"context":{"order":"o-1"},"finished_at":null,` +
		`"idempotency_key":"k1","metadata":{"html":"<x>&","n":{"a":[1.5,"x"],"b":1},"small":1e-7},"prev_hash":"",` +
		`"recorded_at":"2026-03-01T10:00:01.123456Z","seq":1,"started_at":"2026-03-01T10:00:00.000005Z","status":"success",` +
		`"step_id":"st-1","step_name":"pay","sub_steps":[{"id":"ss-1","name":"auth","payload":{"z":true},` +
		`"recorded_at":"2026-03-01T10:00:00.000000Z","status":"success"}],"thread_id":"th-1","type":"threadengine.step/v2"}`
	if string(got) != want {
		t.Fatalf("canonical\n%s\nwant\n%s", got, want)
	}
	h, err := StepHash(sampleRecord())
	sum := sha256.Sum256([]byte(want))
	if err != nil || h != "sha256:"+hex.EncodeToString(sum[:]) || !IsStepHash(h) {
		t.Fatalf("StepHash %s %v", h, err)
	}
}

// Spelling does not change the hash; any value does.
func TestStepHashDependsOnValuesOnly(t *testing.T) {
	t.Parallel()
	base, _ := StepHash(sampleRecord())
	same := sampleRecord()
	same.Metadata = json.RawMessage(` {"n":{"a":[15e-1,"x"],"b":1.0},"html":"\u003cx\u003e\u0026","small":0.0000001}`)
	same.RecordedAt = same.RecordedAt.Add(200) // within the same microsecond
	if h, err := StepHash(same); err != nil || h != base {
		t.Fatalf("respelled record hashes %s %v, want %s", h, err, base)
	}
	emptyCtx := sampleRecord()
	emptyCtx.Context = nil
	nullCtx := sampleRecord()
	nullCtx.Context = json.RawMessage("null")
	a, _ := StepHash(emptyCtx)
	b, _ := StepHash(nullCtx)
	if a != b {
		t.Fatal("empty and null context differ")
	}
	for name, mut := range map[string]func(*StepRecord){
		"seq":        func(r *StepRecord) { r.Seq = 2 },
		"status":     func(r *StepRecord) { r.Status = "failed" },
		"actor":      func(r *StepRecord) { r.Actor = "other" },
		"metadata":   func(r *StepRecord) { r.Metadata = json.RawMessage(`{"small":1e-8}`) },
		"prev":       func(r *StepRecord) { r.PrevHash = "sha256:00" },
		"time":       func(r *StepRecord) { r.RecordedAt = r.RecordedAt.Add(time.Microsecond) },
		"finished":   func(r *StepRecord) { f := r.RecordedAt; r.FinishedAt = &f },
		"sub-step":   func(r *StepRecord) { r.SubSteps[0].Status = "failed" },
		"no sub":     func(r *StepRecord) { r.SubSteps = nil },
		"attempt":    func(r *StepRecord) { r.Attempt = 2 },
		"thread":     func(r *StepRecord) { r.ThreadID = "th-2" },
		"idempotent": func(r *StepRecord) { r.IdempotencyKey = "k2" },
	} {
		r := sampleRecord()
		mut(&r)
		if h, _ := StepHash(r); h == base {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
	bad := sampleRecord()
	bad.Metadata = json.RawMessage(`[1]`)
	if _, err := StepHash(bad); err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Fatalf("array metadata: %v", err)
	}
}

// A chain of version-2 links verifies from its records alone, and a changed
// record, an edited prev hash or a missing record is caught.
func TestVerifyChainVersion2(t *testing.T) {
	t.Parallel()
	var links []ChainLink
	prev := ""
	for i := 1; i <= 4; i++ {
		r := sampleRecord()
		r.Seq, r.StepID, r.PrevHash = i, "st-"+string(rune('0'+i)), prev
		h, err := StepHash(r)
		if err != nil {
			t.Fatal(err)
		}
		rc := r
		links = append(links, ChainLink{ThreadID: r.ThreadID, StepID: r.StepID, StepName: r.StepName, PrevHash: prev,
			Hash: h, RecordedAt: r.RecordedAt, Record: &rc})
		prev = h
	}
	if st := VerifyChain(nil, links); !st.Verified || st.Code != ChainVerified {
		t.Fatalf("intact: %+v", st)
	}
	changed := append([]ChainLink(nil), links...)
	rec := *changed[2].Record
	rec.Metadata = json.RawMessage(`{"small":2e-7}`)
	changed[2].Record = &rec
	if st := VerifyChain(nil, changed); st.Verified || st.Code != ChainTampered || st.BrokenStepID != "st-3" {
		t.Fatalf("changed metadata: %+v", st)
	}
	noRecord := append([]ChainLink(nil), links...)
	noRecord[1].Record = nil
	if st := VerifyChain(nil, noRecord); st.Code != ChainUnsupported {
		t.Fatalf("no record: %+v", st)
	}
	st := VerifyChain(nil, links)
	CheckHead(&st, links[:3], 4, links[3].Hash)
	if st.Verified || st.Code != ChainTruncated || len(st.Missing) != 1 || st.Missing[0].Seq != 4 ||
		!strings.Contains(st.Error, "records 4 steps") {
		t.Fatalf("newest step deleted: %+v", st)
	}
	st = VerifyChain(nil, links)
	CheckHead(&st, links, 4, links[3].Hash)
	if !st.Verified {
		t.Fatalf("head matches: %+v", st)
	}
}

// A chain read after its thread row may hold steps appended since: they are
// accepted only when they are new since the read before the row, and the
// walk passes the row's head at its count.
func TestCheckHeadSince(t *testing.T) {
	t.Parallel()
	var links []ChainLink
	prev := ""
	for i := 1; i <= 4; i++ {
		r := sampleRecord()
		r.Seq, r.StepID, r.PrevHash = i, "st-"+string(rune('0'+i)), prev
		h, err := StepHash(r)
		if err != nil {
			t.Fatal(err)
		}
		rc := r
		links = append(links, ChainLink{ThreadID: r.ThreadID, StepID: r.StepID, PrevHash: prev, Hash: h, Record: &rc})
		prev = h
	}
	ids := func(ls []ChainLink) map[string]bool {
		m := map[string]bool{}
		for _, l := range ls {
			m[l.StepID] = true
		}
		return m
	}
	for _, c := range []struct {
		name   string
		before []ChainLink // the chain read before the row
		count  int         // the row's head
		last   string
		chain  []ChainLink // the chain read after the row
		ok     bool
	}{
		{"head matches", links[:2], 4, links[3].Hash, links, true},
		{"two appended since the row", links[:2], 2, links[1].Hash, links, true},
		{"appended to an empty thread", nil, 0, "", links[:1], true},
		{"tail stored before the row, head not moved", links, 2, links[1].Hash, links, false},
		{"newest step deleted", links[:3], 4, links[3].Hash, links[:3], false},
		{"row's head not on the chain", links[:2], 2, links[3].Hash, links, false},
		{"row's count wrong", links[:1], 1, links[1].Hash, links, false},
	} {
		st := VerifyChain(nil, c.chain)
		CheckHeadSince(&st, c.chain, ids(c.before), c.count, c.last)
		if st.Verified != c.ok || !c.ok && st.Code != ChainTruncated {
			t.Errorf("%s: %+v", c.name, st)
		}
	}
}

// A version-1 link from before keys were shared that no key reproduces is
// unknown_key, not tampering; after that time it is tampering.
func TestPartialKeyWindowIsUnknownKey(t *testing.T) {
	t.Parallel()
	lost := []byte("lost-replica-key-0123456789abcdef")
	held := []byte("held-key-0123456789abcdef0123456")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := ChainLink{ThreadID: "t", StepID: "s1", StepName: "pay", ContentHash: ContentHash(nil, nil), RecordedAt: t0}
	l.Hash = ChainHash(lost, "1", l)
	l2 := ChainLink{ThreadID: "t", StepID: "s2", StepName: "ship", ContentHash: ContentHash(nil, nil), PrevHash: l.Hash,
		RecordedAt: t0.Add(time.Hour)}
	l2.Hash = ChainHash(lost, "1", l2)
	k := ChainKeyring{Secrets: map[string][]byte{"1": held}, PartialBefore: map[string]time.Time{"1": t0.Add(24 * time.Hour)}}
	st := k.VerifyChain([]ChainLink{l, l2})
	if st.Verified || st.Code != ChainUnknownKey || strings.Contains(st.Error, "tamper") {
		t.Fatalf("lost replica key: %+v", st)
	}
	k.PartialBefore["1"] = t0.Add(time.Minute)
	if st := k.VerifyChain([]ChainLink{l, l2}); st.Code != ChainTampered || st.BrokenStepID != "s2" {
		t.Fatalf("after keys were shared: %+v", st)
	}
	if st := (ChainKeyring{Secrets: map[string][]byte{"2": held}}).VerifyChain([]ChainLink{l}); st.Code != ChainUnknownKey {
		t.Fatalf("no key of the version: %+v", st)
	}
}
