// Command check validates the deployment files without a container runtime
// or a cluster; the tests in deploy/ (go test ./deploy) run it. It is its own module so the
// engine's module does not depend on Kubernetes, Prometheus, Compose and
// BuildKit libraries.
//
//	check context SRC DST     copy SRC to DST as `docker build` would send it (.dockerignore)
//	check dockerfile FILE     parse and lint with BuildKit's parser and build checks
//	check k8s FILE            decode every manifest strictly into Kubernetes API types
//	check compose FILE ENV    load and validate with compose-go (the Compose spec's schema)
//	check rules FILE          parse Prometheus rules (rulefmt, PromQL) and list their metrics
//	check dashboard FILE      parse every Grafana target's PromQL and list its metrics
//
// Each prints JSON on stdout and exits 1 with the reasons on stderr when
// the file is invalid.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: check context|dockerfile|k8s|compose|rules|dashboard FILE...")
		os.Exit(2)
	}
	args := os.Args[2:]
	var out any
	var err error
	switch os.Args[1] {
	case "context":
		out, err = copyContext(args[0], args[1])
	case "dockerfile":
		out, err = lintDockerfile(args[0])
	case "k8s":
		out, err = checkManifests(args[0])
	case "compose":
		out, err = checkCompose(args[0], args[1])
	case "rules":
		out, err = checkRules(args[0])
	case "dashboard":
		out, err = checkDashboard(args[0])
	default:
		fmt.Fprintf(os.Stderr, "check: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
