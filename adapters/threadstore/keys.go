package threadstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// errKeyTaken rolls back a keyed create whose key another writer holds.
var errKeyTaken = errors.New("thread key taken")

// CreateThreadWithKey: see ports.ThreadStore. The thread is inserted first
// and its keys last (ON CONFLICT DO NOTHING): a concurrent creator of the
// same key, on any replica, waits on the primary key until the first commits
// and then inserts nothing, so its whole transaction is rolled back.
func (s *Store) CreateThreadWithKey(ctx context.Context, namespace, key string, t domain.Thread,
	refs map[string]string, also ...ports.KeyName) (domain.Thread, bool, error) {
	names := append([]ports.KeyName{{Namespace: namespace, Key: key}}, also...)
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := s.insertThread(ctx, tx, t, refs); err != nil {
			return err
		}
		for _, k := range names {
			bound, err := s.insertThreadKey(ctx, tx, k.Namespace, k.Key, t.ID)
			if err != nil {
				return err
			}
			if !bound {
				return sqldb.CallerError(errKeyTaken)
			}
		}
		return nil
	})
	if errors.Is(err, errKeyTaken) {
		for _, k := range names {
			th, err := s.FindThreadByKey(ctx, k.Namespace, k.Key)
			if err != nil && domain.KindOf(err) == domain.KindNotFound {
				continue
			}
			return th, false, err
		}
		// The taken key's thread was deleted meanwhile (retention, erase).
		return domain.Thread{}, false, domain.E(domain.KindUnavailable, domain.CodeUnavailable, "the thread key changed meanwhile; try again")
	}
	if err != nil {
		return domain.Thread{}, false, err
	}
	return t, true, nil
}

// FindThreadByKey: see ports.ThreadStore.
func (s *Store) FindThreadByKey(ctx context.Context, namespace, key string) (domain.Thread, error) {
	id, err := s.threadIDByKey(ctx, namespace, key)
	if err != nil {
		return domain.Thread{}, err
	}
	return s.GetThread(ctx, id)
}

// threadIDByKey is the thread (namespace, key) names; not found if none.
func (s *Store) threadIDByKey(ctx context.Context, namespace, key string) (string, error) {
	var id string
	err := s.db.GetContext(ctx, &id, s.q(`SELECT thread_id FROM thread_keys WHERE namespace = ? AND key = ?`), namespace, key)
	return id, sqldb.NotFoundAs(err, "thread")
}

// BindThreadKey: see ports.ThreadStore (the thread_keys primary key decides
// between concurrent binders).
func (s *Store) BindThreadKey(ctx context.Context, namespace, key, threadID string) (string, error) {
	if _, err := s.insertThreadKey(ctx, s.db, namespace, key, threadID); err != nil {
		return "", sqldb.TranslateError(err)
	}
	return s.threadIDByKey(ctx, namespace, key)
}

// insertThreadKey makes (namespace, key) name threadID unless it names a
// thread already; bound reports whether this call made it so.
func (s *Store) insertThreadKey(ctx context.Context, ex sqlx.ExecerContext, namespace, key, threadID string) (bool, error) {
	res, err := ex.ExecContext(ctx, s.q(`INSERT INTO thread_keys (namespace, key, thread_id) VALUES (?,?,?)
 ON CONFLICT (namespace, key) DO NOTHING`), namespace, key, threadID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return err == nil && n > 0, nil
}

// ThreadKey: see ports.ThreadStore.
func (s *Store) ThreadKey(ctx context.Context, threadID string) (string, error) {
	var key string
	err := s.db.GetContext(ctx, &key, s.q(`SELECT key FROM thread_keys WHERE thread_id = ? AND namespace = 'key'`), threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return key, sqldb.TranslateError(err)
}

// ListRefs: see ports.ThreadStore.
func (s *Store) ListRefs(ctx context.Context, threadID string) (map[string]string, error) {
	var rows []struct {
		K string `db:"ref_key"`
		V string `db:"ref_value"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.q(`SELECT ref_key, ref_value FROM thread_refs WHERE thread_id = ?`), threadID); err != nil {
		return nil, sqldb.TranslateError(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.K] = r.V
	}
	return out, nil
}

// StepValidation: see ports.ThreadStore.
func (s *Store) StepValidation(ctx context.Context, threadID, stepID string) (*ports.ValidationRecord, bool, error) {
	var r struct {
		Status sql.NullString `db:"overall_status"`
		Issues sql.NullString `db:"issues"`
	}
	// The attempt's row, else its compact result (migration 00101: passed,
	// no issues, no row).
	err := s.db.GetContext(ctx, &r, s.q(`SELECT COALESCE(v.overall_status, a.validation_status) AS overall_status, CAST(v.issues AS TEXT) AS issues
 FROM thread_activities a LEFT JOIN thread_validations v ON v.thread_id = a.thread_id AND v.step_id = a.id
 WHERE a.id = ? AND a.thread_id = ?`), stepID, threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, sqldb.TranslateError(err)
	}
	if !r.Status.Valid {
		return nil, true, nil
	}
	v := &ports.ValidationRecord{StepID: stepID, OverallStatus: r.Status.String}
	var issues []domain.ValidationIssue
	_ = json.Unmarshal([]byte(r.Issues.String), &issues)
	v.Issues = issues
	return v, true, nil
}
