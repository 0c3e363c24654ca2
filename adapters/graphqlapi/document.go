package graphqlapi

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// graph-gophers keeps its query parser internal, so the cost analysis and the
// ID/String variable relaxation parse the document themselves. The parser
// covers the whole executable-document grammar (GraphQL spec, October 2021);
// a document it rejects is never executed, so the analysis cannot be
// bypassed by a construct graph-gophers accepts and this parser skips.

type document struct {
	ops   []*operation
	frags map[string]*fragment
}

type operation struct {
	kind string // query, mutation, subscription
	name string
	vars []*varDef
	sel  []*selection
}

type varDef struct {
	name string
	typ  *typeRef
	def  value // nil when absent
}

type typeRef struct {
	name    string // named type, when elem is nil
	elem    *typeRef
	nonNull bool
	pos     int // byte offset of the name in the source (named types only)
}

func (t *typeRef) named() *typeRef {
	for t.elem != nil {
		t = t.elem
	}
	return t
}

type selection struct {
	kind     selKind
	alias    string
	name     string // field name or fragment name
	args     []*argument
	typeCond string // inline fragments and fragment definitions
	sel      []*selection
}

type selKind uint8

const (
	selField selKind = iota
	selSpread
	selInline
)

type argument struct {
	name string
	val  value
}

type fragment struct {
	name     string
	typeCond string
	sel      []*selection
}

// value is a literal or a variable reference.
type value interface{}

type (
	varRef   string
	intVal   int64
	floatVal float64
	strVal   string
	boolVal  bool
	nullVal  struct{}
	enumVal  string
	listVal  []value
	objVal   []*argument
)

type syntaxError struct {
	msg       string
	line, col int
}

func (e *syntaxError) Error() string { return e.msg }

// Token kinds.
type tokKind uint8

const (
	tEOF tokKind = iota
	tPunct
	tName
	tInt
	tFloat
	tString
)

type token struct {
	kind tokKind
	text string // punctuator, name, number text, or decoded string
	pos  int
}

type parser struct {
	src   string
	i     int
	tok   token
	depth int
}

const maxNesting = 128

func parseDocument(src string) (doc *document, err error) {
	p := &parser{src: src}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*syntaxError)
			if !ok {
				panic(r)
			}
			doc, err = nil, se
		}
	}()
	p.next()
	doc = &document{frags: map[string]*fragment{}}
	if p.tok.kind == tEOF {
		p.fail("Unexpected <EOF>")
	}
	for p.tok.kind != tEOF {
		switch {
		case p.isPunct("{"):
			doc.ops = append(doc.ops, &operation{kind: "query", sel: p.selectionSet()})
		case p.tok.kind == tName && (p.tok.text == "query" || p.tok.text == "mutation" || p.tok.text == "subscription"):
			doc.ops = append(doc.ops, p.operation())
		case p.tok.kind == tName && p.tok.text == "fragment":
			f := p.fragmentDef()
			if _, dup := doc.frags[f.name]; dup {
				p.fail(fmt.Sprintf("There can be only one fragment named %q.", f.name))
			}
			doc.frags[f.name] = f
		default:
			p.unexpected()
		}
	}
	return doc, nil
}

func (p *parser) operation() *operation {
	op := &operation{kind: p.tok.text}
	p.next()
	if p.tok.kind == tName {
		op.name = p.tok.text
		p.next()
	}
	if p.isPunct("(") {
		p.next()
		for !p.isPunct(")") {
			p.expectPunct("$")
			v := &varDef{name: p.name()}
			p.expectPunct(":")
			v.typ = p.typeRef()
			if p.isPunct("=") {
				p.next()
				v.def = p.value(true)
			}
			p.directives(true)
			op.vars = append(op.vars, v)
		}
		p.next()
	}
	p.directives(false)
	op.sel = p.selectionSet()
	return op
}

func (p *parser) fragmentDef() *fragment {
	p.next()
	f := &fragment{}
	if p.tok.kind == tName && p.tok.text == "on" {
		p.unexpected()
	}
	f.name = p.name()
	if p.tok.kind != tName || p.tok.text != "on" {
		p.unexpected()
	}
	p.next()
	f.typeCond = p.name()
	p.directives(false)
	f.sel = p.selectionSet()
	return f
}

func (p *parser) typeRef() *typeRef {
	p.enter()
	defer p.leave()
	var t *typeRef
	if p.isPunct("[") {
		p.next()
		t = &typeRef{elem: p.typeRef()}
		p.expectPunct("]")
	} else {
		pos := p.tok.pos
		t = &typeRef{name: p.name(), pos: pos}
	}
	if p.isPunct("!") {
		p.next()
		t.nonNull = true
	}
	return t
}

