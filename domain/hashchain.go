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
	Hash        string // "hmac-sha256-<version>:<hex>" or "sha256:<hex>"
	RecordedAt  time.Time
	// Record is the step as chain version 2 hashes it; needed to verify a
	// "sha256:" link (ContentHash is not used for those).
	Record *StepRecord
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
	Verified bool
	// Code says what was found (ChainVerified when Verified); Error says it
	// in words, naming the step.
	Code         ChainCode
	TotalEvents  int
	BrokenStepID string
	// BrokenStepName and BrokenIdempotencyKey name the step identity of the
	// first unverifiable attempt (set by the caller, which knows the keys).
	BrokenStepName, BrokenIdempotencyKey string
	BrokenAt                             *time.Time
	Error                                string
	// Missing lists the steps the thread's head or the transparency log
	// records but the store no longer holds (set by CheckHead and the log
	// check).
	Missing []MissingStep
	// Log is where the thread's steps are in the transparency log (set by
	// the log check; nil when it did not run).
	Log *ChainLogStatus
}

// ChainLogStatus is what the transparency log says about a thread.
type ChainLogStatus struct {
	// Leaves is how many of the thread's steps the log holds; Unlogged how
	// many stored steps it does not (steps recorded before the log existed
	// are logged when the engine first starts with it).
	Leaves, Unlogged int
	// LastIndex is the log index of the thread's newest logged step (-1: none).
	LastIndex int64
}

// MissingStep is a step some record says exists that the store lacks.
type MissingStep struct {
	StepID string
	Seq    int
	Hash   string
	// LogIndex is the step's leaf in the transparency log (-1: not known there).
	LogIndex int64
}

// ChainCode classifies a chain verification.
type ChainCode string

const (
	ChainVerified ChainCode = "verified"
	// ChainUnknownKey: a link is signed with an operator key (HMAC, chain
	// version 1) this installation does not hold, so it can be neither
	// verified nor called tampered.
	ChainUnknownKey ChainCode = "unknown_key"
	// ChainUnsupported: a hash in no format this engine knows.
	ChainUnsupported ChainCode = "unsupported_hash"
	// ChainTampered: a link's hash does not match its content.
	ChainTampered ChainCode = "tampered"
	// ChainIncomplete: the links do not form one chain (disconnected, forked).
	ChainIncomplete ChainCode = "incomplete"
	// ChainTruncated: the chain ends before the head the thread row records
	// (its newest steps were deleted).
	ChainTruncated ChainCode = "truncated"
	// ChainMissingSteps: the transparency log holds steps of the thread that
	// the store does not.
	ChainMissingSteps ChainCode = "missing_steps"
	// ChainLogMismatch: a stored step differs from its leaf in the log.
	ChainLogMismatch ChainCode = "log_mismatch"
	// ChainNotInLog: a stored step has no leaf although the log holds every
	// step the engine wrote (it was inserted behind the engine's back).
	ChainNotInLog ChainCode = "not_in_log"
	// ChainThreadDeleted: the thread is gone but the log has its steps and no
	// tombstone (deleted outside the documented delete and retention paths).
	ChainThreadDeleted ChainCode = "thread_deleted"
)

// chainSeverity orders codes: a status reports its most severe finding.
var chainSeverity = map[ChainCode]int{ChainVerified: 0, ChainUnknownKey: 1, ChainUnsupported: 2, ChainIncomplete: 3,
	ChainTruncated: 4, ChainMissingSteps: 5, ChainLogMismatch: 6, ChainNotInLog: 6, ChainTampered: 6, ChainThreadDeleted: 7}

// Fail records a finding on st unless a more severe one is recorded already.
func (st *ChainStatus) Fail(code ChainCode, stepID string, at *time.Time, msg string) {
	st.Verified = false
	if st.Code != "" && st.Code != ChainVerified && chainSeverity[st.Code] >= chainSeverity[code] {
		return
	}
	st.Code, st.BrokenStepID, st.BrokenAt, st.Error = code, stepID, at, msg
}

// ChainKeyring is what verifies chain links: the operator's HMAC secrets of
// chain version 1 by version (alternates included), and for each version the
// time before which its links may have been signed with a key the database
// never held (each replica of early releases generated its own): a link of
// that window that no key reproduces is unknown_key, not tampering. Chain
// version 2 links need no key.
type ChainKeyring struct {
	Secrets       map[string][]byte
	PartialBefore map[string]time.Time
}

// VerifyChain checks a thread's links (see ChainKeyring.VerifyChain) with
// secrets and no partial window.
func VerifyChain(secrets map[string][]byte, links []ChainLink) ChainStatus {
	return ChainKeyring{Secrets: secrets}.VerifyChain(links)
}

// VerifyChain checks a thread's links. It walks from PrevHash "" following
// prev → hash, never relying on the order of links (timestamps can tie or be
// edited), and recomputes each hash: chain version 2 ("sha256:") from the
// link's step record, version 1 with the secret version named in its prefix.
//
// A mismatch stops the walk ("Hash tampering detected at step <name> (<id>)"),
// as does an unknown format. A link whose key is not held is unknown_key and
// the walk goes on (later links may still be checked). If the walk ends
// before visiting every link the chain is disconnected or forked: "Chain
// incomplete: traversed X of Y events". No links verifies.
func (k ChainKeyring) VerifyChain(links []ChainLink) ChainStatus {
	st := ChainStatus{TotalEvents: len(links), Verified: true, Code: ChainVerified}
	if len(links) == 0 {
		return st
	}
	byPrev := make(map[string][]int, len(links))
	for i, l := range links {
		byPrev[l.PrevHash] = append(byPrev[l.PrevHash], i)
	}
	visited := make([]bool, len(links))
	count := 0
	fail := func(l ChainLink, code ChainCode, msg string) {
		at := l.RecordedAt
		st.Fail(code, l.StepID, &at, msg)
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
		if code, msg := k.verifyLink(l); code != ChainVerified {
			fail(l, code, msg+fmt.Sprintf(" at step %s (%s)", l.StepName, l.StepID))
			if code != ChainUnknownKey {
				return st
			}
		}
		cur = l.Hash
	}
	if count < len(links) {
		for i, v := range visited {
			if !v {
				l := links[i]
				fail(l, ChainIncomplete, fmt.Sprintf("Chain incomplete: traversed %d of %d events (disconnected or duplicate prev_hash)", count, len(links)))
				break
			}
		}
	}
	return st
}

