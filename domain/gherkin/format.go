package gherkin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
)

// Format writes c as a canonical Gherkin source: compiling it gives a
// contract with the same name, version, description and content hash (a
// contract composed from includes is written expanded). One Rule per step
// in order, a Step block for steps whose context fields have meanings.
func Format(c domain.Contract) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	q := strconv.Quote
	line("Feature: %s", c.Name)
	line("Version: %d", c.Version)
	if c.Description != "" {
		line("Description: %s", c.Description)
	}
	var bg []string
	if c.MaxDuration > 0 {
		bg = append(bg, "the thread must finish within "+q(formatDuration(c.MaxDuration)))
	}
	if c.AllowMultipleTerminals {
		bg = append(bg, "multiple terminal steps are allowed")
	}
	if sev := c.MultipleTerminalsSeverity; sev != "" && sev != domain.SeverityMinor {
		for word, s := range severities {
			if s == sev {
				bg = append(bg, "multiple terminal severity is "+q(word))
			}
		}
	}
	if c.ThreadsLockToVersion {
		bg = append(bg, "threads lock to this version")
	}
	if len(bg) > 0 {
		line("\nBackground:")
		for i, cl := range bg {
			line("  %s %s", keyword(i, "Given"), cl)
		}
	}
	for _, s := range c.Steps {
		if len(s.ContextMeanings) == 0 {
			continue
		}
		line("\nStep: %s", q(s.Name))
		line("  Description: %s", q(s.Description))
		for _, f := range s.Required {
			line("  Required context: %s%s", q(f), means(s.ContextMeanings[f]))
		}
		for _, f := range s.Optional {
			line("  Optional context: %s%s", q(f), means(s.ContextMeanings[f]))
		}
	}
	for _, s := range c.Steps {
		line("\nRule: %s", s.Name)
		line("  When step %s is submitted", q(s.Name))
		cl := []string{"owner must be " + q(s.Owner)}
		if len(s.ContextMeanings) == 0 {
			cl = append(cl, "step description is "+q(s.Description))
			for _, f := range s.Required {
				cl = append(cl, "content "+q(f)+" must be present")
			}
			for _, f := range s.Optional {
				cl = append(cl, "content "+q(f)+" is optional")
			}
		}
		if s.Type != domain.StepTypeManaged {
			cl = append(cl, "step type is "+q(s.Type))
		}
		for _, d := range s.DependsOn {
			if contains(s.FreshDependsOn, d) {
				cl = append(cl, "step "+q(d)+" must succeed before each invocation")
			} else {
				cl = append(cl, "step "+q(d)+" must have succeeded")
			}
		}
		for _, r := range s.ContentRules {
			cl = append(cl, contentSentence(r))
		}
		for _, r := range s.SemanticRules {
			cl = append(cl, "content "+q(r.Field)+" must satisfy question "+q(r.Question))
			if len(r.ContextSteps) > 0 {
				cl = append(cl, "semantic context for content "+q(r.Field)+" is "+quoteAll(r.ContextSteps))
			}
			if r.MinProbability != 0 {
				cl = append(cl, "semantic confidence for content "+q(r.Field)+" is "+strconv.FormatFloat(r.MinProbability, 'g', -1, 64))
			}
		}
		if !c.EntryPointsDerived && c.IsEntryPoint(s.Name) {
			cl = append(cl, "this step is an entry point")
		}
		if !c.TerminalStepsDerived && c.IsTerminal(s.Name) {
			cl = append(cl, "this step is terminal")
		}
		if s.Timeout > 0 {
			cl = append(cl, "this step must finish within "+q(formatDuration(s.Timeout)))
		}
		if t, ok := c.Transition(s.Name); ok {
			cl = append(cl, "next step must be one of "+quoteAll(t.To))
			if t.Timeout > 0 {
				cl = append(cl, "the next step must start within "+q(formatDuration(t.Timeout)))
			}
			if t.MaxRetries > 0 {
				cl = append(cl, "this step may be retried at most "+strconv.Itoa(t.MaxRetries)+" times")
			}
		}
		for i, c := range cl {
			line("  %s %s", keyword(i, "Then"), c)
		}
	}
	for _, g := range c.Groups {
		line("\nGroup: %s", q(g.Name))
		cl := []string{"parallel steps are " + quoteAll(g.Steps)}
		if g.AllMustSucceed {
			cl = append(cl, "all parallel steps must succeed")
		}
		if g.MaxCombinedDuration > 0 {
			cl = append(cl, "combined duration must be within "+q(formatDuration(g.MaxCombinedDuration)))
		}
		for i, c := range cl {
			line("  %s %s", keyword(i, "Given"), c)
		}
	}
	return b.String()
}

func keyword(i int, first string) string {
	if i == 0 {
		return first
	}
	return "And"
}

func means(m string) string {
	if m == "" {
		return ""
	}
	return " means " + strconv.Quote(m)
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

func contentSentence(r domain.ContentRule) string {
	f := "content " + strconv.Quote(r.Field) + " "
	switch r.Operator {
	case domain.OpNonEmpty:
		return f + "must not be empty"
	case domain.OpNumber:
		return f + "must be a number"
	case domain.OpBoolean:
		return f + "must be a boolean"
	case domain.OpGT:
		return f + "must be a number greater than " + r.Value
	case domain.OpGTE:
		return f + "must be a number greater than or equal to " + r.Value
	case domain.OpLT:
		return f + "must be a number less than " + r.Value
	case domain.OpLTE:
		return f + "must be a number less than or equal to " + r.Value
	case domain.OpOneOf:
		return f + "must be one of " + quoteAll(r.Values)
	case domain.OpMatches:
		return f + "must match regex " + strconv.Quote(r.Value)
	case domain.OpEquals:
		if r.Reference != nil {
			return f + "must equal " + r.Reference.Step + "." + r.Reference.Field
		}
		return f + "must equal " + strconv.Quote(r.Value)
	}
	return f + string(r.Operator)
}

// formatDuration writes d in the largest unit that divides it, else in
// microseconds with a fraction (every duration ParseDuration reads).
func formatDuration(d time.Duration) string {
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return fmt.Sprintf("%d.%03dus", d/time.Microsecond, d%time.Microsecond)
}
