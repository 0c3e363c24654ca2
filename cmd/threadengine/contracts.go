package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/domain/gherkin"
)

func init() {
	commands["contracts"] = func(ctx context.Context, args []string) error {
		return contractsCmd(ctx, args, os.Stdout, os.Stderr)
	}
	summaries["contracts"] = "apply, check, list or get contracts (contracts help)"
}

const contractsUsage = `usage:
  threadengine contracts apply FILE [--url URL] [--api-key KEY]   upload FILE as a new contract version
  threadengine contracts check FILE                               validate FILE locally, without an engine
  threadengine contracts list [--url URL] [--api-key KEY]         latest version of every contract
  threadengine contracts get NAME [--version N] [--url URL] [--api-key KEY]
                                                                  print a version's YAML as uploaded

--url defaults to $THREADENGINE_URL, else http://127.0.0.1:8081;
--api-key defaults to $THREADENGINE_API_KEY.`

// errProblemsPrinted makes the command exit 1 after printing the problems.
var errProblemsPrinted = errors.New("contract rejected")

func contractsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, contractsUsage)
		if len(args) == 0 {
			return usageError{"a subcommand is required"}
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("contracts "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("url", envOr("THREADENGINE_URL", "http://127.0.0.1:8081"), "engine base URL")
	apiKey := fs.String("api-key", os.Getenv("THREADENGINE_API_KEY"), "API key (env THREADENGINE_API_KEY)")
	version := fs.Int("version", 0, "contract version (get; 0 = latest)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageError{err.Error()}
	}
	cl := &apiClient{base: strings.TrimSuffix(*baseURL, "/"), key: *apiKey, http: &http.Client{Timeout: 30 * time.Second}}

	switch sub {
	case "apply", "check":
		if len(pos) != 1 {
			return usageError{sub + " needs exactly one FILE (- for stdin)"}
		}
		src, err := readSource(pos[0])
		if err != nil {
			return err
		}
		if sub == "check" {
			c, err := checkOffline(src)
			if err != nil {
				printProblems(stderr, pos[0], domain.AsError(err).Message, domain.ContractProblems(err))
				return errProblemsPrinted
			}
			fmt.Fprintf(stdout, "%s: contract %s version %d is valid (%d steps)\n", pos[0], c.Name, c.Version, len(c.Steps))
			return nil
		}
		var out struct {
			Name    string `json:"name"`
			Version int    `json:"version"`
			Steps   []any  `json:"steps"`
		}
		if err := cl.do(ctx, http.MethodPost, "/v1/contracts", "application/yaml", src, &out, stderr, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "contract %s version %d stored (%d steps)\n", out.Name, out.Version, len(out.Steps))
		return nil
	case "list":
		if len(pos) != 0 {
			return usageError{"list takes no arguments"}
		}
		var out struct {
			Contracts []struct {
				Name        string    `json:"name"`
				Version     int       `json:"version"`
				StepCount   int       `json:"step_count"`
				CreatedAt   time.Time `json:"created_at"`
				Description string    `json:"description"`
			} `json:"contracts"`
		}
		if err := cl.do(ctx, http.MethodGet, "/v1/contracts", "", nil, &out, stderr, ""); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-32s %7s %5s  %-20s  %s\n", "NAME", "VERSION", "STEPS", "UPLOADED", "DESCRIPTION")
		for _, c := range out.Contracts {
			fmt.Fprintf(stdout, "%-32s %7d %5d  %-20s  %s\n", c.Name, c.Version, c.StepCount, c.CreatedAt.UTC().Format(time.RFC3339), c.Description)
		}
		return nil
	case "get":
		if len(pos) != 1 {
			return usageError{"get needs exactly one NAME"}
		}
		path := "/v1/contracts/" + url.PathEscape(pos[0])
		if *version > 0 {
			path += "/versions/" + strconv.Itoa(*version)
		}
		var out struct {
			Source string `json:"source"`
		}
		if err := cl.do(ctx, http.MethodGet, path, "", nil, &out, stderr, ""); err != nil {
			return err
		}
		fmt.Fprint(stdout, out.Source)
		if !strings.HasSuffix(out.Source, "\n") {
			fmt.Fprintln(stdout)
		}
		return nil
	}
	fmt.Fprintln(stderr, contractsUsage)
	return usageError{fmt.Sprintf("unknown subcommand %q", sub)}
}

// parseInterleaved lets flags follow positional arguments
// ("apply file.yaml --url …"), which the flag package alone does not.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func readSource(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(os.Stdin, domain.MaxContractSourceBytes+1))
	}
	return os.ReadFile(path)
}

// checkOffline compiles a Gherkin or YAML source without an engine (a
// Gherkin Include cannot be resolved offline: it is reported).
func checkOffline(src []byte) (domain.Contract, error) {
	if domain.DetectContractFormat(src) == domain.ContractFormatYAML {
		return domain.ParseContract(src)
	}
	res, err := gherkin.Compile(src, nil)
	if err != nil {
		return domain.Contract{}, err
	}
	if len(res.Problems) > 0 {
		return domain.Contract{}, domain.InvalidContract(res.Problems)
	}
	return res.Contract, nil
}

func printProblems(w io.Writer, file, summary string, ps []domain.ContractProblem) {
	fmt.Fprintf(w, "%s: %s\n", file, summary)
	for _, p := range ps {
		field := p.Field
		if field == "" {
			field = "(contract)"
		}
		if p.Line > 0 {
			fmt.Fprintf(w, "  line %d: %s: %s\n", p.Line, field, p.Message)
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", field, p.Message)
	}
}

type apiClient struct {
	base, key string
	http      *http.Client
}

// do sends one request and decodes a 2xx JSON answer into out. An error
// answer is printed (with every contract problem) and returned as an error.
func (c *apiClient) do(ctx context.Context, method, path, contentType string, body []byte, out any, stderr io.Writer, file string) error {
	if c.key == "" {
		return usageError{"an API key is required: --api-key or THREADENGINE_API_KEY"}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the engine at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("unexpected response from %s: %w", c.base, err)
		}
		return nil
	}
	var p struct {
		Detail   string                   `json:"detail"`
		Code     string                   `json:"code"`
		Problems []domain.ContractProblem `json:"problems"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Detail == "" {
		return fmt.Errorf("engine answered %s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	if len(p.Problems) > 0 {
		printProblems(stderr, file, p.Detail, p.Problems)
		return errProblemsPrinted
	}
	return fmt.Errorf("%s (%s, %s)", p.Detail, resp.Status, p.Code)
}
