package threadstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// HashChainKeyFile is the file, under the data directory, holding the
// generated hash-chain secret when none is configured.
const HashChainKeyFile = "hash_chain.key"

// LoadHashSecret returns the configured secret, or the one generated on a
// previous start, or generates 32 random bytes once and keeps them (0600).
// Losing the file makes existing chains unverifiable, so it is never rewritten.
func LoadHashSecret(configured, dataDir string) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	path := filepath.Join(dataDir, HashChainKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		sec, derr := hex.DecodeString(strings.TrimSpace(string(b)))
		if derr != nil || len(sec) < 16 {
			return nil, fmt.Errorf("security.hash_chain_secret: %s is corrupt", path)
		}
		return sec, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("security.hash_chain_secret: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("security.hash_chain_secret: %w", err)
	}
	sec := make([]byte, 32)
	if _, err := rand.Read(sec); err != nil {
		return nil, err
	}
	// O_EXCL: two engines starting on one data dir must not both generate.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadHashSecret("", dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("security.hash_chain_secret: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(sec) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return sec, f.Close()
}
