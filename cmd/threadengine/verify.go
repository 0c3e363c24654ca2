package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/threadengine/engine/adapters/opshttp"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/threadstore"
)

func init() {
	commands["verify"] = func(_ context.Context, args []string) error { return verifyCmd(args, os.Stdout, os.Stderr) }
	summaries["verify"] = "verify a thread export offline against the transparency log's public key"
	commands["rotate-log-key"] = rotateLogKeyCmd
	summaries["rotate-log-key"] = "add a new signing key version to the transparency log (engines sign with it from their next start)"
}

const verifyUsage = `usage:
  threadengine verify EXPORT --log-key KEY [--log-key KEY…] [--checkpoint OLD] [--witness-key WKEY…]

Checks, offline (no database, secret or network): every step's hash, each
thread's chain and completeness, that every step is in the signed checkpoint
the export carries, and (with --checkpoint) that the log was not rewritten
since a checkpoint saved earlier. EXPORT is GET /v1/threads/{id}/export or
GET /v1/threads/export (NDJSON), "-" for standard input. KEY is a verifier
key (a line of GET /v1/log/keys) or a file of them; OLD a file holding a
signed checkpoint (GET /v1/log/checkpoint); WKEY a witness's verifier key
(or a file of them): every checkpoint must then carry its cosignature.
Exits 1 when a check fails.`

// errVerifyFailed makes the command exit 1 after printing what failed.
var errVerifyFailed = errors.New("verification failed")

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func verifyCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keys stringList
	fs.Var(&keys, "log-key", "the log's verifier key, or a file of them (repeatable)")
	saved := fs.String("checkpoint", "", "a signed checkpoint saved earlier (file)")
	var witnessKeys stringList
	fs.Var(&witnessKeys, "witness-key", "a witness's verifier key, or a file of them (repeatable): its cosignature is required")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	if len(pos) != 1 || len(keys) == 0 {
		fmt.Fprintln(stderr, verifyUsage)
		return usageError{"an export file and --log-key are required"}
	}
	vkeys := keyLines(keys)
	var in io.Reader = os.Stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	var old string
	if *saved != "" {
		b, err := os.ReadFile(*saved)
		if err != nil {
			return err
		}
		old = string(b)
	}
	reports, err := opshttp.VerifyOffline(opshttp.OfflineInput{Export: in, Keys: vkeys, Saved: old, Witnesses: keyLines(witnessKeys)})
	if err != nil {
		return err
	}
	if !opshttp.FormatReports(stdout, reports) {
		return errVerifyFailed
	}
	return nil
}

// rotateLogKeyCmd adds a log signing key version (database from the config).
func rotateLogKeyCmd(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usageError{"rotate-log-key takes no arguments"}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg, sqldb.OpenOptions{Alongside: true})
	if err != nil {
		return err
	}
	defer db.Close()
	sealer, err := threadstore.NewSealer(cfg.Security.KeysEncryptionKey)
	if err != nil {
		return err
	}
	v, err := threadstore.RotateLogKey(ctx, db, sealer, time.Now())
	if err != nil {
		return err
	}
	keys, err := threadstore.LoadLogKeys(ctx, db, "", sealer, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "log signing key version %s added; engines sign with it from their next start. Public key:\n", v)
	fmt.Println(keys.Verifiers[0])
	return nil
}

// keyLines are the keys given, each a key or a file of them (one a line).
func keyLines(given []string) []string {
	var out []string
	for _, k := range given {
		if b, err := os.ReadFile(k); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					out = append(out, line)
				}
			}
			continue
		}
		out = append(out, k)
	}
	return out
}
