// Package ops holds the operators' use cases: alert webhooks and their
// delivery, the overdue/silent alert sweep, retention, thread erasure, the
// audit log and the engine URL setting.
package ops
