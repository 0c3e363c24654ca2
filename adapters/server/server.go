// Package server is the composition root: it opens the store, builds the app
// use cases and mounts every transport adapter on one echo instance, so the
// WebSocket, GraphQL, REST, OTLP and MCP endpoints share one host:port.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"crypto/rand"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/threadengine/engine/adapters/broadcast"
	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/contracthttp"
	"github.com/threadengine/engine/adapters/contractstore"
	"github.com/threadengine/engine/adapters/graphqlapi"
	"github.com/threadengine/engine/adapters/httpapi"
	"github.com/threadengine/engine/adapters/identitystore"
	"github.com/threadengine/engine/adapters/limits"
	"github.com/threadengine/engine/adapters/mcpapi"
	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/otlp"
	"github.com/threadengine/engine/adapters/prommetrics"
	"github.com/threadengine/engine/adapters/registry"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/adapters/tracing"
	"github.com/threadengine/engine/adapters/webui"
	"github.com/threadengine/engine/adapters/wsapi"
	"github.com/threadengine/engine/app/contracts"
	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/app/identity"
	"github.com/threadengine/engine/app/ingest"
	"github.com/threadengine/engine/app/ops"
	"github.com/threadengine/engine/app/readgate"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/app/signin"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/app/transparency"
	"github.com/threadengine/engine/ports"
	"github.com/threadengine/engine/schema"
)

// Options are knobs tests and commands set beyond the config file.
type Options struct {
	// Clock overrides the system clock (tests move time with it).
	Clock ports.Clock
	// Logger overrides the default slog logger.
	Logger *slog.Logger
	// Alongside opens an embedded SQLite database without taking its
	// process lock, for a one-shot command run beside the serving engine.
	Alongside bool
	// DataDir is where local state (SQLite file, generated secrets) lives;
	// default "./data".
	DataDir string
	// Version and Commit label threadengine_build_info (cmd/threadengine
	// sets them from its build information).
	Version, Commit string
	// BinarySchema overrides the schema this binary claims to the schema
	// compatibility gate (tests run this code as an older or newer release);
	// CompatCheckInterval is how often the gate is re-read besides /readyz
	// (default 10s).
	BinarySchema        int64
	CompatCheckInterval time.Duration
}

// Server is a running engine: store, use cases and HTTP routes.
type Server struct {
	Config config.Config
	DB     *sqldb.DB
	Echo   *echo.Echo
	Clock  ports.Clock
	Log    *slog.Logger

	// Identity foundation, built first in mount so every feature can use it.
	// Store implements every identity port (users, keys, sessions, bindings,
	// audit, settings, installation).
	Store    *identitystore.Store
	Identity *identity.Module
	// Auth authenticates requests: use Auth.Middleware() (required) or
	// Auth.Optional() on feature routes, or Auth.Authenticate(c) directly.
	Auth *httpapi.Auth
	// EngineSettings resolves the effective engine URL (UI override of
	// server.public_url); features advertising the address should use it.
	EngineSettings *ops.EngineSettings
	// Metrics is the Prometheus registry served at /metrics.
	Metrics *prometheus.Registry
	// Refusals counts refusals per limit (threadengine_limit_refusals_total).
	Refusals *limits.Counter
	// readGate admits reads (GraphQL, MCP): concurrency and per-principal
	// budget (config limits.graphql).
	readGate *readgate.Gate
	// EngineMetrics counts engine events (steps, threads, notifications…)
	// on Metrics; features report through this port, never Prometheus.
	EngineMetrics ports.Metrics
	// Threads records thread data (WebSocket /threads, OTLP /v1/traces)
	// through its Application()'s handlers.
	Threads *threads.Module
	// Contracts uploads and reads contract versions (/v1/contracts).
	Contracts contracts.Application
	// Erasure deletes whole threads (DELETE /v1/threads/:id); Retention
	// sweeps old ones (retention.*, /v1/engine/retention).
	Erasure   *ops.Erasure
	Retention *ops.Retention
	// AuditRetention deletes audit lines past audit.retention_days.
	AuditRetention *ops.AuditRetention
	// Webhooks manages alert webhooks and delivers their outbox; Alerts
	// is the sweep for overdue and silent threads (alerts.*).
	Webhooks *ops.Webhooks
	Alerts   *ops.AlertSweep
	// QuietTraces ends OTLP trace threads after otlp.trace_quiet_period
	// (run in the background; tests call Handle with a moved clock).
	QuietTraces ingest.EndQuietTracesHandler
	// Queries are the read use cases (GraphQL, MCP); GraphQL executes
	// operations with the cost limit (POST/GET /graphql, MCP graphql_query).
	Queries *readmodel.Queries
	GraphQL *graphqlapi.Handler
	// TLog is the transparency log's use cases: checkpoints, proofs
	// (/v1/log/*, exports).
	TLog *transparency.Application
	// Broadcast reaches every engine on the database (LISTEN/NOTIFY on
	// PostgreSQL, in-process on SQLite).
	Broadcast ports.Broadcast
	// Tracing exports the engine's own spans (telemetry.tracing; a no-op
	// provider when off).
	Tracing *tracing.Provider

	httpSrv  *http.Server
	closers  []func() error
	stopOnce sync.Once
}

