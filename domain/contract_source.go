package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
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

// contractContent is what the content hash covers (empty and absent lists
// encode alike): everything that changes
// how threads are judged, and nothing else (not the name, version or
// description, nor comments, spacing or the source language).
type contractContent struct {
	EntryPoints               []string        `json:"entryPoints,omitempty"`
	Parties                   []string        `json:"parties,omitempty"`
	Steps                     []ContractStep  `json:"steps,omitempty"`
	Transitions               []Transition    `json:"transitions,omitempty"`
	TerminalSteps             []string        `json:"terminalSteps,omitempty"`
	Groups                    []ContractGroup `json:"groups,omitempty"`
	MaxDuration               time.Duration   `json:"maxDuration,omitempty"`
	AllowMultipleTerminals    bool            `json:"allowMultipleTerminals,omitempty"`
	MultipleTerminalsSeverity Severity        `json:"multipleTerminalsSeverity,omitempty"`
	FreeOrder                 bool            `json:"freeOrder,omitempty"`
	ThreadsLockToVersion      bool            `json:"threadsLockToVersion,omitempty"`
}

// ContentHash is the hex SHA-256 of c's compiled content. Two sources that
// differ only in formatting, comments, metadata (Feature name, Version,
// Description) or language (Gherkin or YAML) hash the same; rule order and
// wording that reaches the compiled contract (step descriptions, context
// meanings) count.
func (c Contract) ContentHash() string {
	b, err := json.Marshal(contractContent{
		EntryPoints: c.EntryPoints, Parties: c.Parties, Steps: c.Steps, Transitions: c.Transitions,
		TerminalSteps: c.TerminalSteps, Groups: c.Groups, MaxDuration: c.MaxDuration,
		AllowMultipleTerminals: c.AllowMultipleTerminals, MultipleTerminalsSeverity: c.MultipleTerminalsSeverity,
		FreeOrder: c.FreeOrder, ThreadsLockToVersion: c.ThreadsLockToVersion,
	})
	if err != nil { // only plain data: cannot happen
		panic("domain: encode contract content: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
