package identitystore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

var errEmailTaken = domain.NewBase(domain.KindConflict, domain.CodeEmailTaken, "a user with this email already exists")

const userColumns = `id, email, full_name, role, status, email_verified, created_at, updated_at, activated_at, last_login_at, erased_at`

type userRow struct {
	ID            string       `db:"id"`
	Email         string       `db:"email"`
	FullName      string       `db:"full_name"`
	Role          string       `db:"role"`
	Status        string       `db:"status"`
	EmailVerified bool         `db:"email_verified"`
	CreatedAt     time.Time    `db:"created_at"`
	UpdatedAt     time.Time    `db:"updated_at"`
	ActivatedAt   sql.NullTime `db:"activated_at"`
	LastLoginAt   sql.NullTime `db:"last_login_at"`
	ErasedAt      sql.NullTime `db:"erased_at"`
}

func (r userRow) user() domain.User {
	return domain.User{
		ID: r.ID, Email: r.Email, FullName: r.FullName,
		Role: domain.Role(r.Role), Status: domain.Status(r.Status), EmailVerified: r.EmailVerified,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		ActivatedAt: sqldb.FromNullTime(r.ActivatedAt), LastLoginAt: sqldb.FromNullTime(r.LastLoginAt),
		ErasedAt: sqldb.FromNullTime(r.ErasedAt),
	}
}

// CreateUser inserts u. The email is stored lower-case so that uniqueness is
// case-insensitive.
func (s *Store) CreateUser(ctx context.Context, u domain.User) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO users (`+userColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?)`),
		u.ID, strings.ToLower(u.Email), u.FullName, string(u.Role), string(u.Status), u.EmailVerified,
		sqldb.Time(u.CreatedAt), sqldb.Time(u.UpdatedAt), sqldb.TimePtr(u.ActivatedAt), sqldb.TimePtr(u.LastLoginAt),
		sqldb.TimePtr(u.ErasedAt))
	// Ids are random, so a unique violation means the email is taken; the
	// lookup only guards against reporting an id collision as one.
	if sqldb.IsUniqueViolation(err) {
		if _, gerr := s.GetUserByEmail(ctx, u.Email); gerr == nil {
			return errEmailTaken
		}
	}
	return sqldb.TranslateError(err)
}

func (s *Store) GetUser(ctx context.Context, id string) (domain.User, error) {
	u, err := s.getUser(ctx, s.db, `SELECT `+userColumns+` FROM users WHERE id = ?`, id)
	return u, sqldb.TranslateError(err)
}

// GetUserByEmail matches case-insensitively: stored emails are lower-case.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (domain.User, error) {
	u, err := s.getUser(ctx, s.db, `SELECT `+userColumns+` FROM users WHERE email = ?`, strings.ToLower(strings.TrimSpace(email)))
	return u, sqldb.TranslateError(err)
}

func (s *Store) getUser(ctx context.Context, q sqlx.QueryerContext, query string, args ...any) (domain.User, error) {
	var r userRow
	err := sqlx.GetContext(ctx, q, &r, s.q(query), args...)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.User{}, domain.NotFound("user")
	}
	if err != nil {
		return domain.User{}, err
	}
	return r.user(), nil
}

// ListUsers returns every user sorted by email.
func (s *Store) ListUsers(ctx context.Context) ([]domain.User, error) {
	var rows []userRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+userColumns+` FROM users ORDER BY email`); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]domain.User, len(rows))
	for i, r := range rows {
		out[i] = r.user()
	}
	return out, nil
}

