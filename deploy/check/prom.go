package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// promql parses expressions as a Prometheus server with default options.
var promql = parser.NewParser(parser.Options{})

// ruleReport is one alerting or recording rule and the metrics its
// expression reads.
type ruleReport struct {
	Group   string            `json:"group"`
	Name    string            `json:"name"` // alert or record name
	Expr    string            `json:"expr"`
	Metrics []string          `json:"metrics"`
	Labels  map[string]string `json:"labels"`
	Annots  map[string]string `json:"annotations"`
}

// checkRules parses a Prometheus rule file the way Prometheus loads it
// (rulefmt: structure, unique names, templates, every expression parsed).
func checkRules(file string) ([]ruleReport, error) {
	groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []ruleReport
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			ms, err := metricsOf(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", g.Name, name, err)
			}
			out = append(out, ruleReport{Group: g.Name, Name: name, Expr: r.Expr, Metrics: ms, Labels: r.Labels, Annots: r.Annotations})
		}
	}
	return out, nil
}

// metricsOf lists the metric names an expression selects.
func metricsOf(expr string) ([]string, error) {
	ms, _, err := selectorsOf(expr)
	return ms, err
}

// instanceVar stands for Grafana's $instance in a parsed expression.
const instanceVar = "__instance__"

// selectorsOf lists the metric names an expression selects, and those
// selected without the matcher instance=~"$instance".
func selectorsOf(expr string) (metrics, unfiltered []string, err error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, nil, err
	}
	seen, bare := map[string]bool{}, map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			if name == "" {
				for _, m := range vs.LabelMatchers {
					if m.Name == "__name__" {
						name = m.Value
					}
				}
			}
			seen[name] = true
			filtered := false
			for _, m := range vs.LabelMatchers {
				filtered = filtered || (m.Name == "instance" && m.Value == instanceVar)
			}
			if !filtered {
				bare[name] = true
			}
		}
		return nil
	})
	return sorted(seen), sorted(bare), nil
}

func sorted(set map[string]bool) []string {
	out := []string{}
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

type dashboardTarget struct {
	Panel   string   `json:"panel"`
	Expr    string   `json:"expr"`
	Metrics []string `json:"metrics"`
	// Unfiltered are the metrics selected without instance=~"$instance".
	Unfiltered []string `json:"unfiltered"`
}

// grafanaVars stand in for Grafana's variables so an expression parses
// as PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "${instance}", instanceVar, "$instance", instanceVar)

// checkDashboard parses every target expression of a Grafana dashboard
// (panels, and panels inside collapsed rows).
func checkDashboard(file string) ([]dashboardTarget, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	type panel struct {
		Title   string  `json:"title"`
		Type    string  `json:"type"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	var out []dashboardTarget
	var problems []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				ms, bare, err := selectorsOf(grafanaVars.Replace(t.Expr))
				if err != nil {
					problems = append(problems, fmt.Sprintf("panel %q: %s: %v", p.Title, t.Expr, err))
					continue
				}
				out = append(out, dashboardTarget{Panel: p.Title, Expr: t.Expr, Metrics: ms, Unfiltered: bare})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(problems) > 0 {
		return out, errors.New(strings.Join(problems, "\n"))
	}
	return out, nil
}
