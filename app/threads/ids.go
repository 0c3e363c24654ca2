package threads

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// validIDStore is the thread store as every thread use case sees it: an
// id that cannot exist (domain.ValidID: NUL, invalid UTF-8, control
// characters) is not found before any store is asked, so SQLite and
// PostgreSQL (which refuses such text) answer alike.
type validIDStore struct{ ports.ThreadStore }

func errNoThread() error { return domain.NotFound("thread") }

func (s validIDStore) GetThread(ctx context.Context, id string) (domain.Thread, error) {
	if !domain.ValidID(id) {
		return domain.Thread{}, errNoThread()
	}
	return s.ThreadStore.GetThread(ctx, id)
}

func (s validIDStore) AppendStep(ctx context.Context, threadID string, writer ports.AppendWriter, stepName, idempotencyKey string,
	withStates bool, plan func(ports.StepTx) (ports.StepPlan, error)) (ports.StepPlan, error) {
	if !domain.ValidID(threadID) {
		return ports.StepPlan{}, errNoThread()
	}
	return s.ThreadStore.AppendStep(ctx, threadID, writer, stepName, idempotencyKey, withStates, plan)
}

func (s validIDStore) ListStepStates(ctx context.Context, threadID string) ([]ports.StepState, error) {
	if !domain.ValidID(threadID) {
		return nil, errNoThread()
	}
	return s.ThreadStore.ListStepStates(ctx, threadID)
}

func (s validIDStore) UpdateThread(ctx context.Context, threadID string, fn ports.ThreadUpdate) (domain.Thread, error) {
	if !domain.ValidID(threadID) {
		return domain.Thread{}, errNoThread()
	}
	return s.ThreadStore.UpdateThread(ctx, threadID, fn)
}

func (s validIDStore) ListActivities(ctx context.Context, threadID string) ([]ports.Activity, error) {
	if !domain.ValidID(threadID) {
		return nil, errNoThread()
	}
	return s.ThreadStore.ListActivities(ctx, threadID)
}

func (s validIDStore) HasActivity(ctx context.Context, threadID, stepName, idempotencyKey string) (bool, error) {
	if !domain.ValidID(threadID) {
		return false, nil
	}
	return s.ThreadStore.HasActivity(ctx, threadID, stepName, idempotencyKey)
}

func (s validIDStore) ThreadKey(ctx context.Context, threadID string) (string, error) {
	if !domain.ValidID(threadID) {
		return "", errNoThread()
	}
	return s.ThreadStore.ThreadKey(ctx, threadID)
}

func (s validIDStore) StepValidation(ctx context.Context, threadID, stepID string) (*ports.ValidationRecord, bool, error) {
	if !domain.ValidID(threadID) {
		return nil, false, errNoThread()
	}
	if !domain.ValidID(stepID) {
		return nil, false, nil // no such attempt, ever
	}
	return s.ThreadStore.StepValidation(ctx, threadID, stepID)
}

func (s validIDStore) ListRefs(ctx context.Context, threadID string) (map[string]string, error) {
	if !domain.ValidID(threadID) {
		return nil, errNoThread()
	}
	return s.ThreadStore.ListRefs(ctx, threadID)
}

func (s validIDStore) UpdateGrants(ctx context.Context, threadID string, fn func(ports.GrantTx) (*domain.StepGrant, error)) error {
	if !domain.ValidID(threadID) {
		return errNoThread()
	}
	return s.ThreadStore.UpdateGrants(ctx, threadID, fn)
}

func (s validIDStore) ReadGrants(ctx context.Context, threadID string) (ports.GrantTx, error) {
	if !domain.ValidID(threadID) {
		return ports.GrantTx{}, errNoThread()
	}
	return s.ThreadStore.ReadGrants(ctx, threadID)
}

func (s validIDStore) ReleaseGrant(ctx context.Context, threadID, invocationID, answer string) error {
	if !domain.ValidID(threadID) {
		return errNoThread()
	}
	return s.ThreadStore.ReleaseGrant(ctx, threadID, invocationID, answer)
}
