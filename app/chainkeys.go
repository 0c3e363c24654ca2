package app

import (
	"sort"
	"strconv"
	"time"

	"github.com/threadengine/engine/domain"
)

// ChainKeys are the installation's hash-chain secrets by version. Current
// signs new links (and invitations); every version verifies. A rotation adds
// a version and makes it current; old versions are kept for as long as links
// signed with them exist.
type ChainKeys struct {
	Current string
	Secrets map[string][]byte
	// PartialBefore: see domain.ChainKeyring.PartialBefore.
	PartialBefore map[string]time.Time
}

// Keyring is what verifies chains signed with these keys.
func (k ChainKeys) Keyring() domain.ChainKeyring {
	return domain.ChainKeyring{Secrets: k.Secrets, PartialBefore: k.PartialBefore}
}

// singleKey is the keyring of one secret, version hashVersion.
func singleKey(secret []byte) ChainKeys {
	return ChainKeys{Current: hashVersion, Secrets: map[string][]byte{hashVersion: secret}}
}

func (k ChainKeys) current() []byte { return k.Secrets[k.Current] }

// inviteKeys derives one invitation key per version, current first: a token
// signed before a rotation stays valid until it expires.
func (k ChainKeys) inviteKeys() []inviteKey {
	versions := make([]string, 0, len(k.Secrets))
	for v := range k.Secrets {
		// Alternates only verify old chains: no invitation was ever signed
		// with one this installation accepts.
		if v != k.Current && !domain.IsAlternateKey(v) {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versionLess(versions[j], versions[i]) })
	out := []inviteKey{{ID: k.Current, Key: deriveKey(k.current(), inviteKeyLabel)}}
	for _, v := range versions {
		out = append(out, inviteKey{ID: v, Key: deriveKey(k.Secrets[v], inviteKeyLabel)})
	}
	return out
}

// versionLess orders numeric versions numerically, others as strings.
func versionLess(a, b string) bool {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	if aerr == nil && berr == nil {
		return ai < bi
	}
	return a < b
}

// UseChainKeys replaces the single secret given to NewThreads with the
// installation's versioned keys (the composition root loads them from the
// database).
func (t *Threads) UseChainKeys(k ChainKeys) {
	t.keys = k
	t.inviteKeys = k.inviteKeys()
}

// LatestVersion is the highest of versions (numeric order where numeric).
func LatestVersion(versions []string) string {
	latest := ""
	for _, v := range versions {
		if latest == "" || versionLess(latest, v) {
			latest = v
		}
	}
	return latest
}
