package readmodel

import (
	"context"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/integrity"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// IntegrityReads verify threads through the caller's scope; the
// verification itself is app/integrity's.
type IntegrityReads struct {
	scope
	integrity integrity.Checker
}

// StepIntegrity is the verification of one step identity's latest attempt.
type StepIntegrity struct {
	Verified       bool
	Hash, PrevHash string
	Error          string
}

// VerifyStep recomputes the hash of the newest attempt of (thread, step,
// key) from its stored content, as the reference's verifyStepIntegrity does.
func (q *IntegrityReads) VerifyStep(ctx context.Context, threadID, stepName, key string) (StepIntegrity, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return StepIntegrity{}, err
	}
	for f, v := range map[string]string{"threadId": threadID, "stepName": stepName, "idempotencyKey": key} {
		if v == "" {
			return StepIntegrity{}, domain.Invalid(f, "%s is required", f)
		}
	}
	acts, err := st.History(ctx, ports.StepKey{ThreadID: threadID, StepName: stepName, IdempotencyKey: key},
		ports.HistoryFilter{Limit: 1})
	if err != nil {
		return StepIntegrity{}, err
	}
	if len(acts) == 0 {
		return StepIntegrity{Error: "Step not found in activity log"}, nil
	}
	a := acts[0]
	out := StepIntegrity{Hash: a.Hash, PrevHash: a.PrevHash}
	reason, err := q.integrity.Step(ctx, st, a)
	if err != nil {
		return StepIntegrity{}, err
	}
	if reason != "" {
		out.Error = reason
		return out, nil
	}
	out.Verified = true
	return out, nil
}

// VerifyThreads verifies each thread (app/integrity): its hash chain
// (content recomputed from the stored rows, never copied from a stored
// hash column), its head against its thread row, and its steps against the
// transparency log.
func (q *IntegrityReads) VerifyThreads(ctx context.Context, threadIDs []string) (map[string]domain.ChainStatus, error) {
	p, err := authz.Require(ctx, domain.PermThreadsRead)
	if err != nil {
		return nil, err
	}
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return q.integrity.Threads(ctx, st, threadIDs, !p.PartyScoped())
}

// VerifyThread verifies one thread; an unknown thread is not found, unless
// the transparency log shows it was deleted outside the documented paths.
func (q *IntegrityReads) VerifyThread(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	m, err := q.VerifyThreads(ctx, []string{threadID})
	if err != nil {
		return domain.ChainStatus{}, err
	}
	st, ok := m[threadID]
	if !ok {
		return domain.ChainStatus{}, domain.NotFound("thread " + threadID)
	}
	return st, nil
}
