package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// The oracle: Canonical as it was written before the direct writer
// (json.Marshal of the record, then jcs.Transform over the whole text). The
// direct writer must give the same bytes and the same errors.

type oracleStepRecordJSON struct {
	Type           string                    `json:"type"`
	ThreadID       string                    `json:"thread_id"`
	StepID         string                    `json:"step_id"`
	Seq            int                       `json:"seq"`
	StepName       string                    `json:"step_name"`
	IdempotencyKey string                    `json:"idempotency_key"`
	Status         string                    `json:"status"`
	Attempt        int                       `json:"attempt"`
	Actor          string                    `json:"actor"`
	ActorService   string                    `json:"actor_service"`
	Context        json.RawMessage           `json:"context"`
	Metadata       json.RawMessage           `json:"metadata"`
	StartedAt      *string                   `json:"started_at"`
	FinishedAt     *string                   `json:"finished_at"`
	RecordedAt     string                    `json:"recorded_at"`
	PrevHash       string                    `json:"prev_hash"`
	SubSteps       []oracleSubStepRecordJSON `json:"sub_steps"`
}

type oracleSubStepRecordJSON struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	Payload    json.RawMessage `json:"payload"`
	RecordedAt string          `json:"recorded_at"`
}

func oracleRecordTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := RecordTime(*t)
	return &s
}