// Head returns the hash the walk of links from "" ends at and how many links
// it visits (a chain that verified has one such path through all links).
func Head(links []ChainLink) (string, int) {
	byPrev := make(map[string]string, len(links))
	for _, l := range links {
		if _, ok := byPrev[l.PrevHash]; !ok {
			byPrev[l.PrevHash] = l.Hash
		}
	}
	cur, n := "", 0
	for n < len(links) {
		h, ok := byPrev[cur]
		if !ok {
			break
		}
		cur, n = h, n+1
	}
	return cur, n
}

// CheckHead compares a thread's chain with the head its thread row records
// (step count and last hash): a chain that ends early lost its newest steps.
func CheckHead(st *ChainStatus, links []ChainLink, stepCount int, lastHash string) {
	head, n := Head(links)
	if n == stepCount && head == lastHash {
		return
	}
	msg := fmt.Sprintf("Chain truncated: the thread records %d steps ending at %s, the stored chain has %d ending at %s",
		stepCount, shortHash(lastHash), n, shortHash(head))
	if n > stepCount {
		msg = fmt.Sprintf("Chain head mismatch: the thread records %d steps ending at %s, the stored chain has %d ending at %s",
			stepCount, shortHash(lastHash), n, shortHash(head))
	}
	if stepCount > n {
		st.Missing = append(st.Missing, MissingStep{Seq: stepCount, Hash: lastHash, LogIndex: -1})
	}
	st.Fail(ChainTruncated, "", nil, msg)
}

// CheckHeadSince is CheckHead for a chain read after its thread row while
// steps may be appended: before holds the step ids of an earlier read of the
// chain, made before the row was read. A step is stored in the transaction
// that moves the row's head, so links past the row's head that were not in
// before were appended after the row was read: the chain is accepted when
// its walk passes the row's head at the row's count and goes on only with
// such links. A tail that was already stored before the row was read (a
// step written without moving the head) still fails.
func CheckHeadSince(st *ChainStatus, links []ChainLink, before map[string]bool, stepCount int, lastHash string) {
	walk := walkChain(links)
	if len(walk) > stepCount && (stepCount == 0 && lastHash == "" || stepCount > 0 && walk[stepCount-1].Hash == lastHash) {
		appended := true
		for _, l := range walk[stepCount:] {
			if before[l.StepID] {
				appended = false
				break
			}
		}
		if appended {
			return
		}
	}
	CheckHead(st, links, stepCount, lastHash)
}

// walkChain is the path Head follows: from "" through the first link
// naming each hash as its prev.
func walkChain(links []ChainLink) []ChainLink {
	byPrev := make(map[string]int, len(links))
	for i, l := range links {
		if _, ok := byPrev[l.PrevHash]; !ok {
			byPrev[l.PrevHash] = i
		}
	}
	var out []ChainLink
	cur := ""
	for len(out) < len(links) {
		i, ok := byPrev[cur]
		if !ok {
			break
		}
		out = append(out, links[i])
		cur = links[i].Hash
	}
	return out
}

func shortHash(h string) string {
	if h == "" {
		return `""`
	}
	if len(h) > 24 {
		return h[:24] + "…"
	}
	return h
}

// verifyLink recomputes one link's hash.
func (k ChainKeyring) verifyLink(l ChainLink) (ChainCode, string) {
	if strings.HasPrefix(l.Hash, StepHashPrefix) {
		if !IsStepHash(l.Hash) || l.Record == nil {
			return ChainUnsupported, "Unsupported hash format"
		}
		h, err := StepHash(*l.Record)
		if err != nil {
			return ChainTampered, "Hash tampering detected (" + err.Error() + ")"
		}
		if h != l.Hash || l.Record.PrevHash != l.PrevHash {
			return ChainTampered, "Hash tampering detected"
		}
		return ChainVerified, ""
	}
	version, ok := HashVersion(l.Hash)
	if !ok {
		return ChainUnsupported, "Unsupported hash format"
	}
	ok, known := linkVerifies(k.Secrets, version, l)
	switch {
	case ok:
		return ChainVerified, ""
	case !known:
		return ChainUnknownKey, fmt.Sprintf("Unknown hash secret version %q", version)
	}
	if before, partial := k.PartialBefore[version]; partial && l.RecordedAt.Before(before) {
		return ChainUnknownKey, fmt.Sprintf("Unknown hash key: version %q link from before keys were shared matches no key this installation holds (start a replica with its old data directory to import its key)", version)
	}
	return ChainTampered, "Hash tampering detected"
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
	return ChainKeyring{Secrets: secrets}.VerifyLink(l)
}

// VerifyLink: see the function VerifyLink.
func (k ChainKeyring) VerifyLink(l ChainLink) string {
	switch code, msg := k.verifyLink(l); code {
	case ChainVerified:
		return ""
	case ChainTampered:
		return "Hash mismatch - data tampering detected"
	default:
		return msg
	}
}
