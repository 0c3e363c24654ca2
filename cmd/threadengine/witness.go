package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/witnesshttp"
	"github.com/threadengine/engine/app/witness"
	"github.com/threadengine/engine/domain"
)

func init() {
	commands["witness"] = witnessCmd
	summaries["witness"] = "serve as a witness of transparency logs (C2SP tlog-witness: cosigns checkpoints, refuses forks)"
}

const witnessUsage = `usage:
  threadengine witness --key FILE --state FILE --log-key KEY [--log-key KEY…] [--listen ADDR] [--name NAME]

Serves POST /add-checkpoint (C2SP tlog-witness) for the logs whose verifier
keys are given (a line of GET /v1/log/keys, or a file of them): it keeps the
latest checkpoint it cosigned of each log in the state file and cosigns a new
one only with a consistency proof from it (409 Conflict otherwise, 422 for a
proof that does not verify). FILE under --key holds the witness's private
key; if it does not exist a new key named NAME is generated there and its
verifier key (what the log's transparency.witnesses[].key and auditors need)
is written to FILE.pub and logged.`

func witnessCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("witness", flag.ContinueOnError)
	var keys stringList
	fs.Var(&keys, "log-key", "a log's verifier key, or a file of them (repeatable)")
	keyFile := fs.String("key", "", "the witness's private key file (generated if absent)")
	stateFile := fs.String("state", "", "the file keeping the latest cosigned checkpoint of each log")
	listen := fs.String("listen", "127.0.0.1:8090", "address to serve on")
	name := fs.String("name", "", "the witness's name when a key is generated (default: witness.threadengine.local/<host>)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if *keyFile == "" || *stateFile == "" || len(keys) == 0 {
		fmt.Fprintln(os.Stderr, witnessUsage)
		return usageError{"--key, --state and --log-key are required"}
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	skey, err := witnessKey(*keyFile, *name, log)
	if err != nil {
		return err
	}
	cosigner, err := domain.NewCosigner(skey)
	if err != nil {
		return fmt.Errorf("witness key %s: %w", *keyFile, err)
	}
	vkeys := keyLines(keys)
	state, err := witnesshttp.OpenFileState(*stateFile)
	if err != nil {
		return err
	}
	w, err := witness.New(cosigner, vkeys, state)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: witnesshttp.Handler(w, log), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	log.Info("witness: serving", "addr", ln.Addr().String(), "name", cosigner.Name(), "logs", len(vkeys))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// witnessKey reads the private key in path, generating one (and path.pub)
// when the file does not exist.
func witnessKey(path, name string, log *slog.Logger) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if name == "" {
		host, _ := os.Hostname()
		name = "witness.threadengine.local/" + host
	}
	skey, vkey, err := domain.GenerateCosignerKey(name)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(skey + "\n"); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(path+".pub", []byte(vkey+"\n"), 0o644); err != nil {
		return "", err
	}
	log.Info("witness: generated a key", "file", path, "verifier_key", vkey)
	return skey, nil
}
