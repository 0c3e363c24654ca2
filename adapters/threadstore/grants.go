package threadstore

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

type grantRow struct {
	InvocationID string    `db:"invocation_id"`
	StepName     string    `db:"step_name"`
	PrincipalID  string    `db:"principal_id"`
	Status       string    `db:"status"`
	Consumed     string    `db:"consumed_step_id"`
	GrantedAt    time.Time `db:"granted_at"`
	Answer       string    `db:"answer_id"`
	Fresh        string    `db:"fresh_consumed"`
}

// freshText and freshList store StepGrant.FreshConsumed (step ids, which
// hold no comma).
func freshText(ids []string) string { return strings.Join(ids, ",") }

func freshList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// UpdateGrants: see ports.ThreadStore. The thread row lock orders it with
// every append and every other grant of the thread, on any replica.
func (s *Store) UpdateGrants(ctx context.Context, threadID string, fn func(ports.GrantTx) (*domain.StepGrant, error)) error {
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		th, err := s.lockThread(ctx, tx, threadID)
		if err != nil {
			return err
		}
		states, err := s.states(ctx, tx, threadID, "", "")
		if err != nil {
			return err
		}
		grants, err := s.grants(ctx, tx, threadID)
		if err != nil {
			return err
		}
		g, err := fn(ports.GrantTx{Thread: th, States: states, Grants: grants})
		if err != nil {
			return sqldb.CallerError(err)
		}
		if g == nil {
			return nil
		}
		return s.exec(ctx, tx, `INSERT INTO step_grants (thread_id, invocation_id, step_name, principal_id, status, consumed_step_id, granted_at, answer_id, fresh_consumed)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT (thread_id, invocation_id) DO UPDATE SET status = excluded.status, answer_id = excluded.answer_id`,
			threadID, g.InvocationID, g.StepName, g.PrincipalID, string(g.Status), g.Consumed, g.GrantedAt.UTC(), g.Answer, freshText(g.FreshConsumed))
	})
	return sqldb.TranslateError(err)
}

// ReadGrants: see ports.ThreadStore. Plain reads: no row lock, and on
// SQLite no write transaction competing with ingestion.
func (s *Store) ReadGrants(ctx context.Context, threadID string) (ports.GrantTx, error) {
	th, err := s.GetThread(ctx, threadID)
	if err != nil {
		return ports.GrantTx{}, err
	}
	states, err := s.states(ctx, s.db, threadID, "", "")
	if err != nil {
		return ports.GrantTx{}, sqldb.TranslateError(err)
	}
	grants, err := s.grants(ctx, s.db, threadID)
	if err != nil {
		return ports.GrantTx{}, sqldb.TranslateError(err)
	}
	return ports.GrantTx{Thread: th, States: states, Grants: grants}, nil
}

func (s *Store) grants(ctx context.Context, q sqlx.QueryerContext, threadID string) ([]domain.StepGrant, error) {
	var rows []grantRow
	if err := sqlx.SelectContext(ctx, q, &rows, s.q(`SELECT invocation_id, step_name, principal_id, status, consumed_step_id, granted_at, answer_id, fresh_consumed
 FROM step_grants WHERE thread_id = ? ORDER BY granted_at, invocation_id`), threadID); err != nil {
		return nil, err
	}
	grants := make([]domain.StepGrant, len(rows))
	for i, r := range rows {
		grants[i] = domain.StepGrant{InvocationID: r.InvocationID, StepName: r.StepName, PrincipalID: r.PrincipalID,
			Status: domain.GrantStatus(r.Status), Consumed: r.Consumed, GrantedAt: r.GrantedAt.UTC(), Answer: r.Answer,
			FreshConsumed: freshList(r.Fresh)}
	}
	return grants, nil
}

// ReleaseGrant: see ports.ThreadStore.
func (s *Store) ReleaseGrant(ctx context.Context, threadID, invocationID, answer string) error {
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.lockThread(ctx, tx, threadID); err != nil {
			return err
		}
		return s.exec(ctx, tx, `DELETE FROM step_grants WHERE thread_id = ? AND invocation_id = ? AND status = ? AND answer_id = ?`,
			threadID, invocationID, string(domain.GrantAllowed), answer)
	})
	return sqldb.TranslateError(err)
}
