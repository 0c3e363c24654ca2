package domain

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// A cosignature is a signed-note line over "cosignature/v1\ntime T\n" and
// the checkpoint body (C2SP tlog-cosignature), under the key id
// SHA-256(name || "\n" || 0x04 || key)[:4]; note.Open verifies it next to
// the log's own signature, and a changed body, time or key fails.
func TestCosignatureV1(t *testing.T) {
	t.Parallel()
	skey, vkey, err := GenerateCosignerKey("witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCosigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1679315147, 0)
	c.Now = func() time.Time { return at }
	v, err := NewCosignatureVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	// The key id, recomputed from the spec's formula.
	raw, _ := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2])
	sum := sha256.Sum256(append([]byte("witness.example/w1\n"), raw...))
	if v.KeyHash() != binary.BigEndian.Uint32(sum[:4]) || raw[0] != 0x04 {
		t.Fatalf("key hash %08x, key type %x", v.KeyHash(), raw[0])
	}
	logSkey, logVkey, _ := note.GenerateKey(rand.Reader, "example.com/log")
	logSigner, _ := note.NewSigner(logSkey)
	logVerifier, _ := note.NewVerifier(logVkey)
	body := Checkpoint{Origin: "example.com/log", Size: 20852163, Root: LeafHash([]byte("x"))}.Text()
	signed, err := note.Sign(&note.Note{Text: body}, logSigner)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(logVerifier))
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, c)
	if err != nil {
		t.Fatal(err)
	}
	both, err := note.Open(cosigned, note.VerifierList(logVerifier, v))
	if err != nil || len(both.Sigs) != 2 {
		t.Fatalf("open: %v, %d verified signatures", err, len(both.Sigs))
	}
	if ts, ok := CosignatureTime(both.Sigs[1].Base64); !ok || !ts.Equal(at) {
		t.Fatalf("time %v %v", ts, ok)
	}
	// The signature is Ed25519 over the spec's message, checked by hand.
	sig, _ := base64.StdEncoding.DecodeString(both.Sigs[1].Base64)
	msg := "cosignature/v1\ntime 1679315147\n" + body
	if !ed25519.Verify(ed25519.PublicKey(raw[1:]), []byte(msg), sig[12:]) {
		t.Fatal("the signature is not over the cosigned message")
	}
	// Tampering: another body under the same line, another time.
	forged := strings.Replace(string(cosigned), "20852163", "20852164", 1)
	if _, err := note.Open([]byte(forged), note.VerifierList(v)); err == nil {
		t.Fatal("a changed checkpoint verified")
	}
	sig[5] ^= 1 // the timestamp
	line := "— witness.example/w1 " + base64.StdEncoding.EncodeToString(sig) + "\n"
	if _, err := note.Open([]byte(body+"\n"+line), note.VerifierList(v)); err == nil {
		t.Fatal("a changed timestamp verified")
	}
	_, other, _ := GenerateCosignerKey("witness.example/w1")
	ov, _ := NewCosignatureVerifier(other)
	if _, err := note.Open(cosigned, note.VerifierList(ov)); err == nil {
		t.Fatal("another key verified")
	}
	for _, bad := range []string{"", "x+1+AA==", logVkey, vkey[:len(vkey)-4] + "AAA="} {
		if _, err := NewCosignatureVerifier(bad); err == nil {
			t.Fatalf("verifier key %q accepted", bad)
		}
	}
}
