package identitystore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

const apiKeyColumns = `id, name, key_prefix, key_hash, user_id, service_account_id, created_by, created_at, last_used_at, expires_at, revoked_at`

type apiKeyRow struct {
	ID               string         `db:"id"`
	Name             string         `db:"name"`
	Prefix           string         `db:"key_prefix"`
	Hash             string         `db:"key_hash"`
	UserID           sql.NullString `db:"user_id"`
	ServiceAccountID sql.NullString `db:"service_account_id"`
	CreatedBy        string         `db:"created_by"`
	CreatedAt        time.Time      `db:"created_at"`
	LastUsedAt       sql.NullTime   `db:"last_used_at"`
	ExpiresAt        sql.NullTime   `db:"expires_at"`
	RevokedAt        sql.NullTime   `db:"revoked_at"`
}

func (r apiKeyRow) key() domain.APIKey {
	return domain.APIKey{
		ID: r.ID, Name: r.Name, Prefix: r.Prefix, Hash: r.Hash,
		UserID: r.UserID.String, ServiceAccountID: r.ServiceAccountID.String, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt.UTC(), LastUsedAt: sqldb.FromNullTime(r.LastUsedAt), ExpiresAt: sqldb.FromNullTime(r.ExpiresAt), RevokedAt: sqldb.FromNullTime(r.RevokedAt),
	}
}

var errKeyNotFound = domain.NewBase(domain.KindNotFound, domain.CodeNotFound, "API key not found")

func (s *Store) CreateAPIKey(ctx context.Context, k domain.APIKey) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO api_keys (`+apiKeyColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?)`),
		k.ID, k.Name, k.Prefix, k.Hash, nullString(k.UserID), nullString(k.ServiceAccountID), k.CreatedBy,
		sqldb.Time(k.CreatedAt), sqldb.TimePtr(k.LastUsedAt), sqldb.TimePtr(k.ExpiresAt), sqldb.TimePtr(k.RevokedAt))
	if isForeignKeyViolation(err) {
		if k.UserID != "" {
			return domain.NotFound("user")
		}
		return domain.NotFound("service account")
	}
	return sqldb.TranslateError(err)
}

func (s *Store) GetAPIKey(ctx context.Context, id string) (domain.APIKey, error) {
	k, err := s.getAPIKey(ctx, s.db, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`, id)
	return k, sqldb.TranslateError(err)
}

func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, error) {
	k, err := s.getAPIKey(ctx, s.db, `SELECT `+apiKeyColumns+` FROM api_keys WHERE key_hash = ?`, hash)
	return k, sqldb.TranslateError(err)
}

func (s *Store) getAPIKey(ctx context.Context, q sqlx.QueryerContext, query string, args ...any) (domain.APIKey, error) {
	var r apiKeyRow
	err := sqlx.GetContext(ctx, q, &r, s.q(query), args...)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.APIKey{}, errKeyNotFound
	}
	if err != nil {
		return domain.APIKey{}, err
	}
	return r.key(), nil
}

// ListAPIKeys returns keys newest first.
func (s *Store) ListAPIKeys(ctx context.Context, f ports.APIKeyFilter) ([]domain.APIKey, error) {
	query := `SELECT ` + apiKeyColumns + ` FROM api_keys WHERE 1=1`
	var args []any
	if f.UserID != "" {
		query += ` AND user_id = ?`
		args = append(args, f.UserID)
	}
	if !f.IncludeRevoked {
		query += ` AND revoked_at IS NULL`
	}
	query += ` ORDER BY created_at DESC, id DESC`
	var rows []apiKeyRow
	if err := s.db.SelectContext(ctx, &rows, s.q(query), args...); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]domain.APIKey, len(rows))
	for i, r := range rows {
		out[i] = r.key()
	}
	return out, nil
}

// RevokeAPIKey revokes the key and every session exchanged from it. The first
// revocation time is kept; sessions are revoked again regardless, which is
// harmless and heals any session created in a race with the revocation.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, now time.Time) (domain.APIKey, error) {
	now = sqldb.Time(now)
	var k domain.APIKey
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := s.db.XactLock(ctx, tx, identityLock); err != nil { // see UpdateUser
			return err
		}
		var err error
		k, err = s.getAPIKey(ctx, tx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`+s.db.ForUpdate(), id)
		if err != nil {
			return err
		}
		if k.RevokedAt == nil {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = ? WHERE id = ?`), now, id); err != nil {
				return err
			}
			k.Revoke(now)
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE sessions SET revoked_at = ? WHERE source_key_id = ? AND revoked_at IS NULL`), now, id)
		return err
	})
	if err != nil {
		return domain.APIKey{}, err
	}
	return k, nil
}

