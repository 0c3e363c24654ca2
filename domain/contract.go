package domain

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Step types a contract may declare. Only recorded as information for now: the
// type says who performs the step, not how it is validated.
const (
	StepTypeManaged     = "managed"
	StepTypeExternal    = "external"
	StepTypeHumanInLoop = "human_in_loop"
)

// Limits on one contract. They keep parsing and validation cheap for any input
// (the parser is fuzzed) and match the reference engine's 512-step bound.
const (
	MaxContractSourceBytes = 1 << 20
	MaxContractSteps       = 512
	MaxContractNameLen     = 128
	MaxStepNameLen         = 128
	MaxContextFieldsByStep = 256
	// MaxContractProblems caps the problem list: past it, further problems
	// only repeat the same mistakes (and YAML aliases could multiply them).
	MaxContractProblems = 200
	maxListItems        = 1024
	// MaxContractVersion fits the INTEGER column on both databases.
	MaxContractVersion = 1<<31 - 1
)

// Contract is a parsed, validated contract version. A Contract returned by
// ParseContract is internally consistent: every referenced step exists, every
// owner is a party and durations are positive.
type Contract struct {
	Name        string   `json:"name"`
	Version     int      `json:"version"`
	Description string   `json:"description,omitempty"`
	EntryPoints []string `json:"entry_points"`
	// Parties are the roles that may own steps. When the source lists no
	// parties they are derived from the step owners.
	Parties       []string       `json:"parties"`
	Steps         []ContractStep `json:"steps"`
	Transitions   []Transition   `json:"transitions"`
	TerminalSteps []string       `json:"terminal_steps"`
	// MaxDuration bounds a whole thread, from its start; 0 means unbounded.
	MaxDuration               time.Duration `json:"max_duration,omitempty"`
	AllowMultipleTerminals    bool          `json:"allow_multiple_terminals,omitempty"`
	MultipleTerminalsSeverity Severity      `json:"multiple_terminals_severity,omitempty"`

	// The fields below come from Gherkin contracts (YAML leaves them zero,
	// so stored YAML versions keep their meaning).

	// FreeOrder: the contract has no next-step rules, so steps may run in
	// any order their prerequisites allow (no invalid_transition). YAML
	// contracts are always ordered by their transitions.
	FreeOrder bool `json:"free_order,omitempty"`
	// EntryPointsDerived / TerminalStepsDerived: no step was declared an
	// entry point (terminal), so EntryPoints (TerminalSteps) were derived
	// from the graph: steps nothing leads to (that lead nowhere). Include
	// composition inherits only declared lists.
	EntryPointsDerived   bool `json:"entry_points_derived,omitempty"`
	TerminalStepsDerived bool `json:"terminal_steps_derived,omitempty"`
	// Groups are parallel groups (Group blocks).
	Groups []ContractGroup `json:"groups,omitempty"`
	// ThreadsLockToVersion records the Background clause "threads lock to
	// this version". Threads always keep the version they started with, so
	// it changes nothing at run time.
	ThreadsLockToVersion bool `json:"threads_lock_to_version,omitempty"`
}

// ContractStep is one step a contract documents.
type ContractStep struct {
	Name  string `json:"name"`
	Owner string `json:"owner,omitempty"` // a party; empty means any party may record it
	Type  string `json:"type"`            // managed | external | human_in_loop
	// Timeout bounds finishedAt - startedAt of one attempt; 0 means unbounded.
	Timeout     time.Duration `json:"timeout,omitempty"`
	Required    []string      `json:"required,omitempty"` // context keys that must be present
	Optional    []string      `json:"optional,omitempty"` // context keys that may be present
	Description string        `json:"description,omitempty"`

	// ContextMeanings explains declared context fields (Gherkin `means`).
	ContextMeanings map[string]string `json:"context_meanings,omitempty"`
	// DependsOn lists the steps that must have succeeded earlier in the
	// thread (any number of other steps may come between). It includes
	// FreshDependsOn and the steps content references and semantic context
	// read.
	DependsOn []string `json:"depends_on,omitempty"`
	// FreshDependsOn lists the prerequisites that must succeed again before
	// each invocation of the step ("must succeed before each invocation").
	FreshDependsOn []string `json:"fresh_depends_on,omitempty"`
	// ContentRules judge the values of the submitted context.
	ContentRules []ContentRule `json:"content_rules,omitempty"`
	// SemanticRules are yes/no questions a classifier answers about a field.
	SemanticRules []SemanticRule `json:"semantic_rules,omitempty"`
}

