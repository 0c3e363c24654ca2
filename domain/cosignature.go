package domain

// Witness cosignatures (C2SP tlog-cosignature, Ed25519 "cosignature/v1"):
// a witness states that, at a time, the checkpoint it signs is the largest
// consistent one it has seen of that log. The line is a signed-note
// signature line, so a cosigned checkpoint is the log's note with more
// lines, and note.Open verifies it with the witness's verifier.

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// cosignatureAlg is the signature type byte of an Ed25519 cosigner key.
const cosignatureAlg = 0x04

// cosignatureKeyHash is SHA-256(name || "\n" || 0x04 || public key)[:4].
func cosignatureKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{cosignatureAlg})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil)[:4])
}

// cosignedMessage is what a cosignature signs: two header lines and the
// checkpoint body.
func cosignedMessage(body []byte, ts uint64) []byte {
	return append([]byte("cosignature/v1\ntime "+strconv.FormatUint(ts, 10)+"\n"), body...)
}

// GenerateCosignerKey returns a new witness key pair: the private key
// (PRIVATE+KEY+name+hash+base64(0x04 || seed), kept by the witness) and the
// verifier key (name+hash+base64(0x04 || public key), given to logs and
// auditors).
func GenerateCosignerKey(name string) (skey, vkey string, err error) {
	if name == "" || strings.ContainsAny(name, "+ \n\t") {
		return "", "", errors.New("cosigner name must be non-empty without '+' or spaces")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	hash := fmt.Sprintf("%08x", cosignatureKeyHash(name, pub))
	skey = "PRIVATE+KEY+" + name + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{cosignatureAlg}, priv.Seed()...))
	vkey = name + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{cosignatureAlg}, pub...))
	return skey, vkey, nil
}

// splitKey reads name+hash+base64(0x04 || key).
func splitKey(s string, size int) (string, uint32, []byte, error) {
	name, rest, ok1 := strings.Cut(s, "+")
	hexHash, b64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || name == "" {
		return "", 0, nil, errors.New("cosigner key: want name+hash+key")
	}
	h, err := strconv.ParseUint(hexHash, 16, 32)
	if err != nil || len(hexHash) != 8 {
		return "", 0, nil, errors.New("cosigner key: bad key hash")
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 1+size || raw[0] != cosignatureAlg {
		return "", 0, nil, errors.New("cosigner key: not an Ed25519 cosignature (type 0x04) key")
	}
	return name, uint32(h), raw[1:], nil
}

// Cosigner signs cosignatures; it is a note.Signer (note.Sign appends its
// line to a checkpoint).
type Cosigner struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
	// Now is the clock of the timestamps (time.Now when nil).
	Now func() time.Time
}

// NewCosigner reads a private key of GenerateCosignerKey.
func NewCosigner(skey string) (*Cosigner, error) {
	rest, ok := strings.CutPrefix(skey, "PRIVATE+KEY+")
	if !ok {
		return nil, errors.New("cosigner key: not a private key")
	}
	name, hash, seed, err := splitKey(rest, ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	if cosignatureKeyHash(name, priv.Public().(ed25519.PublicKey)) != hash {
		return nil, errors.New("cosigner key: key hash does not match")
	}
	return &Cosigner{name: name, hash: hash, priv: priv}, nil
}

// Name is the witness's name.
func (c *Cosigner) Name() string { return c.name }

// KeyHash is the key's id.
func (c *Cosigner) KeyHash() uint32 { return c.hash }

// Sign returns timestamp || Ed25519 signature of the cosigned message.
func (c *Cosigner) Sign(msg []byte) ([]byte, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ts := uint64(now().Unix())
	sig := ed25519.Sign(c.priv, cosignedMessage(msg, ts))
	out := binary.BigEndian.AppendUint64(nil, ts)
	return append(out, sig...), nil
}

// Verifier is the verifier of the cosigner's key.
func (c *Cosigner) Verifier() note.Verifier {
	return cosignatureVerifier{name: c.name, hash: c.hash, pub: c.priv.Public().(ed25519.PublicKey)}
}

type cosignatureVerifier struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
}

// NewCosignatureVerifier reads a witness's verifier key
// (name+hash+base64(0x04 || Ed25519 public key)).
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, hash, pub, err := splitKey(vkey, ed25519.PublicKeySize)
	if err != nil {
		return nil, err
	}
	if cosignatureKeyHash(name, pub) != hash {
		return nil, errors.New("cosigner key: key hash does not match")
	}
	return cosignatureVerifier{name: name, hash: hash, pub: pub}, nil
}

func (v cosignatureVerifier) Name() string    { return v.name }
func (v cosignatureVerifier) KeyHash() uint32 { return v.hash }
func (v cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := binary.BigEndian.Uint64(sig[:8])
	if ts > 1<<63-1 {
		return false
	}
	return ed25519.Verify(v.pub, cosignedMessage(msg, ts), sig[8:])
}

// CosignatureTime is the timestamp of a cosignature line's signature bytes
// (as note.Signature.Base64 holds them: key hash, then timestamp).
func CosignatureTime(sigBase64 string) (time.Time, bool) {
	raw, err := base64.StdEncoding.DecodeString(sigBase64)
	if err != nil || len(raw) != 4+8+ed25519.SignatureSize {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint64(raw[4:12])), 0).UTC(), true
}