func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM users`); err != nil {
		return 0, sqldb.TranslateError(err)
	}
	return n, nil
}

// UpdateUser runs fn on the locked user with the set of active human admins.
// Every identity change that locks several rows (this, RevokeAPIKey) first
// takes the identity lock, then rows in one order — users, api_keys,
// sessions — so concurrent changes queue instead of deadlocking, and two
// demotions can never both see the other admin as still active. The rows
// are locked FOR NO KEY UPDATE, which does not wait for the key-share locks
// that inserts referencing a user (sessions, keys) take.
func (s *Store) UpdateUser(ctx context.Context, id string, fn ports.UserUpdateFn) (domain.User, error) {
	var after domain.User
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := s.db.XactLock(ctx, tx, identityLock); err != nil {
			return err
		}
		var admins []string
		if err := tx.SelectContext(ctx, &admins, s.q(`SELECT id FROM users WHERE role = 'admin' AND status = 'active' ORDER BY id`+s.forNoKeyUpdate())); err != nil {
			return err
		}
		before, err := s.getUser(ctx, tx, `SELECT `+userColumns+` FROM users WHERE id = ?`+s.forNoKeyUpdate(), id)
		if err != nil {
			return err
		}
		after = before
		if err := fn(&after, admins); err != nil {
			return sqldb.CallerError(err)
		}
		after.ID = before.ID
		after.CreatedAt = before.CreatedAt
		after.Email = strings.ToLower(after.Email)
		_, err = tx.ExecContext(ctx, s.q(`UPDATE users SET email = ?, full_name = ?, role = ?, status = ?, email_verified = ?,
			updated_at = ?, activated_at = ?, last_login_at = ?, erased_at = ? WHERE id = ?`),
			after.Email, after.FullName, string(after.Role), string(after.Status), after.EmailVerified,
			sqldb.Time(after.UpdatedAt), sqldb.TimePtr(after.ActivatedAt), sqldb.TimePtr(after.LastLoginAt),
			sqldb.TimePtr(after.ErasedAt), id)
		if sqldb.IsUniqueViolation(err) {
			return errEmailTaken
		}
		if err != nil {
			return err
		}
		return s.applyEffects(ctx, tx, id, domain.EffectsOf(before, after), after.UpdatedAt)
	})
	if err != nil {
		return domain.User{}, err
	}
	after.UpdatedAt = sqldb.Time(after.UpdatedAt)
	after.ActivatedAt = roundPtr(after.ActivatedAt)
	after.LastLoginAt = roundPtr(after.LastLoginAt)
	after.ErasedAt = roundPtr(after.ErasedAt)
	return after, nil
}

// applyEffects revokes what a user change demands. The domain stamps
// UpdatedAt with "now" on every change that has effects, so it is the
// revocation time too.
func (s *Store) applyEffects(ctx context.Context, tx *sqlx.Tx, userID string, fx domain.UserChangeEffects, now time.Time) error {
	if now.IsZero() {
		now = time.Now()
	}
	now = sqldb.Time(now)
	if fx.RevokePersonalKeys { // api_keys before sessions, as RevokeAPIKey
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL`), now, userID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET revoked_at = ? WHERE revoked_at IS NULL
			AND source_key_id IN (SELECT id FROM api_keys WHERE user_id = ?)`), now, userID); err != nil {
			return err
		}
	}
	if fx.RevokeSessions {
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET revoked_at = ? WHERE principal_kind = 'user'
			AND principal_id = ? AND revoked_at IS NULL`), now, userID); err != nil {
			return err
		}
	}
	if fx.Erase != nil {
		return s.eraseIdentity(ctx, tx, userID, *fx.Erase)
	}
	return nil
}

// identityLock is the advisory lock key of multi-row identity changes.
const identityLock int64 = 0x7468_7265_6164_0001

// forNoKeyUpdate is the row-lock suffix of UpdateUser's reads.
func (s *Store) forNoKeyUpdate() string {
	if s.db.Dialect == sqldb.Postgres {
		return " FOR NO KEY UPDATE"
	}
	return ""
}

func roundPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := sqldb.Time(*t)
	return &u
}

const serviceAccountColumns = `id, name, role, scope, active, created_by, created_at`

type serviceAccountRow struct {
	ID        string    `db:"id"`
	Name      string    `db:"name"`
	Role      string    `db:"role"`
	Scope     string    `db:"scope"`
	Active    bool      `db:"active"`
	CreatedBy string    `db:"created_by"`
	CreatedAt time.Time `db:"created_at"`
}

func (r serviceAccountRow) serviceAccount() domain.ServiceAccount {
	return domain.ServiceAccount{ID: r.ID, Name: r.Name, Role: domain.Role(r.Role), Scope: domain.ReadScope(r.Scope),
		Active: r.Active, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC()}
}

func (s *Store) CreateServiceAccount(ctx context.Context, sa domain.ServiceAccount) error {
	scope := sa.Scope
	if scope == "" {
		scope = domain.ScopeCompany
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO service_accounts (`+serviceAccountColumns+`) VALUES (?,?,?,?,?,?,?)`),
		sa.ID, sa.Name, string(sa.Role), string(scope), sa.Active, sa.CreatedBy, sqldb.Time(sa.CreatedAt))
	return sqldb.TranslateError(err)
}

func (s *Store) GetServiceAccount(ctx context.Context, id string) (domain.ServiceAccount, error) {
	var r serviceAccountRow
	err := s.db.GetContext(ctx, &r, s.q(`SELECT `+serviceAccountColumns+` FROM service_accounts WHERE id = ?`), id)
	if err != nil {
		return domain.ServiceAccount{}, sqldb.NotFoundAs(err, "service account")
	}
	return r.serviceAccount(), nil
}

// ListServiceAccounts returns every service account sorted by name.
func (s *Store) ListServiceAccounts(ctx context.Context) ([]domain.ServiceAccount, error) {
	var rows []serviceAccountRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+serviceAccountColumns+` FROM service_accounts ORDER BY name, id`); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make([]domain.ServiceAccount, len(rows))
	for i, r := range rows {
		out[i] = r.serviceAccount()
	}
	return out, nil
}
