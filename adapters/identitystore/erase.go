package identitystore

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/domain"
)

// eraseIdentity removes, in the erasure's transaction, the personal data
// of user userID kept outside the users row: its sessions (their sign-in
// identity and id-token hint), its sign-in binding (the registry subject
// and email) and, in the audit log, every occurrence of its email and, in
// the entries about it or by it, its name. Audit entries stay, naming the
// user by id: the log still says who did what, pseudonymously.
func (s *Store) eraseIdentity(ctx context.Context, tx *sqlx.Tx, userID string, gone domain.ErasedIdentity) error {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE principal_kind = 'user' AND principal_id = ?`), userID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM identity_bindings WHERE user_id = ?`), userID); err != nil {
		return err
	}
	return s.scrubAudit(ctx, tx, userID, gone)
}

// scrubAudit rewrites the details of the audit entries that hold the
// erased email (anywhere in them) or that are about or by the user: every
// string holding the email has it replaced by the placeholder address, and
// in entries about or by the user the email and full_name fields are
// replaced too. The entries' id, time, actor, action and target are kept.
func (s *Store) scrubAudit(ctx context.Context, tx *sqlx.Tx, userID string, gone domain.ErasedIdentity) error {
	email := strings.ToLower(gone.Email)
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(email)
	var rows []auditRow
	if err := tx.SelectContext(ctx, &rows, s.q(`SELECT id, at, actor_kind, actor_id, action, target, CAST(details AS TEXT) AS details
 FROM audit_log WHERE target = ? OR actor_id = ? OR LOWER(CAST(details AS TEXT)) LIKE ? ESCAPE '\'`),
		userID, userID, "%"+esc+"%"); err != nil {
		return err
	}
	placeholder := domain.ErasedEmail(userID)
	for _, r := range rows {
		var details map[string]any
		if err := json.Unmarshal([]byte(r.Details), &details); err != nil || details == nil {
			continue
		}
		about := r.Target == userID || r.ActorID == userID
		scrubbed, changed := scrubValue(details, email, placeholder, gone.FullName, about)
		if !changed {
			continue
		}
		b, err := json.Marshal(scrubbed)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE audit_log SET details = ? WHERE id = ?`), string(b), r.ID); err != nil {
			return err
		}
	}
	return nil
}

// scrubValue replaces the erased email in every string of v (any case) by
// placeholder and, when about is set, the values of the email and
// full_name fields and any string that is exactly the erased name; it
// reports whether anything changed.
func scrubValue(v any, email, placeholder, fullName string, about bool) (any, bool) {
	switch x := v.(type) {
	case string:
		if about && fullName != "" && x == fullName {
			return "", true
		}
		if email != "" && strings.Contains(strings.ToLower(x), email) {
			return replaceFold(x, email, placeholder), true
		}
		return x, false
	case []any:
		changed := false
		for i := range x {
			var c bool
			if x[i], c = scrubValue(x[i], email, placeholder, fullName, about); c {
				changed = true
			}
		}
		return x, changed
	case map[string]any:
		changed := false
		for k, e := range x {
			switch {
			case about && k == "email":
				if e != placeholder {
					x[k], changed = placeholder, true
				}
			case about && k == "full_name":
				if e != "" {
					x[k], changed = "", true
				}
			default:
				var c bool
				if x[k], c = scrubValue(e, email, placeholder, fullName, about); c {
					changed = true
				}
			}
		}
		return x, changed
	}
	return v, false
}

// replaceFold replaces every occurrence of lower (lower-case) in s, in any
// case, by with.
func replaceFold(s, lower, with string) string {
	var b strings.Builder
	ls := strings.ToLower(s)
	for {
		i := strings.Index(ls, lower)
		if i < 0 || len(ls) != len(s) {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(with)
		s, ls = s[i+len(lower):], ls[i+len(lower):]
	}
	if strings.Contains(strings.ToLower(s), lower) { // case mapping changed lengths: replace the lower-cased text
		return strings.ReplaceAll(strings.ToLower(s), lower, with)
	}
	b.WriteString(s)
	return b.String()
}