// New opens the database (running migrations) and mounts all routes.
func New(ctx context.Context, cfg config.Config, opt Options) (*Server, error) {
	if opt.Clock == nil {
		opt.Clock = ports.SystemClock{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.DataDir == "" {
		opt.DataDir = "./data"
	}
	// Every record logged with a traced context carries its trace id.
	opt.Logger = slog.New(tracing.LogHandler(opt.Logger.Handler()))
	tp, err := newTracing(ctx, cfg.Telemetry.Tracing)
	if err != nil {
		return nil, err
	}
	db, err := sqldb.OpenWith(ctx, cfg.Database.URL, sqldb.OpenOptions{Alongside: opt.Alongside, BinarySchema: opt.BinarySchema, MaxConns: cfg.Database.MaxConns})
	if err != nil {
		_ = tp.Shutdown(ctx)
		return nil, err
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	metrics := httpapi.NewMetrics()
	e.HTTPErrorHandler = httpapi.ErrorHandler(opt.Logger)
	// Observe outermost, so requests that panic are still logged and counted.
	e.Use(httpapi.Trace(tp.TracerProvider()), httpapi.Observe(metrics, opt.Logger), middleware.Recover())
	s := &Server{Config: cfg, DB: db, Echo: e, Clock: opt.Clock, Log: opt.Logger, Metrics: metrics.Registry, Tracing: tp,
		Refusals: limits.NewCounter(metrics.Registry), EngineMetrics: prommetrics.New(metrics.Registry, db.DB.DB, metricLabels())}
	if e.IPExtractor, err = clientIP(cfg.Server.TrustedProxies); err != nil {
		db.Close()
		return nil, err
	}
	e.Use(httpapi.CountRefusals(s.Refusals))
	metrics.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "threadengine_db_deadlocks_total",
		Help: "Transactions that lost a PostgreSQL deadlock (each was retried)."},
		func() float64 { n, _ := db.ConcurrencyFailures(); return float64(n) }))
	s.closers = append(s.closers, db.Close, s.closeTracing)
	e.GET("/metrics", metrics.Handler(), httpapi.MetricsToken(cfg.Metrics.Token))

	s.mountReadiness(opt)

	if err := s.mount(ctx, opt); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// mount wires every feature's adapters. Each feature adds its block here,
// after the identity block, which the others depend on.
func (s *Server) mount(ctx context.Context, opt Options) error {
	tp := s.Tracing.TracerProvider
	// --- broadcast between replicas (LISTEN/NOTIFY; in-process on SQLite): s.Broadcast ---
	if err := s.openBroadcast(ctx); err != nil {
		return err
	}

	// --- identity (users, API keys, sessions): s.Store, s.Identity, s.Auth ---
	s.Store = identitystore.New(s.DB)
	s.Identity = identity.New(identity.Deps{
		Users: s.Store, ServiceAccounts: s.Store, APIKeys: s.Store, Sessions: s.Store, Audit: s.Store, Settings: s.Store,
		Clock: s.Clock, Random: rand.Reader, NewID: func() string { return uuid.NewString() },
		SessionTTL: s.Config.Auth.SessionTTL, LicenseKey: s.Config.Registry.LicenseKey, Log: s.Log,
		AuthCacheTTL: s.Config.Auth.CacheTTL, Broadcast: s.Broadcast, Metrics: s.EngineMetrics,
	})
	// Without server.public_url the engine advertises its listen address
	// (127.0.0.1:8081 by default); browsers must then use exactly that host.
	authURL := s.Config.Server.PublicURL
	if authURL == "" {
		authURL = "http://" + s.Config.Server.Listen
	}
	s.Auth = httpapi.NewAuth(s.Identity, authURL, s.Config.Registry.BrowserOrigin)
	s.Auth.SetExchangeThrottle(s.Config.Limits.SignIn.FailuresPerWindow, s.Config.Limits.SignIn.Window, s.Refusals)
	s.Auth.MountIdentity(s.Echo)
	s.startSessionJanitor()

	// --- features mount below this line (one block each) ---

	// --- contracts: /v1/contracts upload and read (s.Contracts) ---
	contractStore := contractstore.New(s.DB)
	semantic := s.newClassifier()
	s.Contracts = contracts.New(contracts.Deps{Store: contractStore, Eraser: contractStore, Threads: threadquery.New(s.DB), Clock: s.Clock, Audit: s.Store,
		Classifier: semantic != nil,
		NewID:      func() string { return uuid.NewString() }, Log: s.Log,
		Deleted: func(name string, version int) { s.Threads.ForgetContract(name, version) }})
	(&contracthttp.Handler{Contracts: s.Contracts}).Mount(s.Echo, s.Auth.Middleware())

	// --- thread ingestion: WebSocket /threads, OTLP /v1/traces (s.Threads) ---
	sec := s.Config.Security
	sealer, err := threadstore.NewSealer(sec.KeysEncryptionKey)
	if err != nil {
		return err
	}
	chainKeys, err := threadstore.LoadChainKeys(ctx, s.DB, threadstore.KeyConfig{Secret: sec.HashChainSecret,
		Version: sec.HashChainSecretVersion, Previous: sec.HashChainPreviousSecrets, Sealer: sealer}, opt.DataDir, s.Clock.Now())
	if err != nil {
		return err
	}
	logKeys, err := threadstore.LoadLogKeys(ctx, s.DB, s.Config.Transparency.Origin, sealer, s.Clock.Now())
	if err != nil {
		return err
	}
	threadStore := threadstore.New(s.DB)
	threadStore.SetMetrics(s.EngineMetrics)
	// Registered before everything that appends steps, so it runs after
	// them (closers run in reverse), and before the database closes.
	s.OnClose(threadStore.Close)
	tracedThreads := threadstore.NewTraced(threadStore, tp())
	s.Threads = threads.New(tracedThreads, s.threadContracts(), s.Clock, nil, s.Log)
	s.Threads.UseChainKeys(chainKeys)
	s.Threads.SetOptions(threads.Options{InvitationMaxTTL: s.Config.Threads.InvitationMaxTTL, Classifier: semantic})
	s.Threads.SetMetrics(s.EngineMetrics)
	s.Threads.SetRefusalRetention(s.Config.Retention.StepRefusals)
	s.backfillHealth(threadStore)
	s.startHub()
	ws := &wsapi.Handler{Threads: s.Threads, Authn: s.Auth.Authn, Log: s.Log, Limits: s.Config.Limits.WS, Refusals: s.Refusals, Metrics: s.EngineMetrics,
		Tracer: tp(), Clock: s.Clock}
	ws.Mount(s.Echo)
	s.Identity.OnCredentialsChanged(ws.RecheckPrincipal)
	// Open sockets outlive http.Server.Shutdown (they are hijacked): close
	// them with a close frame before the store closes under them.
	s.OnClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return ws.Shutdown(ctx)
	})
	// OTLP spans are recorded through the thread use cases, built above
	// with their final settings.
	(&otlp.Handler{Ingest: ingest.FromThreads(s.Threads.Application(), tracedThreads, s.Clock, s.EngineMetrics), Log: s.Log, Limits: s.Config.Limits.OTLP, Refusals: s.Refusals}).Mount(s.Echo, s.Auth.Middleware())
	{
		// Trace threads end once their root span ended and they went quiet
		// (otlp.trace_quiet_period); every replica runs it, the thread's
		// lock ends each once.
		s.QuietTraces = ingest.NewEndQuietTracesHandler(threadStore, s.Threads.Hub(), s.Clock, s.EngineMetrics, s.Config.OTLP.TraceQuietPeriod)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.QuietTraces.Run(ctx, 0, s.Log) }()
		s.OnClose(func() error { stop(); <-done; return nil })
	}

	// --- operators: thread deletion (s.Erasure) ---
	s.Erasure = ops.NewErasure(ops.ErasureDeps{Store: threadStore, Audit: s.Store, Clock: s.Clock,
		NewID: func() string { return uuid.NewString() }, Deleted: s.Threads.ForgetThreads, Log: s.Log})

	// --- GraphQL query API: POST/GET /graphql (s.Queries, s.GraphQL) ---
	tq := threadquery.New(s.DB)
	// Reads run on a pool of their own, so they never hold a connection
	// a writer needs (docs/operators/limits.md "Reads").
	rl := s.Config.Limits.GraphQL
	readDB, err := s.DB.OpenReads(ctx, sqldb.ReadOptions{Conns: rl.PoolConns, StatementTimeout: rl.MaxDuration})
	if err != nil {
		return err
	}
	if readDB != s.DB {
		// go_sql_*{db_name="threadengine_reads"}: the read pool beside the writers'.
		s.Metrics.MustRegister(collectors.NewDBStatsCollector(readDB.DB.DB, "threadengine_reads"))
	}
	tqr := threadquery.New(readDB)
	tqr.SetListContextBytes(rl.ListContextBytes)
	s.readGate = readgate.NewGate(readgate.GateLimits{MaxConcurrent: rl.MaxConcurrent, MaxConcurrentPerPrincipal: rl.MaxConcurrentPerPrincipal,
		QueueTimeout: rl.QueueTimeout, PointsPerSecond: rl.PointsPerSecond, PointsBurst: rl.PointsBurst,
		ExpensiveCost: rl.ExpensiveCost, MaxExpensive: rl.MaxExpensive, ExpensiveShare: rl.ExpensiveShare,
		PrincipalShare: rl.PrincipalShare},
		func(l string) { s.Refusals.Refused(limits.Name(l)) })
	gate := s.readGate
	gateWaits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "threadengine_graphql_read_waits_total",
		Help: "Reads (GraphQL operations, MCP tool calls) that waited for their turn of a run-time share (limit: graphql_principal_time, graphql_expensive_time); a wait ending in a refusal is also a refusal."},
		[]string{"limit"})
	for _, l := range []string{readgate.LimitPrincipalTime, readgate.LimitExpensiveTime} {
		gateWaits.WithLabelValues(l) // listed at 0
	}
	gate.OnWait(func(l string) { gateWaits.WithLabelValues(l).Inc() })
	s.Metrics.MustRegister(gateWaits)
	s.Metrics.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "threadengine_graphql_reads_running",
		Help: "GraphQL operations and MCP tool calls holding a read place now (limits.graphql.max_concurrent)."},
		func() float64 { return float64(gate.Running()) }))
	readDeps := readmodel.Deps{Store: tqr, Stats: tqr, Problems: tqr, ProcessMaps: tqr, Contracts: s.threadContracts(),
		ChainSecrets: chainKeys.Secrets, ChainPartialBefore: chainKeys.PartialBefore, Log: threadStore, Clock: s.Clock}
	s.Queries = readmodel.New(readDeps)
	s.startTransparencyLog(threadStore, logKeys)
	{
		// Per-step hourly roll-up behind the contracts and overview pages.
		rollCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); tq.RunRollup(rollCtx, time.Minute, s.Clock.Now) }()
		s.OnClose(func() error { stop(); <-done; return nil })
	}
	if s.GraphQL, err = graphqlapi.New(s.Queries, s.Log); err != nil {
		return err
	}
	s.GraphQL.SetMetrics(s.EngineMetrics)
	s.GraphQL.SetLimits(graphqlapi.Limits{MaxDuration: rl.MaxDuration, MaxResponseBytes: rl.MaxResponseBytes, Gate: s.readGate,
		Refused: func(l string) { s.Refusals.Refused(limits.Name(l)) }})
	s.GraphQL.SetTracer(tp())
	s.startThreadGauges(tq)
	s.GraphQL.SetActors(readmodel.NewActors(s.Store, s.Store))
	decisions := s.Threads.Application().Queries.Decisions()
	s.GraphQL.SetDecisions(decisions)
	s.GraphQL.Mount(s.Echo, s.Auth.Authenticate)

	// --- operators: thread deletion (s.Erasure), audit log, export ---
	rc := s.Config.Retention
	s.Retention = ops.NewRetention(ops.RetentionDeps{Store: threadStore, Settings: s.Store, Audit: s.Store,
		Clock: s.Clock, NewID: func() string { return uuid.NewString() }, Deleted: s.Threads.ForgetThreads, Log: s.Log,
		ConfigDays: rc.ThreadsDays, IdleDays: rc.ActiveIdleDays, BatchSize: rc.BatchSize, BatchPause: rc.BatchPause})
	s.startAlerts(threadStore)
	exports := readmodel.NewExports(readDeps, tqr)
	exports.SetMaxThreadBytes(rl.ExportThreadMaxBytes)
	(&opshttp.Handler{Erasure: s.Erasure, Audit: ops.NewAuditLog(s.Store, readmodel.NewActors(s.Store, s.Store)),
		Exports: exports, Retention: s.Retention,
		Webhooks: s.Webhooks, Queries: s.Queries, Log: s.TLog, MaxExportBytes: rl.ExportMaxBytes, Refused: s.Refusals.Refused,
		StepRefusals: ops.NewStepRefusals(threadStore)}).Mount(s.Echo, s.Auth.Middleware())
	(&opshttp.LogHandler{Log: *s.TLog}).Mount(s.Echo, s.Auth.Middleware())
	{
		retCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Retention.Sweeper.Run(retCtx, rc.SweepInterval) }()
		s.OnClose(func() error { stop(); <-done; return nil })
	}
	s.AuditRetention = ops.NewAuditRetention(ops.AuditRetentionDeps{Store: s.Store, Audit: s.Store, Clock: s.Clock,
		NewID: func() string { return uuid.NewString() }, Log: s.Log, Days: s.Config.Audit.RetentionDays,
		BatchPause: rc.BatchPause})
	{
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.AuditRetention.Run(ctx, rc.SweepInterval) }()
		s.OnClose(func() error { stop(); <-done; return nil })
	}

	// --- MCP for AI agents: /mcp (streamable HTTP) over s.Queries and s.GraphQL, API-key auth ---
	{
		mcpH := mcpapi.New(mcpapi.Deps{Queries: s.Queries, Actors: readmodel.NewActors(s.Store, s.Store), Schema: schema.GraphQL,
			Decisions: &decisions,
			GraphQL:   s.GraphQL.ExecuteJSON, Log: s.Log, Tracer: tp(), Metrics: s.EngineMetrics,
			Limits: mcpapi.Limits{MaxDuration: rl.MaxDuration, MaxResultBytes: rl.MaxResponseBytes, Gate: s.readGate,
				Refused: func(l string) { s.Refusals.Refused(limits.Name(l)) }}})
		s.Echo.Any("/mcp", echo.WrapHandler(mcpH), s.Auth.Middleware())
	}

	// --- browser sign-in through the identity registry (OIDC: /login, /auth/login, /auth/callback) and license checks ---
	{
		lic := signin.NewLicenseMonitor(registry.NewLicenseClient(s.Config.Registry.URL, s.Config.Registry.LicenseKey, s.Clock),
			s.Clock, s.Config.Registry.CheckInterval, s.Log)
		if s.Config.Registry.URL != "" {
			// Checked in the background at start and then periodically: a
			// slow or absent registry must not delay or stop the engine.
			licCtx, stop := context.WithCancel(context.Background())
			go func() { lic.Refresh(licCtx); lic.Run(licCtx) }()
			s.OnClose(func() error { stop(); return nil })
		}
		signIn := signin.New(signin.Deps{Users: s.Store, Bindings: s.Store, StartSession: s.Identity.Application().Commands.StartUserSession,
			Invalidate: s.Identity.Invalidate, License: lic,
			Product: s.Config.Registry.Product, Audit: s.Store, Setting: s.Store, Clock: s.Clock,
			NewID: func() string { return uuid.NewString() }, Log: s.Log})
		if s.Config.Registry.URL != "" {
			s.Identity.SetLicenseOwner(signIn.EnsureLicenseOwner)
		}
		publicURL := s.Config.Server.PublicURL
		if publicURL == "" {
			publicURL = "http://" + s.Config.Server.Listen
		}
		oidcIn := registry.NewOIDC(registry.OIDCConfig{Issuer: s.Config.Registry.URL, ClientID: s.Config.Registry.ClientID,
			ClientSecret: s.Config.Registry.ClientSecret, RedirectURI: publicURL + "/auth/callback",
			PostLogoutURI: s.Auth.LoginURL(), Log: s.Log}, signIn, s.Auth)
		oidcIn.Mount(s.Echo)
		s.Auth.ProviderLogoutURL = oidcIn.ProviderLogoutURL
	}

	// --- web UI (/ and /ui/*) and engine settings (/v1/engine/settings) ---
	s.EngineSettings = &ops.EngineSettings{Store: s.Store, ConfigURL: s.Config.Server.PublicURL, Clock: s.Clock,
		Audit: s.Store, NewID: func() string { return uuid.NewString() }, Log: s.Log}
	if err := webui.Mount(s.Echo, s.EngineSettings, s.Auth.Middleware()); err != nil {
		return err
	}

	return nil
}

