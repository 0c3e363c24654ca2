package readmodel

// The validation and notification reads.

import (
	"context"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// LatestValidationReader reads the newest validation of steps.
type LatestValidationReader interface {
	// LatestValidations returns the newest validation result of each step.
	LatestValidations(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error)
}

// LatestValidationsHandler returns the newest validation result of each step.
type LatestValidationsHandler struct {
	store LatestValidationReader
	scope Scope
}

// NewLatestValidationsHandler builds the LatestValidations loader.
func NewLatestValidationsHandler(store LatestValidationReader, scope Scope) LatestValidationsHandler {
	return LatestValidationsHandler{store: store, scope: scope}
}

// Handle returns the newest validation of each step of a visible thread.
func (h LatestValidationsHandler) Handle(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perStep(ctx, v, steps, func(keys []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
		return h.store.LatestValidations(ctx, keys)
	})
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

// ValidationReader reads validation results.
type ValidationReader interface {
	// Validations returns each thread's validation results, paged per thread.
	Validations(ctx context.Context, threadIDs []string, f ports.ValidationFilter) (map[string][]ports.ValidationView, error)
}

// ValidationsHandler returns each thread's validation results, newest first.
type ValidationsHandler struct {
	store ValidationReader
	scope Scope
}

// NewValidationsHandler builds the Validations loader.
func NewValidationsHandler(store ValidationReader, scope Scope) ValidationsHandler {
	return ValidationsHandler{store: store, scope: scope}
}

// Handle returns the validation results a selects of each visible thread.
func (h ValidationsHandler) Handle(ctx context.Context, threadIDs []string, a ValidationArgs) (map[string][]ports.ValidationView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]ports.ValidationView, error) {
		return h.store.Validations(ctx, ids, a.filter())
	})
}

// ValidationResultsHandler returns the validation results of one thread
// (the top-level validationResults).
type ValidationResultsHandler struct{ validations ValidationsHandler }

// NewValidationResultsHandler builds the ValidationResults query.
func NewValidationResultsHandler(validations ValidationsHandler) ValidationResultsHandler {
	return ValidationResultsHandler{validations: validations}
}

// Handle returns the results a selects of thread threadID ([] when none).
func (h ValidationResultsHandler) Handle(ctx context.Context, threadID string, a ValidationArgs) ([]ports.ValidationView, error) {
	m, err := h.validations.Handle(ctx, []string{threadID}, a)
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

// NotificationReader reads thread notifications.
type NotificationReader interface {
	// Notifications returns each thread's notifications, paged per thread.
	Notifications(ctx context.Context, threadIDs []string, f ports.NotificationFilter) (map[string][]ports.NotificationView, error)
}

// NotificationsHandler returns each thread's notifications, newest first.
type NotificationsHandler struct {
	store NotificationReader
	scope Scope
}

// NewNotificationsHandler builds the Notifications loader.
func NewNotificationsHandler(store NotificationReader, scope Scope) NotificationsHandler {
	return NotificationsHandler{store: store, scope: scope}
}

// Handle returns the notifications a selects of each visible thread.
func (h NotificationsHandler) Handle(ctx context.Context, threadIDs []string, a NotificationArgs) (map[string][]ports.NotificationView, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	f := ports.NotificationFilter{StepID: a.StepID, StepName: a.StepName, Source: a.Source,
		NotificationType: a.NotificationType, Severities: a.Severities, Limit: domain.NotificationsPage.Effective(a.Limit)}
	if a.Offset != nil && *a.Offset > 0 {
		f.Offset = *a.Offset
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string][]ports.NotificationView, error) {
		return h.store.Notifications(ctx, ids, f)
	})
}

// NotificationCountReader aggregates notifications.
type NotificationCountReader interface {
	// NotificationCounts aggregates each thread's notifications.
	NotificationCounts(ctx context.Context, threadIDs []string) (map[string]ports.NotificationCounts, error)
}

// NotificationCountsHandler aggregates each thread's notifications.
type NotificationCountsHandler struct {
	store NotificationCountReader
	scope Scope
}

// NewNotificationCountsHandler builds the NotificationCounts loader.
func NewNotificationCountsHandler(store NotificationCountReader, scope Scope) NotificationCountsHandler {
	return NotificationCountsHandler{store: store, scope: scope}
}

// Handle aggregates the notifications of each visible thread.
func (h NotificationCountsHandler) Handle(ctx context.Context, threadIDs []string) (map[string]ports.NotificationCounts, error) {
	v, err := h.scope.open(ctx)
	if err != nil {
		return nil, err
	}
	return perThread(ctx, v, domain.ValidIDs(threadIDs), func(ids []string) (map[string]ports.NotificationCounts, error) {
		return h.store.NotificationCounts(ctx, ids)
	})
}
