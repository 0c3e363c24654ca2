package contracts

import (
	"context"
	"strconv"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/domain/gherkin"
	"github.com/threadengine/engine/ports"
)

// Compiled is a contract source read in its language: the contract when
// Problems is empty.
type Compiled struct {
	Contract domain.Contract
	Format   domain.ContractFormat
	Problems []domain.ContractProblem
	Warnings []domain.ContractProblem
	nameLine int
	// stepLines are the Gherkin lines of each step's Rule (for warnings).
	stepLines map[string]int
}

// noteClassifier warns, on a valid contract with semantic rules, that no
// classifier is configured: such steps are refused (fail closed) until one
// is. With one configured there is nothing to say.
func (c *Compiled) noteClassifier(configured bool) {
	if configured || !c.Valid() {
		return
	}
	for _, s := range c.Contract.Steps {
		for _, r := range s.SemanticRules {
			c.Warnings = append(c.Warnings, domain.ContractProblem{Line: c.stepLines[s.Name], Field: "steps." + s.Name + ".semantic_rules",
				Message: "no semantic classifier is configured (contracts.classifier.url): step " + strconv.Quote(s.Name) +
					" is refused (classifier_unavailable) until one is, since the question about " + strconv.Quote(r.Field) + " cannot be judged"})
		}
	}
}

// Valid reports whether the source is a contract the engine accepts.
func (c Compiled) Valid() bool { return len(c.Problems) == 0 }

// compile reads src as Gherkin when its first statement is "Feature:",
// else as YAML; Gherkin Include lines are resolved against the published
// versions versions holds. The error is a lookup failure only.
func compile(ctx context.Context, src []byte, versions ports.ContractReader) (Compiled, error) {
	out := Compiled{Format: domain.DetectContractFormat(src)}
	if out.Format == domain.ContractFormatYAML {
		c, err := domain.ParseContract(src)
		switch {
		case domain.CodeOf(err) == domain.CodeInvalidContract:
			out.Problems = domain.ContractProblems(err)
		case err != nil:
			return Compiled{}, err
		}
		out.Contract = c
		return out, nil
	}
	res, err := gherkin.Compile(src, resolver(ctx, versions))
	if err != nil {
		return Compiled{}, err
	}
	out.Contract, out.Problems, out.Warnings, out.nameLine = res.Contract, res.Problems, res.Warnings, res.NameLine
	out.stepLines = res.StepLines
	return out, nil
}

// compileValid compiles src and refuses it (invalid_contract) when it has
// problems or, with name set, names another contract; doing says what is
// being done with name, for that message.
func compileValid(ctx context.Context, src []byte, versions ports.ContractReader, name, doing string) (Compiled, error) {
	cs, err := compile(ctx, src, versions)
	if err != nil {
		return Compiled{}, err
	}
	if !cs.Valid() {
		return Compiled{}, domain.InvalidContract(cs.Problems)
	}
	if name != "" && cs.Contract.Name != name {
		return Compiled{}, domain.InvalidContract([]domain.ContractProblem{{Line: cs.nameLine, Field: "contract_name",
			Message: "the source names contract " + strconv.Quote(cs.Contract.Name) + ", but " + strconv.Quote(name) + " is being " + doing}})
	}
	return cs, nil
}

// resolver finds Include targets among the published versions.
func resolver(ctx context.Context, versions ports.ContractReader) gherkin.Resolver {
	return func(name string, version int) (gherkin.Published, error) {
		c, err := versions.GetContract(ctx, name, version)
		if err == nil {
			return gherkin.Published{Contract: c, Found: true, Exists: true}, nil
		}
		if domain.KindOf(err) != domain.KindNotFound {
			return gherkin.Published{}, err
		}
		_, err = versions.GetContract(ctx, name, 0)
		switch {
		case err == nil:
			return gherkin.Published{Exists: true}, nil
		case domain.KindOf(err) == domain.KindNotFound:
			return gherkin.Published{}, nil
		}
		return gherkin.Published{}, err
	}
}