// startHub delivers the notification log until Close (its counts go to
// the engine metrics, see threads.Module.SetMetrics).
func (s *Server) startHub() {
	hub := s.Threads.Hub()
	n := s.Config.Notifications
	hub.Configure(delivery.HubConfig{RedeliverAfter: n.RedeliverAfter, MaxDeliveries: n.MaxDeliveries, Retention: n.Retention,
		WaitRecheck: n.WaitRecheck, SettledRetention: n.SettledRetention})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx, s.Broadcast) }()
	s.OnClose(func() error { stop(); <-done; return nil })
}

// openBroadcast opens the channel replicas wake each other with.
func (s *Server) openBroadcast(ctx context.Context) error {
	if s.DB.Dialect != sqldb.Postgres {
		b := broadcast.NewLocal()
		s.Broadcast = b
		s.OnClose(b.Close)
		return nil
	}
	b, err := broadcast.NewPostgres(ctx, s.DB, s.Config.Database.URL, s.Log)
	if err != nil {
		return err
	}
	s.Broadcast = b
	s.OnClose(b.Close)
	return nil
}

// backfillHealth computes, in the background, the health of threads
// recorded before health was kept on the thread row; until it finishes they
// show as OK. It runs once per start and is a no-op when nothing is left.
func (s *Server) backfillHealth(store *threadstore.Store) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		n, err := store.BackfillHealth(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.Log.Warn("thread health backfill stopped", "threads", n, "err", err)
		case n > 0:
			s.Log.Info("thread health backfilled", "threads", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}()
	s.OnClose(func() error { stop(); <-done; return nil })
}

