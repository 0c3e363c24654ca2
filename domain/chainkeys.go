package domain

import (
	"sort"
	"strconv"
	"time"
)

// firstChainKeyVersion names the first hash-chain secret. Secrets are kept
// by version forever; a rotation adds a version, it never replaces one.
const firstChainKeyVersion = "1"

// ChainKeys are the installation's hash-chain secrets by version. Current
// signs new links (and invitations); every version verifies. A rotation adds
// a version and makes it current; old versions are kept for as long as links
// signed with them exist.
type ChainKeys struct {
	Current string
	Secrets map[string][]byte
	// PartialBefore: see ChainKeyring.PartialBefore.
	PartialBefore map[string]time.Time
}

// Keyring is what verifies chains signed with these keys.
func (k ChainKeys) Keyring() ChainKeyring {
	return ChainKeyring{Secrets: k.Secrets, PartialBefore: k.PartialBefore}
}

// SingleChainKey is the keyring of one secret, version 1.
func SingleChainKey(secret []byte) ChainKeys {
	return ChainKeys{Current: firstChainKeyVersion, Secrets: map[string][]byte{firstChainKeyVersion: secret}}
}

// CurrentSecret is the secret new links are signed with.
func (k ChainKeys) CurrentSecret() []byte { return k.Secrets[k.Current] }

// OlderVersions lists the versions other than Current that may have signed
// invitations (alternates only verify old chains), newest first.
func (k ChainKeys) OlderVersions() []string {
	versions := make([]string, 0, len(k.Secrets))
	for v := range k.Secrets {
		// Alternates only verify old chains: no invitation was ever signed
		// with one this installation accepts.
		if v != k.Current && !IsAlternateKey(v) {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versionLess(versions[j], versions[i]) })
	return versions
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
