package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// ContractFormat is the language a contract version was written in.
type ContractFormat string

const (
	ContractFormatYAML    ContractFormat = "yaml"
	ContractFormatGherkin ContractFormat = "gherkin"
)

var utf8BOM = []byte("\ufeff")

// DetectContractFormat reads the first line that is neither blank nor a
// '#' comment (after a UTF-8 BOM): "Feature:" starts a Gherkin contract,
// anything else is YAML.
func DetectContractFormat(src []byte) ContractFormat {
	rest := bytes.TrimPrefix(src, utf8BOM)
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if bytes.HasPrefix(line, []byte("Feature:")) {
			return ContractFormatGherkin
		}
		return ContractFormatYAML
	}
	return ContractFormatYAML
}

// InvalidContract is the error of a refused contract source: 400
// invalid_contract, its message the first problem, every problem in
// Details["problems"].
func InvalidContract(problems []ContractProblem) *Error {
	first := problems[0]
	msg := fmt.Sprintf("contract is invalid: %s", first.Message)
	if n := len(problems); n > 1 {
		msg = fmt.Sprintf("contract is invalid: %d problems, first: %s", n, first.Message)
	}
	if first.Line > 0 {
		msg += " (line " + strconv.Itoa(first.Line) + ")"
	}
	return E(KindInvalid, CodeInvalidContract, "%s", msg).WithField(first.Field).WithDetail("problems", problems)
}

// ReferenceText is the problem as the Threadify engine's preview words it
// in its "errors" list: "source: Failed to parse Gherkin contract: line N:
// <message>" for a source problem, "<field>: <message>" for the others.
func (p ContractProblem) ReferenceText() string {
	if p.Field == "source" && p.Line > 0 {
		return "source: Failed to parse Gherkin contract: line " + strconv.Itoa(p.Line) + ": " + p.Message
	}
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// ContentHash is the hex SHA-256 of c's compiled content: the contract
// without its name, version and description. Two sources that differ only
// in formatting, comments, those metadata or the order of prerequisite
// sentences hash the same; rule order and wording that reaches the
// compiled contract (step descriptions, context meanings) count.
func (c Contract) ContentHash() string {
	c.Name, c.Version, c.Description = "", 0, ""
	c.EntryPoints, c.Parties = nonNilStrings(c.EntryPoints), nonNilStrings(c.Parties)
	c.TerminalSteps = nonNilStrings(c.TerminalSteps)
	if c.Transitions == nil {
		c.Transitions = []Transition{}
	}
	b, err := json.Marshal(c)
	if err != nil { // only plain data: cannot happen
		panic("domain: encode contract content: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
