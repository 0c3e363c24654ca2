package readmodel

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ValidationReads read validation results and notifications.
type ValidationReads struct{ scope }

// LatestValidations returns the newest validation result of each step.
func (q *ValidationReads) LatestValidations(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.LatestValidations(ctx, steps)
}

// ValidationArgs filter and page validation results.
type ValidationArgs struct {
	StepID, StepName, IdempotencyKey, ValidationType string
	Limit, Offset                                    *int
}

func (a ValidationArgs) filter() ports.ValidationFilter {
	f := ports.ValidationFilter{StepID: a.StepID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey,
		ValidationType: a.ValidationType, Limit: domain.ValidationsPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	return f
}

// Validations returns each thread's validation results, newest first.
func (q *ValidationReads) Validations(ctx context.Context, threadIDs []string, a ValidationArgs) (map[string][]ports.ValidationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.Validations(ctx, domain.ValidIDs(threadIDs), a.filter())
}

// ValidationResults returns the validation results of one step identity.
func (q *ValidationReads) ValidationResults(ctx context.Context, threadID string, a ValidationArgs) ([]ports.ValidationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	m, err := st.Validations(ctx, domain.ValidIDs([]string{threadID}), a.filter())
	if err != nil {
		return nil, err
	}
	out := m[threadID]
	if out == nil {
		out = []ports.ValidationView{}
	}
	return out, nil
}

// NotificationArgs filter and page thread notifications.
type NotificationArgs struct {
	StepID, StepName, Source, NotificationType string
	Severities                                 []string
	Limit, Offset                              *int
}

// Notifications returns each thread's notifications, newest first.
func (q *ValidationReads) Notifications(ctx context.Context, threadIDs []string, a NotificationArgs) (map[string][]ports.NotificationView, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.NotificationFilter{StepID: a.StepID, StepName: a.StepName, Source: a.Source,
		NotificationType: a.NotificationType, Severities: a.Severities, Limit: domain.NotificationsPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	return st.Notifications(ctx, domain.ValidIDs(threadIDs), f)
}

// NotificationCounts aggregates each thread's notifications.
func (q *ValidationReads) NotificationCounts(ctx context.Context, threadIDs []string) (map[string]ports.NotificationCounts, error) {
	st, err := q.reader(ctx)
	if err != nil {
		return nil, err
	}
	return st.NotificationCounts(ctx, domain.ValidIDs(threadIDs))
}
