package server

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof serves Go's profiler on addr (server.pprof_listen) until the
// returned server is closed; its Addr is the address bound (port 0 takes
// a free one). It has a mux of its own so the profiler is never reachable
// on the engine's public listener.
func ServePprof(addr string, log *slog.Logger) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: l.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof listener stopped", "err", err)
		}
	}()
	log.Info("profiler listening", "addr", l.Addr().String())
	return srv, nil
}
