package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/domain"
)

// opsRoutes answer whatever the schema compatibility gate says: probes and
// scrapes must see a refusing replica.
var opsRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// readiness is what /readyz answers, kept for the threadengine_ready gauge.
type readiness struct {
	s     *Server
	ready atomic.Bool
}

// check pings the database and re-reads the schema compatibility window,
// logging a change of the gate once. It returns the HTTP status and body
// /readyz answers.
func (r *readiness) check(ctx context.Context) (int, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	db := r.s.DB
	if err := db.PingContext(ctx); err != nil {
		r.ready.Store(false)
		return http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "unreachable"}
	}
	c, changed, err := db.CheckCompat(ctx)
	if err != nil {
		r.ready.Store(false)
		r.s.Log.Warn("schema compatibility: check failed", "err", err)
		return http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "schema unreadable"}
	}
	schema := map[string]int64{"database": c.Database, "min_binary": c.MinBinary, "binary": c.Binary}
	refusal := db.Refusal()
	if changed {
		r.logGate(c, refusal)
	}
	if refusal != nil {
		r.ready.Store(false)
		msg := refusal.Error()
		var de *domain.Error
		if errors.As(refusal, &de) {
			msg = de.Message // the public text, without the kind and the internal cause
		}
		return http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "reason": "schema_incompatible",
			"message": msg, "schema": schema}
	}
	r.ready.Store(true)
	return http.StatusOK, map[string]any{"status": "ready", "schema": schema}
}

func (r *readiness) logGate(c sqldb.Compat, refusal error) {
	attrs := []any{"binary_schema", c.Binary, "database_schema", c.Database, "min_binary_schema", c.MinBinary}
	if refusal != nil {
		reason := refusal.Error()
		var de *domain.Error
		if errors.As(refusal, &de) {
			reason = de.Message
		}
		r.s.Log.Error("schema compatibility gate closed: this replica refuses to serve (readyz 503, no writes)",
			append(attrs, "reason", reason)...)
		return
	}
	r.s.Log.Info("schema compatibility gate open: serving", attrs...)
}

// mountReadiness serves /healthz and /readyz, refuses every other request
// while the schema compatibility gate is closed, re-checks the gate every
// interval (so a replica left behind by a contract migration stops
// serving even if nobody probes it) and publishes readiness and build
// metrics.
func (s *Server) mountReadiness(opt Options) {
	r := &readiness{s: s}
	if err := s.DB.Refusal(); err != nil {
		r.logGate(s.DB.LastCompat(), err)
	} else {
		r.ready.Store(true)
	}
	s.Echo.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	s.Echo.GET("/readyz", func(c echo.Context) error {
		code, body := r.check(c.Request().Context())
		return c.JSON(code, body)
	})
	s.Echo.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := s.DB.Refusal(); err != nil && !opsRoutes[c.Path()] {
				c.Response().Header().Set("Retry-After", "30")
				return err
			}
			return next(c)
		}
	})

	compat := func(f func(sqldb.Compat) int64) func() float64 {
		return func() float64 { return float64(f(s.DB.LastCompat())) }
	}
	version, commit := opt.Version, opt.Commit
	if version == "" {
		version = "devel"
	}
	if commit == "" {
		commit = "unknown"
	}
	s.Metrics.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "threadengine_ready",
			Help: "1 while /readyz answers 200 (database reachable, schema compatibility gate open), as of the latest check."},
			func() float64 {
				if r.ready.Load() {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "threadengine_build_info",
			Help:        "Always 1; the labels name this binary's version, commit and schema (its highest migration).",
			ConstLabels: prometheus.Labels{"version": version, "commit": commit, "schema": strconv.FormatInt(s.DB.BinarySchema(), 10)}},
			func() float64 { return 1 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "threadengine_database_schema_version",
			Help: "The database's schema version (highest migration applied), as of the latest gate check."},
			compat(func(c sqldb.Compat) int64 { return c.Database })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "threadengine_database_min_binary_schema",
			Help: "The oldest binary schema the database allows, as of the latest gate check."},
			compat(func(c sqldb.Compat) int64 { return c.MinBinary })),
	)

	every := opt.CompatCheckInterval
	if every <= 0 {
		every = 10 * time.Second
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.check(ctx)
			}
		}
	}()
	s.OnClose(func() error { stop(); <-done; return nil })
}
