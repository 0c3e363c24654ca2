package threadstore

// The transparency log's signing keys, kept in installation_keys like the
// hash-chain keys (shared by every replica, sealed when a keys encryption
// key is configured): purpose log_signing, one row per version, the secret
// being the signed-note private key text and the fingerprint the public
// verifier key (published at GET /v1/log/keys). A rotation adds a version;
// the newest signs, every version stays published.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/threadengine/engine/adapters/sqldb"
)

const purposeLogSigning = "log_signing"

// LogKeys are the log's signing key and every verifier key it ever had.
type LogKeys struct {
	// Origin is the log's name: the first line of each checkpoint and the
	// key name.
	Origin string
	Signer note.Signer
	// Version names Signer's row.
	Version string
	// Verifiers are the public keys, newest first ("<name>+<hash>+<base64>").
	Verifiers []string
}

// DefaultLogOrigin names a log whose origin is not configured: unique per
// installation (a random suffix), stable once generated (kept in the key).
func DefaultLogOrigin() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "threadengine.local/log/" + hex.EncodeToString(b)
}

// LoadLogKeys returns the installation's log keys, generating the first
// (named origin, or DefaultLogOrigin() when "") if the database has none.
// The origin of an existing log is the one in its keys: a different
// configured origin is refused (it would start another log's checkpoints).
func LoadLogKeys(ctx context.Context, db *sqldb.DB, origin string, sealer *Sealer, now time.Time) (LogKeys, error) {
	rows, err := readKeys(ctx, db, purposeLogSigning)
	if err != nil {
		return LogKeys{}, err
	}
	if len(rows) == 0 {
		if origin == "" {
			origin = DefaultLogOrigin()
		}
		if err := insertLogKey(ctx, db, "1", origin, sealer, now); err != nil {
			return LogKeys{}, err
		}
		if rows, err = readKeys(ctx, db, purposeLogSigning); err != nil {
			return LogKeys{}, err
		}
	}
	// Newest (highest numeric version) first.
	sortRows(rows)
	var out LogKeys
	for _, r := range rows {
		out.Verifiers = append(out.Verifiers, r.Fingerprint)
	}
	top := rows[0]
	if top.Secret == nil {
		return LogKeys{}, fmt.Errorf("installation_keys: log signing key version %s has no private key", top.Version)
	}
	skey, err := sealer.open(purposeLogSigning, top.Version, *top.Secret)
	if err != nil {
		return LogKeys{}, err
	}
	if out.Signer, err = note.NewSigner(skey); err != nil {
		return LogKeys{}, fmt.Errorf("installation_keys: log signing key version %s is corrupt: %w", top.Version, err)
	}
	v, err := note.NewVerifier(top.Fingerprint)
	if err != nil || v.KeyHash() != out.Signer.KeyHash() || v.Name() != out.Signer.Name() {
		return LogKeys{}, fmt.Errorf("installation_keys: log signing key version %s does not match its public key", top.Version)
	}
	out.Origin, out.Version = out.Signer.Name(), top.Version
	if origin != "" && origin != out.Origin {
		return LogKeys{}, fmt.Errorf("transparency.origin %q: this installation's log is %q (the origin is fixed when its first "+
			"key is generated); remove the setting or set it to that", origin, out.Origin)
	}
	return out, nil
}

// RotateLogKey adds a new signing key version for the log's origin; engines
// sign with it from their next start.
func RotateLogKey(ctx context.Context, db *sqldb.DB, sealer *Sealer, now time.Time) (string, error) {
	cur, err := LoadLogKeys(ctx, db, "", sealer, now)
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(cur.Version)
	if err != nil {
		return "", fmt.Errorf("log signing key version %q is not numeric", cur.Version)
	}
	next := strconv.Itoa(n + 1)
	if err := insertLogKey(ctx, db, next, cur.Origin, sealer, now); err != nil {
		return "", err
	}
	return next, nil
}

func insertLogKey(ctx context.Context, db *sqldb.DB, version, origin string, sealer *Sealer, now time.Time) error {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return fmt.Errorf("transparency.origin %q: %w", origin, err)
	}
	sealed, err := sealer.seal(purposeLogSigning, version, skey)
	if err != nil {
		return err
	}
	// Replicas starting together race here; the first insert wins.
	_, err = db.ExecContext(ctx, db.Rebind(`INSERT INTO installation_keys (purpose, version, secret, fingerprint, created_at)
 VALUES (?,?,?,?,?) ON CONFLICT (purpose, version) DO NOTHING`), purposeLogSigning, version, sealed, vkey, sqldb.Time(now))
	if err != nil {
		return fmt.Errorf("installation_keys: %w", err)
	}
	return nil
}

// sortRows orders key rows newest version first (numeric where numeric).
func sortRows(rows []keyRow) {
	less := func(a, b string) bool {
		ai, aerr := strconv.Atoi(a)
		bi, berr := strconv.Atoi(b)
		if aerr == nil && berr == nil {
			return ai > bi
		}
		return a > b
	}
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && less(rows[j].Version, rows[j-1].Version); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}

// sealClearKeys encrypts the secrets stored in clear when a keys encryption
// key is configured (an installation that turns encryption on). Each update
// applies only while the row still holds the clear value, so replicas
// starting together do not seal twice.
func sealClearKeys(ctx context.Context, db *sqldb.DB, sealer *Sealer) error {
	if sealer == nil {
		return nil
	}
	var rows []struct {
		Purpose string `db:"purpose"`
		Version string `db:"version"`
		Secret  string `db:"secret"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT purpose, version, secret FROM installation_keys WHERE secret IS NOT NULL`); err != nil {
		return fmt.Errorf("installation_keys: %w", err)
	}
	for _, r := range rows {
		if isSealed(r.Secret) {
			if _, err := sealer.open(r.Purpose, r.Version, r.Secret); err != nil {
				return err
			}
			continue
		}
		sealed, err := sealer.seal(r.Purpose, r.Version, r.Secret)
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, db.Rebind(`UPDATE installation_keys SET secret = ? WHERE purpose = ? AND version = ? AND secret = ?`),
			sealed, r.Purpose, r.Version, r.Secret); err != nil {
			return fmt.Errorf("installation_keys: %w", err)
		}
	}
	return nil
}

// partialKeyWindow is domain.ChainKeyring.PartialBefore: version 1 links
// recorded before the installation's version-1 key was stored in the
// database may be signed with a replica's own key from an earlier release,
// which the database may never have seen.
func partialKeyWindow(ctx context.Context, db *sqldb.DB) (map[string]time.Time, error) {
	var at []time.Time
	if err := db.SelectContext(ctx, &at, db.Rebind(`SELECT created_at FROM installation_keys WHERE purpose = ? AND version = '1'`),
		purposeHashChain); err != nil {
		return nil, fmt.Errorf("installation_keys: %w", err)
	}
	if len(at) == 0 {
		return nil, nil
	}
	return map[string]time.Time{"1": at[0].UTC()}, nil
}

// VerifierKeyName is the key name of a verifier key text.
func VerifierKeyName(vkey string) string {
	name, _, _ := strings.Cut(vkey, "+")
	return name
}
