package domain

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// generalData is a leaf's canonical JSON by the general path (encoding/json
// then the RFC 8785 canonicaliser), the reference for the direct writer.
func generalData(t *testing.T, l LogLeaf) string {
	t.Helper()
	var v any
	if l.Type == LeafThreadDeleted {
		v = tombstoneJSON{Type: l.Type, ThreadID: l.ThreadID, StepCount: l.StepCount, LastHash: l.LastHash,
			Reason: l.Reason, DeletedAt: RecordTime(l.DeletedAt)}
	} else {
		v = stepLeafJSON{Type: LeafStep, ThreadID: l.ThreadID, StepID: l.StepID, Seq: l.Seq, Hash: l.Hash, RecordHash: l.RecordHash}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The direct canonical writer of Data gives the bytes of the general
// canonicaliser for random leaves, including strings and integers it must
// hand over to the general path; each leaf parses back to itself.
func TestLogLeafDataIsCanonical(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(27, 82))
	alphabet := []string{"a", "Z", "0", "-", "_", ":", "<", "&", ">", "\"", "\\", "\n", "\x01", "\x7f", "é", "\u2028", "😀", " ", "/"}
	str := func(plain bool) string {
		n := r.IntN(12)
		out := ""
		for range n {
			if plain {
				out += alphabet[r.IntN(9)]
			} else {
				out += alphabet[r.IntN(len(alphabet))]
			}
		}
		return out
	}
	ints := []int{0, 1, -1, 42, 1 << 53, 1<<53 + 1, -(1 << 53) - 1, 1 << 62, 1e15}
	plainHits := 0
	for i := 0; i < 3000; i++ {
		plain := r.IntN(2) == 0
		var l LogLeaf
		if r.IntN(3) == 0 {
			l = LogLeaf{Type: LeafThreadDeleted, ThreadID: str(plain), StepCount: ints[r.IntN(len(ints))], LastHash: str(plain),
				Reason: str(plain), DeletedAt: time.Unix(r.Int64N(1<<33), r.Int64N(1e9)).UTC()}
		} else {
			l = StepLeaf(str(plain), str(plain), ints[r.IntN(len(ints))], str(plain))
			if r.IntN(2) == 0 {
				l.RecordHash = str(plain)
			}
		}
		want := generalData(t, l)
		if got := string(l.Data()); got != want {
			t.Fatalf("leaf %+v:\n got %s\nwant %s", l, got, want)
		}
		if _, ok := l.plainData(); ok {
			plainHits++
		}
	}
	if plainHits == 0 || plainHits == 3000 {
		t.Fatalf("the direct writer took %d of 3000 leaves; the test must exercise both paths", plainHits)
	}
	// A real step leaf round-trips.
	l := StepLeaf("thr_01", "stp_01", 3, StepHashPrefix+"00ff")
	back, err := ParseLogLeaf(l.Data())
	if err != nil || back != l {
		t.Fatalf("parse back: %+v, %v", back, err)
	}
}
