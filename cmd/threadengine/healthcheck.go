package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

func init() {
	commands["healthcheck"], summaries["healthcheck"] = healthcheck,
		"probe the engine this config describes (GET /readyz on server.listen); exit 0 when it answers 200"
}

// healthcheck is the container image's HEALTHCHECK: a scratch image has no
// curl, so the binary probes itself over loopback.
func healthcheck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	path := fs.String("path", "/readyz", "path to probe (/readyz: ready to serve; /healthz: alive)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("server.listen %q: %w", cfg.Server.Listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1" // listening on every address: loopback is one of them
	}
	url := "http://" + net.JoinHostPort(host, port) + *path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	fmt.Printf("%s: %s %s", url, resp.Status, body)
	return nil
}