// Transition lists the steps that may follow From, and From's retry policy.
//
// Retry policy: CanRetry false forbids retrying From at all. CanRetry true with
// MaxRetries 0 allows unlimited retries; MaxRetries > 0 caps them. The YAML
// parser sets CanRetry true unless the source says `can_retry: false`, because
// retrying a failed step is ordinary SDK behaviour.
type Transition struct {
	From       string   `json:"from"`
	To         []string `json:"to"`
	MaxRetries int      `json:"max_retries,omitempty"`
	CanRetry   bool     `json:"can_retry"`
	// Timeout bounds the wait for the next step: one of To must be recorded
	// within Timeout of From's success (step_timeout_exceeded, major, rule
	// transition_timeout); 0 means unbounded.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// ContractProblem is one reason a contract source was rejected. Field is a
// path into the source such as "steps[2].owner".
type ContractProblem struct {
	// Line is the 1-based source line the problem is on (Gherkin sources;
	// 0 when unknown, as for YAML).
	Line    int    `json:"line,omitempty"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Step returns the step called name.
func (c Contract) Step(name string) (ContractStep, bool) {
	for _, s := range c.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return ContractStep{}, false
}

// IsEntryPoint reports whether a thread may start with step name.
func (c Contract) IsEntryPoint(name string) bool { return contains(c.EntryPoints, name) }

// IsTerminal reports whether step name ends a thread when it succeeds.
func (c Contract) IsTerminal(name string) bool { return contains(c.TerminalSteps, name) }

// Transition returns the transition declared from step from.
func (c Contract) Transition(from string) (Transition, bool) {
	for _, t := range c.Transitions {
		if t.From == from {
			return t, true
		}
	}
	return Transition{}, false
}

// AllowedNext lists the steps that may follow a successful from, in source
// order. It is empty for steps without outgoing transitions.
func (c Contract) AllowedNext(from string) []string {
	var out []string
	for _, t := range c.Transitions {
		if t.From != from {
			continue
		}
		for _, to := range t.To {
			if !contains(out, to) {
				out = append(out, to)
			}
		}
	}
	return out
}

// Open reports whether the contract names no parties (none listed and no
// step has an owner): then any role, or none, may start or join its threads,
// and no owner check applies. Without this default no SDK could start a
// thread on such a contract, although it uploads.
func (c Contract) Open() bool { return len(c.Parties) == 0 }

// checkParty refuses a role that is not one of the contract's parties.
func (c Contract) checkParty(role string) error {
	if c.Open() {
		return nil
	}
	if role == "" {
		return Invalid("role", "role is required for contract threads (one of %s)", strings.Join(c.Parties, ", "))
	}
	if !contains(c.Parties, role) {
		return Invalid("role", "role %q is not a party of contract %s (parties: %s)", role, c.Ref(), strings.Join(c.Parties, ", "))
	}
	return nil
}

// Ref is "name:version", the form SDKs use to pin a contract version.
func (c Contract) Ref() string { return c.Name + ":" + strconv.Itoa(c.Version) }

// ParseContractRef splits "name", "name:N" or "name:vN" (the SDK docs'
// spelling); version 0 means latest.
func ParseContractRef(ref string) (name string, version int, err error) {
	name, v, hasVersion := strings.Cut(strings.TrimSpace(ref), ":")
	if CheckContractName(name) != nil {
		return "", 0, Invalid("contractName", "invalid contract name %q", name)
	}
	if !hasVersion {
		return name, 0, nil
	}
	digits := v
	if rest, ok := strings.CutPrefix(v, "v"); ok {
		digits = rest
	} else if rest, ok := strings.CutPrefix(v, "V"); ok {
		digits = rest
	}
	version, convErr := strconv.Atoi(digits)
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		convErr = strconv.ErrSyntax
	}
	if convErr != nil || version < 1 {
		return "", 0, Invalid("contractName", "invalid contract version %q: must be a positive integer", v)
	}
	return name, version, nil
}

var contractNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func validContractName(s string) bool {
	return len(s) <= MaxContractNameLen && contractNameRE.MatchString(s)
}

// anyContractNameRE accepts the names of both languages: YAML's, and
// Gherkin's letters, digits and underscores (which may lead).
var anyContractNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// CheckContractName refuses, as not found, a name no contract can have
// (NUL, spaces, '/', too long): the same answer on every database, before
// any query.
func CheckContractName(name string) error {
	if len(name) > MaxContractNameLen || !anyContractNameRE.MatchString(name) {
		return NotFound("contract " + strconv.Quote(name))
	}
	return nil
}

// ParseContract parses and validates a YAML contract. On failure it returns a
// *Error of KindInvalid, CodeInvalidContract whose Details["problems"] is a
// []ContractProblem listing every problem found, not just the first, so an
// author can fix a contract in one round trip.
func ParseContract(src []byte) (Contract, error) {
	p := &contractParser{}
	c := p.parse(src)
	if len(p.problems) > 0 {
		msg := fmt.Sprintf("contract is invalid: %s", p.problems[0].Message)
		if n := len(p.problems); n > 1 {
			msg = fmt.Sprintf("contract is invalid: %d problems, first: %s", n, p.problems[0].Message)
		}
		return Contract{}, E(KindInvalid, CodeInvalidContract, "%s", msg).
			WithField(p.problems[0].Field).WithDetail("problems", p.problems)
	}
	return c, nil
}

// ContractProblems extracts the problem list from a ParseContract error.
func ContractProblems(err error) []ContractProblem {
	if err == nil {
		return nil
	}
	ps, _ := AsError(err).Details["problems"].([]ContractProblem)
	return ps
}

type contractParser struct {
	problems []ContractProblem
	// stepsUnreadable: steps could not be read at all (not a list, too
	// many), already reported once; references to steps are then not
	// reported again as unknown, which would only follow from that.
	stepsUnreadable bool
}

// missingStep reports whether name is not among the readable steps.
func (p *contractParser) missingStep(steps map[string]bool, name string) bool {
	return !p.stepsUnreadable && !steps[name]
}

func (p *contractParser) full() bool { return len(p.problems) >= MaxContractProblems }

func (p *contractParser) add(field, msg string, args ...any) {
	if p.full() {
		return
	}
	if len(p.problems) == MaxContractProblems-1 {
		field, msg, args = "", "too many problems; fix these and upload again to see the rest", nil
	}
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	p.problems = append(p.problems, ContractProblem{Field: field, Message: msg})
}

func (p *contractParser) parse(src []byte) Contract {
	var c Contract
	if len(src) > MaxContractSourceBytes {
		p.add("", "contract source is %d bytes; the limit is %d", len(src), MaxContractSourceBytes)
		return c
	}
	// Stored sources are TEXT: PostgreSQL refuses NUL and invalid UTF-8.
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		p.add("", "contract source must be UTF-8 text without NUL characters")
		return c
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		p.add("", "not valid YAML: %s", err.Error())
		return c
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) && !emptyDocument(&extra) {
		p.add("", "a contract must be a single YAML document (remove the second '---')")
		return c
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.add("", "contract is empty")
		return c
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		p.add("", "contract must be a YAML mapping of keys such as contract_name, version and steps")
		return c
	}

	var (
		stepsNode, transitionsNode, validationNode *yaml.Node
		maxDurationTop                             string
		partiesGiven                               bool
	)
	p.fields(root, "", func(key string, v *yaml.Node) bool {
		switch key {
		case "contract_name":
			c.Name = p.str(v, key)
		case "version":
			c.Version = p.int(v, key)
			switch {
			case c.Version < 1 && deref(v).Tag == "!!int":
				p.add(key, "version must be an integer of at least 1")
			case c.Version > MaxContractVersion:
				p.add(key, "version must be at most %d", MaxContractVersion)
			}
		case "description":
			c.Description = p.str(v, key)
		case "entry_points":
			c.EntryPoints = p.strList(v, key, false)
		case "parties":
			partiesGiven = true
			c.Parties = p.strList(v, key, false)
		case "steps":
			stepsNode = v
		case "transitions":
			transitionsNode = v
		case "terminal_steps":
			c.TerminalSteps = p.strList(v, key, false)
		case "max_duration":
			maxDurationTop = p.str(v, key)
			c.MaxDuration = p.duration(v, key)
		case "validation":
			validationNode = v
		default:
			return false
		}
		return true
	})

	if c.Name == "" {
		p.add("contract_name", "contract_name is required")
	} else if !validContractName(c.Name) {
		p.add("contract_name", "contract_name %q must start with a letter or digit, use only letters, digits, '_', '.' and '-', and be at most %d characters", c.Name, MaxContractNameLen)
	}
	if _, ok := mapValue(root, "version"); !ok {
		p.add("version", "version is required (an integer of at least 1)")
	}

	if validationNode != nil {
		p.fields(validationNode, "validation", func(key string, v *yaml.Node) bool {
			field := "validation." + key
			switch key {
			case "max_duration":
				if maxDurationTop != "" {
					p.add(field, "max_duration is set both at the top level and under validation; set it once")
				}
				c.MaxDuration = p.duration(v, field)
			case "allow_multiple_terminals":
				c.AllowMultipleTerminals = p.bool(v, field)
			case "multiple_terminals_severity":
				s := p.str(v, field)
				sev, err := ParseSeverity(s)
				if err != nil && p.isScalar(v) {
					p.add(field, "unknown severity %q: must be one of critical, major, minor, warning, info", s)
				}
				c.MultipleTerminalsSeverity = sev
			default:
				return false
			}
			return true
		})
	}
	if c.MultipleTerminalsSeverity == "" {
		c.MultipleTerminalsSeverity = SeverityMinor
	}

	c.Steps = p.steps(stepsNode)
	stepNames := map[string]bool{}
	for _, s := range c.Steps {
		stepNames[s.Name] = true
	}
	c.Transitions = p.transitions(transitionsNode, stepNames)

	// Parties: when listed, every owner must be one; otherwise derive them.
	partySet := map[string]bool{}
	for i, party := range c.Parties {
		field := fmt.Sprintf("parties[%d]", i)
		switch {
		case party == "":
			p.add(field, "party name must not be empty")
		case partySet[party]:
			p.add(field, "party %q is listed twice", party)
		}
		partySet[party] = true
	}
	if partiesGiven {
		for i, s := range c.Steps {
			if s.Owner != "" && !partySet[s.Owner] {
				p.add(fmt.Sprintf("steps[%d].owner", i), "owner %q of step %q is not one of the contract's parties (%s)", s.Owner, s.Name, strings.Join(c.Parties, ", "))
			}
		}
	} else {
		for _, s := range c.Steps {
			if s.Owner != "" && !partySet[s.Owner] {
				partySet[s.Owner] = true
				c.Parties = append(c.Parties, s.Owner)
			}
		}
	}

	if len(c.EntryPoints) == 0 {
		p.add("entry_points", "at least one entry point is required: the steps a thread may start with")
	}
	p.checkRefs("entry_points", "entry point", c.EntryPoints, stepNames)
	p.checkRefs("terminal_steps", "terminal step", c.TerminalSteps, stepNames)

	if c.EntryPoints == nil {
		c.EntryPoints = []string{}
	}
	if c.Parties == nil {
		c.Parties = []string{}
	}
	if c.TerminalSteps == nil {
		c.TerminalSteps = []string{}
	}
	if c.Transitions == nil {
		c.Transitions = []Transition{}
	}
	return c
}

func (p *contractParser) checkRefs(field, what string, names []string, steps map[string]bool) {
	seen := map[string]bool{}
	for i, n := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if p.missingStep(steps, n) {
			p.add(f, "%s %q is not a step defined in steps", what, n)
		}
		if seen[n] {
			p.add(f, "%s %q is listed twice", what, n)
		}
		seen[n] = true
	}
}

func (p *contractParser) steps(n *yaml.Node) []ContractStep {
	if n == nil {
		p.add("steps", "at least one step is required")
		return []ContractStep{}
	}
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		p.add("steps", "steps must be a list")
		p.stepsUnreadable = true
		return []ContractStep{}
	}
	if len(n.Content) == 0 {
		p.add("steps", "at least one step is required")
	}
	if len(n.Content) > MaxContractSteps {
		p.add("steps", "a contract may define at most %d steps, this one has %d", MaxContractSteps, len(n.Content))
		p.stepsUnreadable = true
		return []ContractStep{}
	}
	out := make([]ContractStep, 0, len(n.Content))
	seen := map[string]bool{}
	for i, item := range n.Content {
		if p.full() {
			break
		}
		path := fmt.Sprintf("steps[%d]", i)
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(path, "each step must be a mapping with at least an id")
			continue
		}
		s := ContractStep{Type: StepTypeManaged}
		var idSet bool
		p.fields(item, path, func(key string, v *yaml.Node) bool {
			field := path + "." + key
			switch key {
			case "id":
				idSet = true
				s.Name = p.str(v, field)
			case "name":
				if !idSet || s.Name == "" {
					s.Name = p.str(v, field)
				} else if other := p.str(v, field); other != s.Name {
					p.add(field, "step has both id %q and name %q; use one", s.Name, other)
				}
			case "owner":
				s.Owner = p.str(v, field)
			case "type":
				s.Type = p.str(v, field)
				switch s.Type {
				case StepTypeManaged, StepTypeExternal, StepTypeHumanInLoop:
				default:
					if p.isScalar(v) {
						p.add(field, "unknown step type %q: must be one of managed, external, human_in_loop", s.Type)
					}
				}
			case "timeout":
				s.Timeout = p.duration(v, field)
			case "description":
				s.Description = p.str(v, field)
			case "business_context":
				p.fields(v, field, func(k2 string, v2 *yaml.Node) bool {
					f2 := field + "." + k2
					switch k2 {
					case "required":
						s.Required = p.strList(v2, f2, true)
					case "optional":
						s.Optional = p.strList(v2, f2, true)
					default:
						return false
					}
					return true
				})
			default:
				return false
			}
			return true
		})
		switch {
		case s.Name == "":
			p.add(path+".id", "step id is required")
		case !validStepName(s.Name):
			p.add(path+".id", "step id %q must be at most %d characters, without control characters or surrounding spaces", s.Name, MaxStepNameLen)
		case seen[s.Name]:
			p.add(path+".id", "step %q is defined twice", s.Name)
		}
		seen[s.Name] = true
		if len(s.Required)+len(s.Optional) > MaxContextFieldsByStep {
			p.add(path+".business_context", "a step may document at most %d context fields", MaxContextFieldsByStep)
		}
		for _, r := range s.Required {
			if contains(s.Optional, r) {
				p.add(path+".business_context", "context field %q is both required and optional", r)
			}
		}
		out = append(out, s)
	}
	return out
}

func (p *contractParser) transitions(n *yaml.Node, steps map[string]bool) []Transition {
	if n == nil {
		return nil
	}
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		p.add("transitions", "transitions must be a list")
		return nil
	}
	if len(n.Content) > MaxContractSteps {
		// Each step has at most one transition entry, so more is never valid.
		p.add("transitions", "a contract may declare at most %d transitions, this one has %d", MaxContractSteps, len(n.Content))
		return nil
	}
	out := make([]Transition, 0, len(n.Content))
	fromSeen := map[string]bool{}
	for i, item := range n.Content {
		if p.full() {
			break
		}
		path := fmt.Sprintf("transitions[%d]", i)
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			p.add(path, "each transition must be a mapping with from and to")
			continue
		}
		t := Transition{CanRetry: true}
		var fromSet, toSet bool
		p.fields(item, path, func(key string, v *yaml.Node) bool {
			field := path + "." + key
			switch key {
			case "from":
				fromSet = true
				t.From = p.str(v, field)
			case "to":
				toSet = true
				t.To = p.strList(v, field, true)
			case "can_retry":
				t.CanRetry = p.bool(v, field)
			case "max_retries":
				t.MaxRetries = p.int(v, field)
				if t.MaxRetries < 0 {
					p.add(field, "max_retries must not be negative")
				}
			case "timeout":
				t.Timeout = p.duration(v, field)
			case "retry_leads_to":
				// Legacy v3 key: where a retry goes. Retries here always
				// re-run From, so only check it names a real step.
				if to := p.str(v, field); to != "" && p.missingStep(steps, to) {
					p.add(field, "retry_leads_to %q is not a step defined in steps", to)
				}
			default:
				return false
			}
			return true
		})
		if !fromSet || t.From == "" {
			p.add(path+".from", "from is required")
		} else {
			if p.missingStep(steps, t.From) {
				p.add(path+".from", "transition from %q: not a step defined in steps", t.From)
			}
			if fromSeen[t.From] {
				p.add(path+".from", "transitions from %q are declared twice; list every target in one to", t.From)
			}
			fromSeen[t.From] = true
		}
		if !toSet || len(t.To) == 0 {
			p.add(path+".to", "to is required: one step or a list of steps")
		}
		seenTo := map[string]bool{}
		for j, to := range t.To {
			f := fmt.Sprintf("%s.to[%d]", path, j)
			if p.missingStep(steps, to) {
				p.add(f, "transition to %q: not a step defined in steps", to)
			}
			if seenTo[to] {
				p.add(f, "%q is listed twice", to)
			}
			seenTo[to] = true
		}
		if t.To == nil {
			t.To = []string{}
		}
		if !t.CanRetry && t.MaxRetries > 0 {
			p.add(path+".max_retries", "max_retries is set but can_retry is false")
		}
		out = append(out, t)
	}
	return out
}

// fields walks a mapping, reporting duplicate keys, non-string keys and keys
// handle does not know (handle returns false for those).
func (p *contractParser) fields(n *yaml.Node, path string, handle func(key string, v *yaml.Node) bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.add(path, "must be a mapping")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content) && !p.full(); i += 2 {
		k := deref(n.Content[i])
		field := joinPath(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			p.add(path, "keys must be plain strings")
			continue
		}
		if seen[k.Value] {
			p.add(field, "key %q appears twice", k.Value)
			continue
		}
		seen[k.Value] = true
		if !handle(k.Value, n.Content[i+1]) {
			if hint := keyHints[field]; hint != "" {
				p.add(field, "unknown key %q: %s", k.Value, hint)
			} else {
				p.add(field, "unknown key %q", k.Value)
			}
		}
	}
}

// keyHints name the key meant for spellings other documents use.
var keyHints = map[string]string{
	"name": "the contract's name is contract_name",
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (p *contractParser) isScalar(n *yaml.Node) bool {
	n = deref(n)
	return n.Kind == yaml.ScalarNode && n.Tag != "!!null"
}

func (p *contractParser) str(n *yaml.Node, field string) string {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		p.add(field, "must be a string")
		return ""
	}
	if n.Tag == "!!null" {
		return ""
	}
	if strings.IndexByte(n.Value, 0) >= 0 {
		p.add(field, "must not contain NUL characters")
		return ""
	}
	return n.Value
}

func (p *contractParser) int(n *yaml.Node, field string) int {
	n = deref(n)
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		p.add(field, "must be an integer")
		return 0
	}
	return v
}

func (p *contractParser) bool(n *yaml.Node, field string) bool {
	n = deref(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		p.add(field, "must be true or false")
		return false
	}
	return v
}

// strList accepts a list of strings, or a single string when scalarOK.
func (p *contractParser) strList(n *yaml.Node, field string, scalarOK bool) []string {
	n = deref(n)
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil
		}
		if scalarOK {
			if v := p.str(n, field); v != "" {
				return []string{v}
			}
			return nil
		}
	case yaml.SequenceNode:
		if len(n.Content) > maxListItems {
			p.add(field, "a list may have at most %d items, this one has %d", maxListItems, len(n.Content))
			return nil
		}
		out := make([]string, 0, len(n.Content))
		for i, item := range n.Content {
			item = deref(item)
			f := fmt.Sprintf("%s[%d]", field, i)
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				p.add(f, "must be a string")
				continue
			}
			if item.Value == "" || strings.IndexByte(item.Value, 0) >= 0 {
				p.add(f, "must not be empty or contain NUL characters")
				continue
			}
			out = append(out, item.Value)
		}
		return out
	}
	p.add(field, "must be a list of strings")
	return nil
}

func (p *contractParser) duration(n *yaml.Node, field string) time.Duration {
	s := p.str(n, field)
	if s == "" {
		return 0
	}
	d, err := ParseContractDuration(s)
	if err != nil {
		p.add(field, "%s", err.Error())
	}
	return d
}

// ParseContractDuration accepts Go durations ("90s", "5m", "1h30m") and whole
// days ("2d"). Durations must be positive.
func ParseContractDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > 3650 {
			return 0, fmt.Errorf("invalid duration %q: days must be a whole number from 1 to 3650", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: use a number and a unit such as 30s, 5m, 2h or 1d", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("invalid duration %q: must be positive", s)
	}
	return d, nil
}

func validStepName(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > MaxStepNameLen || !utf8.ValidString(s) {
		return false
	}
	if strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// deref follows YAML aliases (yaml.v3 already bounds alias expansion).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 32; i++ {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{}
	}
	return n
}

// emptyDocument is a document with nothing in it, as a trailing "---" makes.
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "")
}

func mapValue(n *yaml.Node, key string) (*yaml.Node, bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], true
		}
	}
	return nil, false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sortedKeys returns m's keys in order, for deterministic messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