func (p *parser) selectionSet() []*selection {
	p.enter()
	defer p.leave()
	p.expectPunct("{")
	var out []*selection
	for !p.isPunct("}") {
		if p.tok.kind == tEOF {
			p.unexpected()
		}
		out = append(out, p.selection())
	}
	if len(out) == 0 {
		p.unexpected()
	}
	p.next()
	return out
}

func (p *parser) selection() *selection {
	if p.isPunct("...") {
		p.next()
		if p.tok.kind == tName && p.tok.text != "on" {
			s := &selection{kind: selSpread, name: p.name()}
			p.directives(false)
			return s
		}
		s := &selection{kind: selInline}
		if p.tok.kind == tName && p.tok.text == "on" {
			p.next()
			s.typeCond = p.name()
		}
		p.directives(false)
		s.sel = p.selectionSet()
		return s
	}
	s := &selection{kind: selField, name: p.name()}
	if p.isPunct(":") {
		p.next()
		s.alias, s.name = s.name, p.name()
	}
	if p.isPunct("(") {
		s.args = p.arguments(false)
	}
	p.directives(false)
	if p.isPunct("{") {
		s.sel = p.selectionSet()
	}
	return s
}

func (p *parser) arguments(constant bool) []*argument {
	p.expectPunct("(")
	var out []*argument
	for !p.isPunct(")") {
		a := &argument{name: p.name()}
		p.expectPunct(":")
		a.val = p.value(constant)
		out = append(out, a)
	}
	if len(out) == 0 {
		p.unexpected()
	}
	p.next()
	return out
}

func (p *parser) directives(constant bool) {
	for p.isPunct("@") {
		p.next()
		p.name()
		if p.isPunct("(") {
			p.arguments(constant)
		}
	}
}

func (p *parser) value(constant bool) value {
	p.enter()
	defer p.leave()
	t := p.tok
	switch t.kind {
	case tPunct:
		switch t.text {
		case "$":
			if constant {
				p.unexpected()
			}
			p.next()
			return varRef(p.name())
		case "[":
			p.next()
			l := listVal{}
			for !p.isPunct("]") {
				if p.tok.kind == tEOF {
					p.unexpected()
				}
				l = append(l, p.value(constant))
			}
			p.next()
			return l
		case "{":
			p.next()
			o := objVal{}
			for !p.isPunct("}") {
				a := &argument{name: p.name()}
				p.expectPunct(":")
				a.val = p.value(constant)
				o = append(o, a)
			}
			p.next()
			return o
		}
	case tInt:
		p.next()
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return floatVal(0) // out of int64 range: not an Int either way
		}
		return intVal(n)
	case tFloat:
		p.next()
		f, _ := strconv.ParseFloat(t.text, 64)
		return floatVal(f)
	case tString:
		p.next()
		return strVal(t.text)
	case tName:
		p.next()
		switch t.text {
		case "true":
			return boolVal(true)
		case "false":
			return boolVal(false)
		case "null":
			return nullVal{}
		}
		return enumVal(t.text)
	}
	p.unexpected()
	return nil
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxNesting {
		p.fail(fmt.Sprintf("document nesting exceeds %d levels", maxNesting))
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) isPunct(s string) bool { return p.tok.kind == tPunct && p.tok.text == s }

func (p *parser) expectPunct(s string) {
	if !p.isPunct(s) {
		p.unexpected()
	}
	p.next()
}

func (p *parser) name() string {
	if p.tok.kind != tName {
		p.unexpected()
	}
	n := p.tok.text
	p.next()
	return n
}

func (p *parser) unexpected() {
	switch p.tok.kind {
	case tEOF:
		p.failAt(p.tok.pos, "Unexpected <EOF>")
	case tString:
		p.failAt(p.tok.pos, "Unexpected string")
	default:
		p.failAt(p.tok.pos, fmt.Sprintf("Unexpected %q", p.src[p.tok.pos:p.i]))
	}
}

func (p *parser) fail(msg string) { p.failAt(p.tok.pos, msg) }

func (p *parser) failAt(pos int, msg string) {
	line, col := 1, 1
	for _, r := range p.src[:min(pos, len(p.src))] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	panic(&syntaxError{msg: "syntax error: " + msg, line: line, col: col})
}

