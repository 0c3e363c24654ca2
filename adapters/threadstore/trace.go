package threadstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Traced is the store with a span around each thread write (the step's
// commit, in the trace of the request that asked for it), and the span's
// traceparent stamped on the notifications the write commits: a push or a
// webhook delivery made later, on any replica, continues the step's trace
// from the notification row.
type Traced struct {
	*Store
	tracer trace.Tracer
	system attribute.KeyValue
}

// NewTraced wraps s with tp's tracer (nil: spans record nothing, and only a
// caller's trace context is stamped).
func NewTraced(s *Store, tp trace.TracerProvider) Traced {
	system := semconv.DBSystemNameSQLite
	if s.db.Dialect == sqldb.Postgres {
		system = semconv.DBSystemNamePostgreSQL
	}
	return Traced{Store: s, tracer: tracing.Tracer(tp, "threadstore"), system: system}
}

func (t Traced) start(ctx context.Context, name, threadID string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.system, tracing.AttrThreadID.String(threadID)))
}

func end(span trace.Span, err error) {
	code := ""
	if err != nil {
		code = string(domain.Public(err).Code)
	}
	tracing.End(span, code, err)
}

// stamp gives ns the traceparent tp (when they have none).
func stamp(ns []ports.NotificationRecord, tp string) {
	for i := range ns {
		if ns[i].TraceParent == "" {
			ns[i].TraceParent = tp
		}
	}
}

// AppendStep: see ports.StepAppender; the span covers the wait for the
// group commit and the commit.
func (t Traced) AppendStep(ctx context.Context, threadID string, writer ports.AppendWriter, stepName, key string, withStates bool,
	plan func(ports.StepTx) (ports.StepPlan, error)) (ports.StepPlan, error) {
	ctx, span := t.start(ctx, "threadstore.AppendStep", threadID)
	span.SetAttributes(tracing.AttrStepName.String(stepName))
	tp := tracing.TraceParent(ctx)
	out, err := t.Store.AppendStep(ctx, threadID, writer, stepName, key, withStates, func(tx ports.StepTx) (ports.StepPlan, error) {
		p, err := plan(tx)
		stamp(p.Notifications, tp)
		return p, err
	})
	if out.Activity.ID != "" {
		span.SetAttributes(tracing.AttrStepID.String(out.Activity.ID))
	}
	end(span, err)
	return out, err
}

// UpdateThread: see ports.ThreadUpdater.
func (t Traced) UpdateThread(ctx context.Context, threadID string, fn ports.ThreadUpdate) (domain.Thread, error) {
	ctx, span := t.start(ctx, "threadstore.UpdateThread", threadID)
	tp := tracing.TraceParent(ctx)
	out, err := t.Store.UpdateThread(ctx, threadID, func(th *domain.Thread) (ports.ThreadEffects, error) {
		eff, err := fn(th)
		stamp(eff.Notifications, tp)
		return eff, err
	})
	end(span, err)
	return out, err
}

// CreateThread: see ports.ThreadCreator.
func (t Traced) CreateThread(ctx context.Context, th domain.Thread, refs map[string]string) error {
	ctx, span := t.start(ctx, "threadstore.CreateThread", th.ID)
	err := t.Store.CreateThread(ctx, th, refs)
	end(span, err)
	return err
}
