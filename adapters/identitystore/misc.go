package identitystore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

type bindingRow struct {
	Issuer    string    `db:"issuer"`
	Subject   string    `db:"subject"`
	UserID    string    `db:"user_id"`
	Email     string    `db:"email"`
	Active    bool      `db:"active"`
	CreatedAt time.Time `db:"created_at"`
}

const bindingColumns = `issuer, subject, user_id, email, active, created_at`

func (s *Store) GetBinding(ctx context.Context, issuer, subject string) (ports.IdentityBinding, error) {
	return s.getBinding(ctx, `SELECT `+bindingColumns+` FROM identity_bindings WHERE issuer = ? AND subject = ?`, issuer, subject)
}

func (s *Store) GetBindingByUser(ctx context.Context, userID string) (ports.IdentityBinding, error) {
	return s.getBinding(ctx, `SELECT `+bindingColumns+` FROM identity_bindings WHERE user_id = ?`, userID)
}

func (s *Store) getBinding(ctx context.Context, query string, args ...any) (ports.IdentityBinding, error) {
	var r bindingRow
	err := s.db.GetContext(ctx, &r, s.q(query), args...)
	if err != nil {
		return ports.IdentityBinding{}, sqldb.NotFoundAs(err, "identity binding")
	}
	return ports.IdentityBinding{Issuer: r.Issuer, Subject: r.Subject, UserID: r.UserID, Email: r.Email, Active: r.Active, CreatedAt: r.CreatedAt.UTC()}, nil
}

// CreateBinding inserts b. A registry identity binds to one user and a user to
// one identity; either clash is a conflict naming which side is taken.
func (s *Store) CreateBinding(ctx context.Context, b ports.IdentityBinding) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO identity_bindings (`+bindingColumns+`) VALUES (?,?,?,?,?,?)`),
		b.Issuer, b.Subject, b.UserID, b.Email, b.Active, sqldb.Time(b.CreatedAt))
	switch {
	case sqldb.IsUniqueViolation(err):
		if _, gerr := s.GetBinding(ctx, b.Issuer, b.Subject); gerr == nil {
			return domain.E(domain.KindConflict, domain.CodeIdentityAlreadyBound, "this sign-in identity is already bound to a user")
		}
		return domain.E(domain.KindConflict, domain.CodeUserAlreadyBound, "this user is already bound to another sign-in identity")
	case isForeignKeyViolation(err):
		return domain.NotFound("user")
	}
	return sqldb.TranslateError(err)
}

// RecordAudit appends e to the audit log; an empty id gets a fresh one.
func (s *Store) RecordAudit(ctx context.Context, e ports.AuditEntry) error {
	return s.RecordAudits(ctx, []ports.AuditEntry{e})
}

// auditRowsPerStatement bounds one RecordAudits statement (7 parameters a
// row, far below either dialect's limit).
const auditRowsPerStatement = 1000

// RecordAudits writes the entries with one statement per
// auditRowsPerStatement of them, not one commit each: the retention sweep
// audits every thread of a batch (app/ops).
func (s *Store) RecordAudits(ctx context.Context, es []ports.AuditEntry) error {
	for len(es) > 0 {
		chunk := es[:min(len(es), auditRowsPerStatement)]
		es = es[len(chunk):]
		args := make([]any, 0, 7*len(chunk))
		for _, e := range chunk {
			if e.ID == "" {
				e.ID = uuid.NewString()
			}
			details := []byte("{}")
			if len(e.Details) > 0 {
				var err error
				if details, err = json.Marshal(e.Details); err != nil {
					// The line is kept (who, what, which target) rather than
					// the whole batch lost for one entry's details.
					details = []byte(`{"details_error":"not serialisable"}`)
				}
			}
			args = append(args, e.ID, sqldb.Time(e.At), string(e.ActorKind), e.ActorID, e.Action, e.Target, string(details))
		}
		rows := strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?),", len(chunk)), ",")
		if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO audit_log (id, at, actor_kind, actor_id, action, target, details) VALUES `+rows), args...); err != nil {
			return sqldb.TranslateError(err)
		}
	}
	return nil
}

func (s *Store) GetSetting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.db.GetContext(ctx, &v, s.q(`SELECT value FROM settings WHERE key = ?`), key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, sqldb.TranslateError(err)
	}
	return v, true, nil
}

func (s *Store) PutSetting(ctx context.Context, key, value, updatedBy string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO settings (key, value, updated_at, updated_by) VALUES (?,?,?,?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`),
		key, value, sqldb.Time(now), updatedBy)
	return sqldb.TranslateError(err)
}

// DeleteSetting removes key; deleting an unset key is a no-op.
func (s *Store) DeleteSetting(ctx context.Context, key string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM settings WHERE key = ?`), key)
	return sqldb.TranslateError(err)
}

// InstallationID stores newID on first call; the singleton constraint makes
// concurrent first starts agree on one id.
func (s *Store) InstallationID(ctx context.Context, newID string, now time.Time) (string, error) {
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO installation (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`), newID, sqldb.Time(now)); err != nil {
		return "", sqldb.TranslateError(err)
	}
	var id string
	if err := s.db.GetContext(ctx, &id, `SELECT id FROM installation`); err != nil {
		return "", sqldb.TranslateError(err)
	}
	return id, nil
}
