package threadstore

// Encryption at rest of the secrets in installation_keys: with a keys
// encryption key configured (security.keys_encryption_key), every secret is
// stored AES-256-GCM sealed, bound to its purpose and version; without one,
// as before (hex, or the signed-note key text), and a database dump is as
// sensitive as the keys it holds.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// sealedPrefix starts a sealed secret: "aesgcm:" + base64(nonce || sealed).
const sealedPrefix = "aesgcm:"

// Sealer seals installation secrets; the nil *Sealer stores them in clear.
type Sealer struct{ aead cipher.AEAD }

// NewSealer parses a keys encryption key: 32 bytes as 64 hex digits or as
// standard base64. "" is the nil Sealer (no encryption).
func NewSealer(key string) (*Sealer, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, nil
	}
	raw, err := hex.DecodeString(key)
	if err != nil || len(raw) != 32 {
		raw, err = base64.StdEncoding.DecodeString(key)
	}
	if err != nil || len(raw) != 32 {
		return nil, errors.New("security.keys_encryption_key: want 32 bytes, as 64 hex digits or base64")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

func sealAAD(purpose, version string) []byte {
	return []byte("threadengine installation key\x00" + purpose + "\x00" + version)
}

// seal returns how clear (the stored form without encryption) is stored.
func (s *Sealer) seal(purpose, version, clear string) (string, error) {
	if s == nil {
		return clear, nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, []byte(clear), sealAAD(purpose, version))
	return sealedPrefix + base64.StdEncoding.EncodeToString(out), nil
}

// open returns the clear form of a stored secret.
func (s *Sealer) open(purpose, version, stored string) (string, error) {
	rest, sealed := strings.CutPrefix(stored, sealedPrefix)
	if !sealed {
		return stored, nil
	}
	if s == nil {
		return "", fmt.Errorf("installation_keys: the %s key version %s is encrypted and no keys encryption key is configured "+
			"(set security.keys_encryption_key, env THREADENGINE_SECURITY__KEYS_ENCRYPTION_KEY)", purpose, version)
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", fmt.Errorf("installation_keys: the %s key version %s is corrupt", purpose, version)
	}
	clear, err := s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], sealAAD(purpose, version))
	if err != nil {
		return "", fmt.Errorf("installation_keys: the %s key version %s does not open with the configured keys encryption key", purpose, version)
	}
	return string(clear), nil
}

// isSealed reports whether a stored secret is encrypted.
func isSealed(stored string) bool { return strings.HasPrefix(stored, sealedPrefix) }
