package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// HashPrefix starts every chain hash; the secret version follows it.
const HashPrefix = "hmac-sha256-"

// ChainLink is one recorded step attempt as the hash chain sees it.
//
// When verifying, ContentHash must be recomputed from the stored context and
// metadata (ContentHash(...)), not copied from a stored column: otherwise a
// changed context would go unnoticed.
type ChainLink struct {
	ThreadID    string
	StepID      string // the attempt's UUID
	StepName    string
	ContentHash string
	PrevHash    string // "" for the first link of a thread
	Hash        string // "hmac-sha256-<version>:<hex>"
	RecordedAt  time.Time
}

// ContentHash is the SHA-256 (hex) of the canonical JSON of
// {"context":…, "metadata":…}: object keys sorted at every level, no
// insignificant whitespace, nil maps written as {}.
func ContentHash(context map[string]string, metadata map[string]any) string {
	if context == nil {
		context = map[string]string{}
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	// encoding/json writes map keys sorted, which is what makes this canonical.
	b, err := json.Marshal(map[string]any{"context": context, "metadata": metadata})
	if err != nil {
		// Values JSON cannot carry (NaN, channels) never come from a decoded
		// request; fmt also prints maps sorted, so this stays deterministic.
		b = []byte(fmt.Sprintf("%v|%v", context, metadata))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ChainTime is the recordedAt form that goes into the hash: UTC, truncated to
// microseconds (what both databases keep), RFC 3339 with nanosecond layout.
func ChainTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

// ChainMessage is the string the HMAC is computed over.
func ChainMessage(l ChainLink) string {
	return strings.Join([]string{l.PrevHash, l.ThreadID, l.StepID, l.StepName, l.ContentHash, ChainTime(l.RecordedAt)}, ":")
}

// ChainHash is HMAC-SHA256(secret, ChainMessage(l)) as
// "hmac-sha256-<version>:<hex>". l.Hash is ignored.
func ChainHash(secret []byte, version string, l ChainLink) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ChainMessage(l)))
	return HashPrefix + version + ":" + hex.EncodeToString(m.Sum(nil))
}

// AlternateKey names, in a secrets map, another secret for version: links
// of that version signed with it verify too. Before keys were shared each
// engine generated its own version-1 key, so an installation that ran
// several replicas then holds several; only the first is signed with.
func AlternateKey(version, name string) string { return version + "#" + name }

// IsAlternateKey reports whether a secrets-map key is an alternate.
func IsAlternateKey(key string) bool { return strings.Contains(key, "#") }

// linkVerifies reports whether a secret of version (its own, or an
// alternate) reproduces l's hash, and whether version has any secret.
func linkVerifies(secrets map[string][]byte, version string, l ChainLink) (ok, known bool) {
	alternates := AlternateKey(version, "")
	for k, secret := range secrets {
		if k != version && !strings.HasPrefix(k, alternates) {
			continue
		}
		known = true
		if hmac.Equal([]byte(ChainHash(secret, version, l)), []byte(l.Hash)) {
			return true, true
		}
	}
	return false, known
}

// HashVersion extracts the secret version from a chain hash.
func HashVersion(hash string) (string, bool) {
	rest, ok := strings.CutPrefix(hash, HashPrefix)
	if !ok {
		return "", false
	}
	version, digest, ok := strings.Cut(rest, ":")
	if !ok || version == "" || digest == "" {
		return "", false
	}
	return version, true
}

// ChainStatus is the outcome of verifying one thread's chain.
type ChainStatus struct {
	Verified     bool
	TotalEvents  int
	BrokenStepID string
	// BrokenStepName and BrokenIdempotencyKey name the step identity of the
	// first unverifiable attempt (set by the caller, which knows the keys).
	BrokenStepName, BrokenIdempotencyKey string
	BrokenAt                             *time.Time
	Error                                string
}

// VerifyChain checks a thread's links. It walks from PrevHash "" following
// prev → hash, never relying on the order of links (timestamps can tie or be
// edited), and recomputes each hash with the secret version named in its
// prefix. Secrets are keyed by version and must be kept for as long as links
// signed with them exist.
//
// The first unverifiable link stops the walk: an unknown format or secret
// version, or a mismatch ("Hash tampering detected at step <name> (<id>)").
// If the walk ends before visiting every link the chain is disconnected or
// forked: "Chain incomplete: traversed X of Y events". No links verifies.
func VerifyChain(secrets map[string][]byte, links []ChainLink) ChainStatus {
	st := ChainStatus{TotalEvents: len(links)}
	if len(links) == 0 {
		st.Verified = true
		return st
	}
	byPrev := make(map[string][]int, len(links))
	for i, l := range links {
		byPrev[l.PrevHash] = append(byPrev[l.PrevHash], i)
	}
	visited := make([]bool, len(links))
	count := 0
	broken := func(l ChainLink, msg string) ChainStatus {
		at := l.RecordedAt
		st.BrokenStepID, st.BrokenAt, st.Error = l.StepID, &at, msg
		return st
	}
	cur := ""
	for {
		next := -1
		for _, i := range byPrev[cur] {
			if !visited[i] {
				next = i
				break
			}
		}
		if next < 0 {
			break
		}
		l := links[next]
		visited[next] = true
		count++
		version, ok := HashVersion(l.Hash)
		if !ok {
			return broken(l, fmt.Sprintf("Unsupported hash format at step %s (%s)", l.StepName, l.StepID))
		}
		if ok, known := linkVerifies(secrets, version, l); !known {
			return broken(l, fmt.Sprintf("Unknown hash secret version %q at step %s (%s)", version, l.StepName, l.StepID))
		} else if !ok {
			return broken(l, fmt.Sprintf("Hash tampering detected at step %s (%s)", l.StepName, l.StepID))
		}
		cur = l.Hash
	}
	if count < len(links) {
		for i, v := range visited {
			if !v {
				l := links[i]
				return broken(l, fmt.Sprintf("Chain incomplete: traversed %d of %d events (disconnected or duplicate prev_hash)", count, len(links)))
			}
		}
	}
	st.Verified = true
	return st
}

// KeyFingerprint identifies a secret without revealing it: the first 16 bytes
// of HMAC-SHA256(secret, "threadengine key fingerprint"), hex. Replicas
// compare fingerprints to prove they hold the same key.
func KeyFingerprint(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("threadengine key fingerprint"))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// VerifyLink recomputes one link's hash; it returns "" when the link
// verifies, otherwise the reason (the reference's step-integrity messages).
func VerifyLink(secrets map[string][]byte, l ChainLink) string {
	version, ok := HashVersion(l.Hash)
	if !ok {
		return "Unsupported hash format"
	}
	if ok, known := linkVerifies(secrets, version, l); !known {
		return fmt.Sprintf("Unknown hash secret version %q", version)
	} else if !ok {
		return "Hash mismatch - data tampering detected"
	}
	return ""
}