// touchInterval limits last_used_at writes to one per key per minute: every
// authenticated request touches its key, and the exact time adds nothing.
const touchInterval = time.Minute

// TouchAPIKey records use of the key. A missing key is not an error: the
// touch is advisory and the key may have been deleted meanwhile.
func (s *Store) TouchAPIKey(ctx context.Context, id string, now time.Time) error {
	now = sqldb.Time(now)
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`),
		now, id, now.Add(-touchInterval))
	return sqldb.TranslateError(err)
}

const sessionColumns = `id, token_hash, principal_kind, principal_id, source, source_key_id, identity, id_token_hint, created_at, expires_at, revoked_at`

type sessionRow struct {
	ID            string         `db:"id"`
	TokenHash     string         `db:"token_hash"`
	PrincipalKind string         `db:"principal_kind"`
	PrincipalID   string         `db:"principal_id"`
	Source        string         `db:"source"`
	SourceKeyID   sql.NullString `db:"source_key_id"`
	Identity      string         `db:"identity"`
	IDTokenHint   string         `db:"id_token_hint"`
	CreatedAt     time.Time      `db:"created_at"`
	ExpiresAt     time.Time      `db:"expires_at"`
	RevokedAt     sql.NullTime   `db:"revoked_at"`
}

func (s *Store) CreateSession(ctx context.Context, se domain.Session) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO sessions (`+sessionColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?)`),
		se.ID, se.TokenHash, string(se.PrincipalKind), se.PrincipalID, string(se.Source), nullString(se.SourceKeyID),
		se.Identity, se.IDTokenHint, sqldb.Time(se.CreatedAt), sqldb.Time(se.ExpiresAt), sqldb.TimePtr(se.RevokedAt))
	if isForeignKeyViolation(err) {
		return errKeyNotFound
	}
	return sqldb.TranslateError(err)
}

func (s *Store) GetSessionByTokenHash(ctx context.Context, hash string) (domain.Session, error) {
	var r sessionRow
	err := s.db.GetContext(ctx, &r, s.q(`SELECT `+sessionColumns+` FROM sessions WHERE token_hash = ?`), hash)
	if err != nil {
		return domain.Session{}, sqldb.NotFoundAs(err, "session")
	}
	return domain.Session{
		ID: r.ID, TokenHash: r.TokenHash, PrincipalKind: domain.PrincipalKind(r.PrincipalKind), PrincipalID: r.PrincipalID,
		Source: domain.SessionSource(r.Source), SourceKeyID: r.SourceKeyID.String, Identity: r.Identity, IDTokenHint: r.IDTokenHint,
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), RevokedAt: sqldb.FromNullTime(r.RevokedAt),
	}, nil
}

// RevokeSession ends a session, keeping the first revocation time. A missing
// session (e.g. already purged after expiry) is NotFound.
func (s *Store) RevokeSession(ctx context.Context, id string, now time.Time) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`), sqldb.Time(now), id)
	if err != nil {
		return sqldb.TranslateError(err)
	}
	n, err := rowsAffected(res)
	if err != nil {
		return err
	}
	if n == 0 {
		return domain.NotFound("session")
	}
	return nil
}

func (s *Store) DeleteExpiredSessions(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE expires_at < ?`), sqldb.Time(cutoff))
	if err != nil {
		return 0, sqldb.TranslateError(err)
	}
	n, err := rowsAffected(res)
	return int(n), err
}
