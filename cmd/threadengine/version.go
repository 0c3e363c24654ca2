package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/threadengine/engine/adapters/sqldb"
)

// version and commit are set at release builds with
// -ldflags "-X main.version=v1.2.3 -X main.commit=<sha>" (the Dockerfile
// does); otherwise they come from the build information the go command
// records: the module version (a pseudo-version or "(devel)") and, when
// built from a git checkout with -buildvcs, the commit.
var (
	version = ""
	commit  = ""
)

func init() {
	summaries["version"] = "print the version, commit and schema of this binary"
	commands["version"] = func(context.Context, []string) error {
		b := readBuild()
		fmt.Printf("version: %s\ncommit: %s\nschema: %d\ngo: %s %s/%s\n", b.Version, b.Commit, b.Schema, b.Go, runtime.GOOS, runtime.GOARCH)
		return nil
	}
}

// build describes this binary.
type build struct {
	Version string // release version, or the module's version from build info ("devel" when none)
	Commit  string // VCS commit (with "-dirty" for a modified tree), "unknown" without VCS information
	Schema  int64  // highest embedded migration: what the schema compatibility gate compares
	Go      string
}

func readBuild() build {
	b := build{Version: version, Commit: commit, Schema: sqldb.EmbeddedSchema(sqldb.Postgres), Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if b.Commit == "" && rev != "" {
			b.Commit = rev
			if dirty {
				b.Commit += "-dirty"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// versionString is the one-line form logged at start.
func versionString() string {
	b := readBuild()
	c, dirty := strings.CutSuffix(b.Commit, "-dirty")
	if len(c) > 12 {
		c = c[:12]
	}
	if dirty {
		c += "-dirty"
	}
	return fmt.Sprintf("%s (commit %s, schema %d)", b.Version, c, b.Schema)
}
