package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/threadengine/engine/adapters/config"
	"github.com/threadengine/engine/adapters/server"
)

func init() {
	commands["serve"], summaries["serve"] = serve, "run the engine (default)"
	commands["bootstrap-owner"], summaries["bootstrap-owner"] = bootstrapOwner, "create the first administrator and print its API key once"
}

// newLogger builds the process logger from the log.* config.
func newLogger(c config.Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Log.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	slog.SetDefault(log)
	b := readBuild()
	// A reader polling the address file must not take a previous run's port
	// for this one's.
	if cfg.Server.AddressFile != "" {
		if err := os.Remove(cfg.Server.AddressFile); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("server.address_file: %w", err)
		}
	}
	// Port 0 takes a free port: bind before building the server, so that
	// what it advertises without server.public_url is the bound address.
	// Otherwise bind after (a fixed port stays closed while migrating).
	var l net.Listener
	if _, port, _ := net.SplitHostPort(cfg.Server.Listen); port == "0" {
		if l, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
			return fmt.Errorf("server.listen %s: %w", cfg.Server.Listen, err)
		}
		cfg.Server.Listen = l.Addr().String()
	}
	srv, err := server.New(ctx, cfg, server.Options{Logger: log, Version: b.Version, Commit: b.Commit})
	if err != nil {
		if l != nil {
			l.Close()
		}
		return err
	}
	if l == nil {
		if l, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
			srv.Close()
			return fmt.Errorf("server.listen %s: %w", cfg.Server.Listen, err)
		}
	}
	bound := []string{l.Addr().String()}
	if cfg.Server.PprofListen != "" {
		ps, err := server.ServePprof(cfg.Server.PprofListen, log)
		if err != nil {
			srv.Close()
			l.Close()
			return fmt.Errorf("server.pprof_listen %s: %w", cfg.Server.PprofListen, err)
		}
		defer ps.Close()
		bound = append(bound, ps.Addr)
	}
	log.Info("threadengine listening", "addr", l.Addr().String(), "public_url", cfg.Server.PublicURL, "version", versionString())
	if cfg.Server.AddressFile != "" {
		if err := writeAddressFile(cfg.Server.AddressFile, bound); err != nil {
			srv.Close()
			l.Close()
			return fmt.Errorf("server.address_file: %w", err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	// SIGTERM/SIGINT: stop accepting, let in-flight requests finish.
	log.Info("shutting down", "drain_timeout", cfg.Server.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

func bootstrapOwner(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bootstrap-owner", flag.ContinueOnError)
	email := fs.String("email", "", "owner's email address (required)")
	name := fs.String("name", "", "owner's full name")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *email == "" {
		return usageError{"--email is required"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	srv, err := server.New(ctx, cfg, server.Options{Logger: log, Alongside: true})
	if err != nil {
		return err
	}
	defer srv.Close()
	u, key, err := srv.Identity.Application().Commands.BootstrapOwner.Handle(ctx, *email, *name)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "owner %s (%s) is an active admin. API key (shown once, store it now):\n", u.Email, u.ID)
	fmt.Println(key)
	return nil
}

// writeAddressFile writes the bound addresses, one a line (server.listen's,
// then server.pprof_listen's when it is on), to path through a temporary
// file in the same directory renamed into place: a reader polling path sees
// all of them or no file.
func writeAddressFile(path string, addrs []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".address-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(strings.Join(addrs, "\n") + "\n"); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