// next reads the following token into p.tok.
func (p *parser) next() {
	src := p.src
	for p.i < len(src) {
		c := src[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			p.i++
			continue
		case c == '#':
			for p.i < len(src) && src[p.i] != '\n' && src[p.i] != '\r' {
				p.i++
			}
			continue
		case strings.HasPrefix(src[p.i:], "\uFEFF"):
			p.i += len("\uFEFF")
			continue
		}
		break
	}
	start := p.i
	if p.i >= len(src) {
		p.tok = token{kind: tEOF, pos: start}
		return
	}
	c := src[p.i]
	switch {
	case strings.IndexByte("!$&()[]{}:=@|", c) >= 0:
		p.i++
		p.tok = token{kind: tPunct, text: src[start:p.i], pos: start}
	case c == '.':
		if !strings.HasPrefix(src[p.i:], "...") {
			p.i++
			p.failAt(start, `Unexpected "."`)
		}
		p.i += 3
		p.tok = token{kind: tPunct, text: "...", pos: start}
	case c == '_' || isLetter(c):
		for p.i < len(src) && (src[p.i] == '_' || isLetter(src[p.i]) || isDigit(src[p.i])) {
			p.i++
		}
		p.tok = token{kind: tName, text: src[start:p.i], pos: start}
	case c == '-' || isDigit(c):
		p.number(start)
	case c == '"':
		if strings.HasPrefix(src[p.i:], `"""`) {
			p.blockString(start)
		} else {
			p.string(start)
		}
	default:
		r, _ := utf8.DecodeRuneInString(src[p.i:])
		p.failAt(start, fmt.Sprintf("Unexpected character %q", r))
	}
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func (p *parser) number(start int) {
	src := p.src
	kind := tInt
	if src[p.i] == '-' {
		p.i++
	}
	digits := func() {
		if p.i >= len(src) || !isDigit(src[p.i]) {
			p.failAt(p.i, "Invalid number, expected digit")
		}
		for p.i < len(src) && isDigit(src[p.i]) {
			p.i++
		}
	}
	if p.i < len(src) && src[p.i] == '0' {
		p.i++
		if p.i < len(src) && isDigit(src[p.i]) {
			p.failAt(p.i, "Invalid number, unexpected digit after 0")
		}
	} else {
		digits()
	}
	if p.i < len(src) && src[p.i] == '.' {
		kind = tFloat
		p.i++
		digits()
	}
	if p.i < len(src) && (src[p.i] == 'e' || src[p.i] == 'E') {
		kind = tFloat
		p.i++
		if p.i < len(src) && (src[p.i] == '+' || src[p.i] == '-') {
			p.i++
		}
		digits()
	}
	if p.i < len(src) && (src[p.i] == '.' || src[p.i] == '_' || isLetter(src[p.i])) {
		p.failAt(p.i, "Invalid number")
	}
	p.tok = token{kind: kind, text: src[start:p.i], pos: start}
}

func (p *parser) string(start int) {
	src := p.src
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(src) || src[p.i] == '\n' || src[p.i] == '\r' {
			p.failAt(start, "Unterminated string")
		}
		c := src[p.i]
		if c == '"' {
			p.i++
			break
		}
		if c != '\\' {
			b.WriteByte(c)
			p.i++
			continue
		}
		if p.i+1 >= len(src) {
			p.failAt(start, "Unterminated string")
		}
		e := src[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if p.i+4 > len(src) {
				p.failAt(p.i, "Invalid Unicode escape sequence")
			}
			n, err := strconv.ParseUint(src[p.i:p.i+4], 16, 32)
			if err != nil {
				p.failAt(p.i, "Invalid Unicode escape sequence")
			}
			b.WriteRune(rune(n))
			p.i += 4
		default:
			p.failAt(p.i-2, fmt.Sprintf("Invalid character escape sequence: \\%c", e))
		}
	}
	p.tok = token{kind: tString, text: b.String(), pos: start}
}

func (p *parser) blockString(start int) {
	src := p.src
	p.i += 3
	var b strings.Builder
	for {
		if p.i >= len(src) {
			p.failAt(start, "Unterminated string")
		}
		if strings.HasPrefix(src[p.i:], `\"""`) {
			b.WriteString(`"""`)
			p.i += 4
			continue
		}
		if strings.HasPrefix(src[p.i:], `"""`) {
			p.i += 3
			break
		}
		b.WriteByte(src[p.i])
		p.i++
	}
	// Indentation is not stripped: block string values only matter to cost
	// analysis as "not an Int", and graph-gophers decodes them for execution.
	p.tok = token{kind: tString, text: b.String(), pos: start}
}
