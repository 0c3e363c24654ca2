package httpapi

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
)

// Metrics holds the engine's Prometheus registry. It is per server (not the
// global default) so several engines can run in one test process; features
// register their own collectors on Registry.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics creates a registry with Go runtime, process and HTTP metrics.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threadengine_http_requests_total", Help: "HTTP requests by method, route template and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "threadengine_http_request_duration_seconds", Help: "HTTP request latency by method and route template.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), m.requests, m.latency)
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
}

// MetricsToken guards /metrics with a bearer token (metrics.token); an empty
// token leaves it open, as Prometheus scrapers expect by default.
func MetricsToken(token string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if token == "" {
			return next
		}
		want := []byte("Bearer " + token)
		return func(c echo.Context) error {
			got := []byte(c.Request().Header.Get(echo.HeaderAuthorization))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				return domain.ErrUnauthenticated
			}
			return next(c)
		}
	}
}

// route is the matched route template, so metric labels stay bounded.
func route(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return "unmatched"
}

// Observe is middleware recording request metrics and one structured log
// line per request. Long-lived requests (WebSocket) are recorded when they end.
func Observe(m *Metrics, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(loggerKey, log)
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			rt := route(c)
			d := time.Since(start)
			if m != nil {
				m.requests.WithLabelValues(c.Request().Method, rt, strconv.Itoa(status)).Inc()
				m.latency.WithLabelValues(c.Request().Method, rt).Observe(d.Seconds())
			}
			level := slog.LevelInfo
			if rt == "/healthz" || rt == "/readyz" || rt == "/metrics" {
				level = slog.LevelDebug
			} else if status >= http.StatusInternalServerError {
				level = slog.LevelError
			}
			attrs := []slog.Attr{
				slog.String("method", c.Request().Method), slog.String("route", rt), slog.String("path", c.Request().URL.Path),
				slog.Int("status", status), slog.Duration("duration", d), slog.Int64("bytes", c.Response().Size),
				slog.String("remote", c.RealIP()),
			}
			if p, ok := authz.PrincipalFrom(c.Request().Context()); ok {
				attrs = append(attrs, slog.String("principal", p.Key()))
			}
			log.LogAttrs(c.Request().Context(), level, "http request", attrs...)
			return nil
		}
	}
}