// startSessionJanitor deletes sessions that expired more than a day ago,
// hourly, so the sessions table does not grow without bound. Expired sessions
// are already refused on use; the day of grace keeps them for inspection.
func (s *Server) startSessionJanitor() {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			if n, err := s.Store.DeleteExpiredSessions(ctx, s.Clock.Now().Add(-24*time.Hour)); err != nil && ctx.Err() == nil {
				s.Log.Warn("delete expired sessions", "err", err)
			} else if n > 0 {
				s.Log.Info("deleted expired sessions", "count", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	s.OnClose(func() error { stop(); <-done; return nil })
}

// OnClose registers cleanup run by Close, in reverse order.
func (s *Server) OnClose(fn func() error) { s.closers = append(s.closers, fn) }

// Serve accepts connections on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	lim := s.Config.Limits.HTTP
	s.httpSrv = &http.Server{
		Handler:           s.Echo,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		IdleTimeout:       lim.IdleTimeout,
	}
	err := s.httpSrv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and drains in-flight requests until
// ctx ends, then closes the store.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	if s.httpSrv != nil {
		err = s.httpSrv.Shutdown(ctx)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close releases resources without draining (used after failed starts).
func (s *Server) Close() error {
	var errs []error
	s.stopOnce.Do(func() {
		for i := len(s.closers) - 1; i >= 0; i-- {
			if err := s.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("close: %w", errors.Join(errs...))
	}
	return nil
}
