package readmodel

import (
	"context"
	"encoding/json"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// IntegrityReads verify hash chains from the stored attempts.
type IntegrityReads struct {
	scope
	threads *ThreadReads
	secrets map[string][]byte // the chain keys by version
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
	if reason := domain.VerifyLink(q.secrets, linkOf(a)); reason != "" {
		out.Error = reason
		return out, nil
	}
	out.Verified = true
	return out, nil
}

// linkOf rebuilds a chain link from a stored activity, recomputing the
// content hash (never trusting the stored column).
func linkOf(a ports.ActivityView) domain.ChainLink {
	var c map[string]string
	var m map[string]any
	cerr := json.Unmarshal([]byte(a.Context), &c)
	merr := json.Unmarshal([]byte(a.Metadata), &m)
	content := domain.ContentHash(c, m)
	if cerr != nil || merr != nil {
		content = "unreadable"
	}
	return domain.ChainLink{ThreadID: a.ThreadID, StepID: a.ID, StepName: a.StepName,
		ContentHash: content, PrevHash: a.PrevHash, Hash: a.Hash, RecordedAt: a.RecordedAt}
}

// VerifyThreads recomputes the hash chain of each thread from its stored
// activities (content hashes recomputed from context and metadata, never
// copied from the stored column).
func (q *IntegrityReads) VerifyThreads(ctx context.Context, threadIDs []string) (map[string]domain.ChainStatus, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]domain.ChainStatus, len(threadIDs))
	acts, err := st.Activities(ctx, domain.ValidIDs(threadIDs))
	if err != nil {
		return nil, err
	}
	for _, id := range threadIDs {
		list := acts[id]
		links := make([]domain.ChainLink, len(list))
		for i, a := range list {
			links[i] = linkOf(a)
		}
		st := domain.VerifyChain(q.secrets, links)
		for _, a := range list {
			if st.BrokenStepID != "" && a.ID == st.BrokenStepID {
				st.BrokenStepName, st.BrokenIdempotencyKey = a.StepName, a.IdempotencyKey
			}
		}
		out[id] = st
	}
	return out, nil
}

// VerifyThread verifies one thread's chain; an unknown thread is not found.
func (q *IntegrityReads) VerifyThread(ctx context.Context, threadID string) (domain.ChainStatus, error) {
	t, err := q.threads.Thread(ctx, threadID)
	if err != nil {
		return domain.ChainStatus{}, err
	}
	if t == nil {
		return domain.ChainStatus{}, domain.NotFound("thread " + threadID)
	}
	m, err := q.VerifyThreads(ctx, []string{threadID})
	if err != nil {
		return domain.ChainStatus{}, err
	}
	return m[threadID], nil
}