func oracleCanonical(r StepRecord) ([]byte, error) {
	out := oracleStepRecordJSON{Type: StepRecordType, ThreadID: r.ThreadID, StepID: r.StepID, Seq: r.Seq, StepName: r.StepName,
		IdempotencyKey: r.IdempotencyKey, Status: r.Status, Attempt: r.Attempt, Actor: r.Actor, ActorService: r.ActorService,
		StartedAt: oracleRecordTimePtr(r.StartedAt), FinishedAt: oracleRecordTimePtr(r.FinishedAt), RecordedAt: RecordTime(r.RecordedAt),
		PrevHash: r.PrevHash, SubSteps: make([]oracleSubStepRecordJSON, 0, len(r.SubSteps))}
	var err error
	if out.Context, err = jsonObject("context", r.Context); err != nil {
		return nil, err
	}
	if out.Metadata, err = jsonObject("metadata", r.Metadata); err != nil {
		return nil, err
	}
	for _, s := range r.SubSteps {
		p, err := jsonObject("sub-step payload", s.Payload)
		if err != nil {
			return nil, err
		}
		out.SubSteps = append(out.SubSteps, oracleSubStepRecordJSON{ID: s.ID, Name: s.Name, Status: s.Status, Payload: p,
			RecordedAt: RecordTime(s.RecordedAt)})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// sameAsOracle fails t unless r.Canonical() and the oracle agree: the same
// bytes, or the same error text.
func sameAsOracle(t *testing.T, name string, r StepRecord) {
	t.Helper()
	got, gotErr := r.Canonical()
	want, wantErr := oracleCanonical(r)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Errorf("%s: error %v, oracle %v", name, gotErr, wantErr)
		return
	}
	if string(got) != string(want) {
		t.Errorf("%s:\ngot    %q\noracle %q", name, got, want)
	}
}

func nested(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// Embedded JSON texts whose canonical form is easy to get wrong.
var trickyJSON = []string{
	``, `null`, ` null `, `{}`, ` { } `, "\t\n{\r\n}\n", "\v{}\u00a0", `{"a":1}`,
	// member order by UTF-16 code units: U+10000 (a surrogate pair) before U+E000–U+FFFF
	`{"\ue000":1,"\ud800\udc00":2}`, "{\"\U0001F600\":1,\"\uFFFD\":2,\"\uE000\":3,\"z\":4,\"\u00e9\":5,\"\":6}",
	"{\"\uFFFF\":1,\"\U0010FFFF\":2,\"\uD7FF\":3}", `{"b":1,"a":2,"aa":3,"A":4,"a\u0000":5}`,
	`{"\u00e9":1,"é":2}`, `{"a":1,"a":2}`, `{"a":1,"b":2,"a":3}`, `{"x":{"a":1,"a":1}}`,
	// escapes and control characters
	`{"s":"\u0000\u001f\u007f\b\f\n\r\t\"\\\/","k\n":"\u00E9\u20AC"}`, `{"s":"\u2028\u2029<>&"}`,
	"{\"s\":\"\u2028 \u2029 <script>&amp;\"}", `{"s":"\ud83d\ude00","t":"\uD83D\uDE00"}`,
	`{"s":"\ud800"}`, `{"s":"\udc00"}`, `{"s":"\ud800\u0041"}`, `{"s":"\ud800x"}`, `{"s":"\ud800\\"}`,
	`{"\ud800":1}`, `{"s":"\x"}`, `{"s":"\u00zz"}`,
	// invalid UTF-8
	"{\"s\":\"\xff\"}", "{\"\xfe\":1}", "{\"s\":\"a\xe2\x80\"}", "{\"s\":\"\xed\xa0\x80\"}",
	"{\"s\":\"\xe2\xe2\x80\xa8\"}", "{\"s\":\"\xc0\xaf\"}", "{\"s\":\"\xef\xbf\xbd\"}",
	// numbers
	`{"n":[0,-0,-0.0,0.0,1,-1,1.0,1.50,1e0,1E+2,1e-7,1e-07,0.000001,1e21,1e+21,1E21,999999999999999,1000000000000000]}`,
	`{"n":[9007199254740992,9007199254740993,-9007199254740993,123456789012345678901234567890,1e400]}`,
	`{"n":1e400}`, `{"n":-1e-400}`, `{"n":5e-324}`, `{"n":1.7976931348623157e308}`, `{"n":333333333.33333329}`,
	`{"n":[01]}`, `{"n":1.}`, `{"n":.5}`, `{"n":+1}`, `{"n":1e}`, `{"n":-}`, `{"n":0x10}`, `{"n":1_000}`,
	`{"n":[true,false,null]}`, `{"n":tru}`, `{"n":nul}`, `{"n":truex}`,
	// nesting
	`{"a":[[],{},[{}],{"b":[1,{"d":2,"c":1}]}],"0":{"z":{"y":{"x":[]}}}}`, `{"a":[1,2,]}`, `{"a":1,}`,
	nested(`{"a":`, `}`, 31, `1`), nested(`{"a":`, `}`, 33, `{"c":1,"b":2}`), nested(`[`, `]`, 40, `1`),
	`{"d":` + nested(`[`, `]`, 9998, ``) + `}`, `{"d":` + nested(`[`, `]`, 9997, ``) + `}`,
	`{"d":` + nested(`[`, `]`, 9996, ``) + `}`, `{"d":` + nested(`[`, `]`, 9999, ``) + `}`,
	`{"d":` + nested(`[`, `]`, 9997, `"\xff"`) + `}`,
	// not objects, not JSON
	`[1]`, `"s"`, `1`, `true`, `{`, `{"a"}`, `{"a":1}x`, `{"a":1} {}`, `{'a':1}`, "{\"s\":\"a\nb\"}",
	// whitespace everywhere
	" {\n\t\"b\" : [ 1 , 2 ] ,\r\n \"a\" : { } } \n",
}

func TestCanonicalMatchesOracleTable(t *testing.T) {
	t.Parallel()
	for i, s := range trickyJSON {
		for _, where := range []string{"context", "metadata", "payload"} {
			r := sampleRecord()
			switch where {
			case "context":
				r.Context = json.RawMessage(s)
			case "metadata":
				r.Metadata = json.RawMessage(s)
			case "payload":
				r.SubSteps = append(r.SubSteps, SubStepRecord{ID: "ss-2", Name: "p", Status: "s", Payload: json.RawMessage(s)})
			}
			sameAsOracle(t, fmt.Sprintf("%s %d %s", where, i, shortName(s)), r)
		}
	}
	// The record's own strings and integers.
	started := time.Date(2026, 3, 1, 10, 0, 0, 999, time.FixedZone("x", 3600))
	for name, mut := range map[string]func(*StepRecord){
		"escapes":        func(r *StepRecord) { r.Actor = "a\"b\\c/d\x00\x01\x1f\x7f\b\f\n\r\t" },
		"html":           func(r *StepRecord) { r.StepName = "<x>&amp;\u2028\u2029" },
		"unicode":        func(r *StepRecord) { r.ThreadID = "é€\U0001F600\uFFFD\uE000" },
		"invalid utf-8":  func(r *StepRecord) { r.StepID = "a\xffb\xc0\xafc\xe2\x80d\xed\xa0\x80e\xf0\x9f\x98" },
		"invalid end":    func(r *StepRecord) { r.IdempotencyKey = "\xe2\x82" },
		"empty":          func(r *StepRecord) { *r = StepRecord{} },
		"max int":        func(r *StepRecord) { r.Seq, r.Attempt = math.MaxInt64, math.MinInt64 },
		"2^53":           func(r *StepRecord) { r.Seq, r.Attempt = 1<<53, -(1 << 53) },
		"2^53+1":         func(r *StepRecord) { r.Seq, r.Attempt = 1<<53+1, -(1<<53 + 1) },
		"1e21":           func(r *StepRecord) { r.Seq, r.Attempt = 1e18, -123456789 },
		"negative":       func(r *StepRecord) { r.Seq, r.Attempt = -1, 0 },
		"times":          func(r *StepRecord) { r.StartedAt, r.FinishedAt = &started, &started },
		"zero time":      func(r *StepRecord) { r.RecordedAt = time.Time{} },
		"far time":       func(r *StepRecord) { r.RecordedAt = time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC) },
		"negative year":  func(r *StepRecord) { r.RecordedAt = time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC) },
		"no sub-steps":   func(r *StepRecord) { r.SubSteps = nil },
		"sub-step names": func(r *StepRecord) { r.SubSteps[0].ID, r.SubSteps[0].Status = "\xff\"", "\u2028" },
		"three sub-steps": func(r *StepRecord) {
			r.SubSteps = append(r.SubSteps, SubStepRecord{ID: "b", Payload: json.RawMessage(`{"y":[1e-7]}`)},
				SubStepRecord{ID: "c", Payload: nil})
		},
		"errors in order": func(r *StepRecord) {
			r.Context = json.RawMessage(`{"a":1,"a":2}`)
			r.Metadata = json.RawMessage(`[1]`)
		},
		"jcs errors in order": func(r *StepRecord) {
			r.Context = json.RawMessage(`{"n":1e400}`)
			r.Metadata = json.RawMessage(`{"a":1,"a":2}`)
		},
		"payload error after": func(r *StepRecord) {
			r.SubSteps = append(r.SubSteps, SubStepRecord{Payload: json.RawMessage(`{"\ud800":1}`)},
				SubStepRecord{Payload: json.RawMessage(`1`)})
		},
	} {
		r := sampleRecord()
		mut(&r)
		sameAsOracle(t, name, r)
	}
}

