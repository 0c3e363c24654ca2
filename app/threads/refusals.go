package threads

// The refusal log: a step submission its contract refused (a content rule
// broken) is recorded nowhere on its thread, so the refusal is counted
// (threadengine_step_refusals_total) and kept for operators (who tried
// what, when) for a bounded time.

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// DefaultRefusalRetention is how long refusals are kept when the
// configuration says nothing (contracts.refusal_retention).
const DefaultRefusalRetention = 30 * 24 * time.Hour

// Bounds of the submitted context kept with a refusal: enough to see what
// was tried, never the whole payload again.
const (
	maxRefusalFields     = 64
	maxRefusalValueBytes = 256
)

// MaxStepRefusals bounds the refusal log whatever the retention: past it
// the oldest entries are deleted (a writer refused in a loop cannot grow
// the table without bound).
const MaxStepRefusals = 1_000_000

// refusalPruneEvery spaces the deletions of expired refusals: one per
// minute at most, done by the refusal that finds the last one older.
const refusalPruneEvery = time.Minute

// refusals records refused submissions. A nil log only counts them.
type refusals struct {
	log       ports.RefusalLog
	clock     ports.Clock
	metrics   ports.ThreadMetrics
	logger    *slog.Logger
	retention time.Duration
	lastPrune *atomic.Int64 // unix nanoseconds of the last pruning
}

// refused reports whether err is a refusal to log.
func refused(err error) bool {
	code := domain.CodeOf(err)
	return code == domain.CodeContentRuleFailed || code == domain.CodeClassifierUnavailable
}

// record counts and logs one refusal. A failure to log is reported to the
// engine's log; the caller still gets its refusal.
func (r refusals) record(ctx context.Context, c *domain.Contract, in RecordStepInput, principalID string, err error) {
	contract, version := "", 0
	if c != nil {
		contract, version = c.Name, c.Version
	}
	code := domain.CodeOf(err)
	r.metrics.StepRefused(string(code), contract)
	if r.log == nil {
		return
	}
	now := now(r.clock)
	field, rule, msg := "", "", err.Error()
	e := domain.AsError(err)
	if e != nil {
		msg = e.Message
		if vs, ok := e.Details["violations"].([]domain.ContentViolation); ok && len(vs) > 0 {
			field, rule = vs[0].Field, vs[0].Rule
		}
	}
	// Time-ordered ids keep refusals of one instant in the order they came.
	rec := ports.StepRefusal{ID: timeOrderedID(), ThreadID: in.ThreadID, ContractName: contract, ContractVersion: version,
		StepName: in.StepName, IdempotencyKey: in.IdempotencyKey, PrincipalID: principalID, Role: in.Role, Code: string(code),
		Field: field, Rule: rule, Message: msg, Context: boundedContext(in.Context), CreatedAt: now}
	// The caller's context may end with its connection: the log outlives it.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if lerr := r.log.LogRefusal(lctx, rec); lerr != nil {
		r.logger.Warn("refusal not logged", "thread", in.ThreadID, "step", in.StepName, "err", lerr)
	}
	r.prune(lctx, now)
}

// prune deletes the refusals past retention, at most once a minute.
func (r refusals) prune(ctx context.Context, now time.Time) {
	last := r.lastPrune.Load()
	if now.UnixNano()-last < int64(refusalPruneEvery) || !r.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if _, err := r.log.PruneRefusals(ctx, now.Add(-r.retention), MaxStepRefusals); err != nil {
		r.logger.Warn("expired refusals not deleted", "err", err)
	}
}

// boundedContext keeps at most maxRefusalFields fields of ctx (the
// smallest keys), each value cut to maxRefusalValueBytes.
func boundedContext(ctx map[string]string) map[string]string {
	out := make(map[string]string, min(len(ctx), maxRefusalFields))
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(out) == maxRefusalFields {
			break
		}
		v := ctx[k]
		if len(v) > maxRefusalValueBytes {
			v = strings.ToValidUTF8(v[:maxRefusalValueBytes], "") + "…"
		}
		out[k] = v
	}
	return out
}
