// Command devregistry runs the development identity registry: an OpenID
// Provider with a password login page for the users in a YAML file, plus the
// license API the engine checks. State is in memory; restart to reset.
//
//	go run ./cmd/devregistry -config devregistry.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/threadengine/engine/adapters/devregistry"
)

func main() {
	path := flag.String("config", "devregistry.yaml", "YAML file with clients, users and licenses")
	listen := flag.String("listen", "", "host:port to bind (overrides the file's listen)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := devregistry.LoadConfig(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devregistry:", err)
		os.Exit(2)
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	reg, err := devregistry.Start(cfg.Listen, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devregistry:", err)
		os.Exit(1)
	}
	log.Info("devregistry listening", "issuer", reg.Issuer(), "discovery", reg.Issuer()+"/.well-known/openid-configuration",
		"license_api", reg.Issuer()+devregistry.LicensePath, "users", len(cfg.Users), "clients", len(cfg.Clients))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	_ = reg.Close()
}