func shortName(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// FuzzCanonicalStepRecord: the direct writer agrees with the oracle on any
// context, metadata, payload and record string. Plain `go test` runs the
// seeds; `go test -run '^$' -fuzz FuzzCanonicalStepRecord ./domain/` explores.
func FuzzCanonicalStepRecord(f *testing.F) {
	for _, s := range trickyJSON {
		if len(s) < 4096 {
			f.Add(s, `{"m":1}`, `{}`, "svc", int64(1))
			f.Add(`{}`, s, s, "a\xff\u2028", int64(-7))
		}
	}
	f.Add(`{"order":"o-1","amount":12.5,"items":[{"sku":"A","qty":2}],"ok":true}`, `{"small":1e-7,"html":"<x>&"}`,
		`{"z":true,"a":null}`, "svc-1", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, ctx, meta, payload, actor string, seq int64) {
		r := sampleRecord()
		r.Context, r.Metadata, r.Actor, r.Seq = json.RawMessage(ctx), json.RawMessage(meta), actor, int(seq)
		r.SubSteps[0].Payload = json.RawMessage(payload)
		r.SubSteps[0].Name = actor
		sameAsOracle(t, "fuzz", r)
	})
}

// A typical step: a context of ten members (strings, numbers, a nested
// object), small metadata; with none and with three sub-steps.
func benchRecords() map[string]StepRecord {
	typical := sampleRecord()
	typical.Context = json.RawMessage(`{"order_id":"ORD-20261127-000123","customer":"cus_8f3a2b","amount":129.95,` +
		`"currency":"EUR","items":3,"channel":"web","region":"eu-west-1","priority":2,"express":false,` +
		`"address":{"city":"Lyon","zip":"69002","country":"FR","lines":["12 rue de la République"]}}`)
	typical.Metadata = json.RawMessage(`{"sdk":"go/1.4.2","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	typical.SubSteps = nil
	three := typical
	three.SubSteps = []SubStepRecord{
		{ID: "ss-1", Name: "reserve", Status: "success", Payload: json.RawMessage(`{"warehouse":"LYS-2","units":3}`),
			RecordedAt: typical.RecordedAt},
		{ID: "ss-2", Name: "authorise", Status: "success", Payload: json.RawMessage(`{"psp":"adyen","ref":"8835","amount":129.95}`),
			RecordedAt: typical.RecordedAt},
		{ID: "ss-3", Name: "notify", Status: "failed", Payload: nil, RecordedAt: typical.RecordedAt},
	}
	return map[string]StepRecord{"typical": typical, "3 sub-steps": three}
}

func TestBenchRecordsMatchOracle(t *testing.T) {
	t.Parallel()
	for name, r := range benchRecords() {
		sameAsOracle(t, name, r)
	}
}

// BenchmarkStepHash: the direct writer ("new") against the oracle ("old"),
// hash included.
func BenchmarkStepHash(b *testing.B) {
	for _, name := range []string{"typical", "3 sub-steps"} {
		r := benchRecords()[name]
		b.Run(name+"/old", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := oracleCanonical(r)
				if err != nil {
					b.Fatal(err)
				}
				sum := sha256.Sum256(c)
				_ = StepHashPrefix + hex.EncodeToString(sum[:])
			}
		})
		b.Run(name+"/new", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := StepHash(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Random valid objects (fixed seed): members in any order, names and strings
// from tricky pieces, numbers in many spellings, whitespace anywhere; the
// direct writer must agree with the oracle on every one.
func TestCanonicalMatchesOracleRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8785, 2026))
	pieces := []string{"a", "b", "Z", "é", "\\u00e9", "€", "\\u20AC", "\U0001F600", "\\ud83d\\ude00", "\uE000", "\uFFFF",
		"\\uffff", "\U00010000", "\\n", "\\\"", "\\\\", "\\/", "\\u0000", "\\u001F", "\\u007f", "<", "&", "\u2028", "\\u2029",
		"\\t", "\\b", "\\f", "\\r", " ", "0", "\uFFFD", "\U0010FFFF", "\uD7FF"}
	numbers := []string{"0", "-0", "1", "-1", "10", "1.0", "1.5", "-2.25e3", "1e-7", "1E+21", "1e21", "123456789012345",
		"1234567890123456", "12345678901234567890", "0.1", "0.30000000000000004", "5e-324", "1.7976931348623157e308",
		"9007199254740993", "-0.0000033333333333333333", "100", "1e2", "0e5", "-0.0e-0"}
	ws := func() string { return []string{"", "", "", " ", "\n\t", "\r\n  "}[rng.IntN(6)] }
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		return b.String()
	}
	var value func(depth int) string
	object := func(depth int) string {
		seen := map[string]bool{}
		var members []string
		for range rng.IntN(6) {
			k := str()
			var decoded string
			if json.Unmarshal([]byte(k), &decoded) != nil || seen[decoded] {
				continue
			}
			seen[decoded] = true
			members = append(members, ws()+k+ws()+":"+ws()+value(depth+1)+ws())
		}
		return "{" + strings.Join(members, ",") + ws() + "}"
	}
	value = func(depth int) string {
		switch n := rng.IntN(10); {
		case n < 2 && depth < 6:
			return object(depth)
		case n < 3 && depth < 6:
			var els []string
			for range rng.IntN(4) {
				els = append(els, ws()+value(depth+1)+ws())
			}
			return "[" + strings.Join(els, ",") + "]"
		case n < 5:
			return numbers[rng.IntN(len(numbers))]
		case n < 6:
			return []string{"true", "false", "null"}[rng.IntN(3)]
		default:
			return str()
		}
	}
	for i := range 3000 {
		r := sampleRecord()
		r.Context = json.RawMessage(ws() + object(0) + ws())
		r.Metadata = json.RawMessage(object(0))
		r.SubSteps[0].Payload = json.RawMessage(object(0))
		sameAsOracle(t, fmt.Sprintf("random %d %q", i, r.Context), r)
	}
}
