package server

import (
	"context"
	"github.com/threadengine/engine/ports"
	"time"

	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/adapters/webhooksender"
	"github.com/threadengine/engine/adapters/webhookstore"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/domain"
)

// startAlerts builds the webhook use cases and runs their deliverer and the
// alert sweep until Close. Every replica runs both: leases and the
// thread_alerts key keep them from doing the same work twice.
func (s *Server) startAlerts(threadStore *threadstore.Store) {
	a := s.Config.Alerts
	sender := webhooksender.New(a.Timeout, a.BlockPrivateAddresses)
	sender.SetTracer(s.Tracing.TracerProvider())
	s.Webhooks = ops.NewWebhooks(ops.WebhooksDeps{Store: webhookstore.New(s.DB),
		Sender: sender, Audit: s.Store, Clock: s.Clock,
		Metrics: s.EngineMetrics, Log: s.Log, AllowedHosts: a.AllowedHosts,
		PrivateAnswerDetails: a.PrivateAnswerDetails,
		Retry:                domain.WebhookRetry{Base: a.RetryBase, Max: a.RetryMax, MaxAttempts: a.MaxAttempts},
		// Batch = Workers: every claimed delivery is sent at once, so
		// its attempt ends (timeout) well within its lease.
		Lease: a.Timeout + 30*time.Second, Batch: a.Concurrency, Workers: a.Concurrency,
		LogRetention: a.DeliveryLogRetention,
		EngineURL: func(ctx context.Context) (string, error) {
			if s.EngineSettings == nil {
				return s.Config.Server.PublicURL, nil
			}
			u, _, err := s.EngineSettings.Effective(ctx)
			return u, err
		}})
	hub := s.Threads.Hub()
	s.Alerts = ops.NewAlertSweep(ops.AlertSweepDeps{Store: threadStore, Contracts: s.threadContracts(), Clock: s.Clock,
		Metrics: s.EngineMetrics, Log: s.Log, SilentAfter: a.SilentAfter,
		Recorded: func(ns []ports.NotificationRecord) { hub.Published(context.Background(), ns) }, Nudge: s.Webhooks.Deliverer.Nudge})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { defer func() { done <- struct{}{} }(); s.Webhooks.Deliverer.Run(ctx, a.PollInterval) }()
	go func() { defer func() { done <- struct{}{} }(); s.Alerts.Run(ctx, a.SweepInterval) }()
	s.OnClose(func() error { stop(); <-done; <-done; return nil })
}
