package domain

// A direct RFC 8785 (JCS) writer for the JSON objects a step record embeds
// (context, metadata, sub-step payloads). It writes exactly the bytes
// github.com/gowebpki/jcs's Transform writes, for the inputs it is sure of:
// anything it does not handle itself (an error of any kind, a duplicate
// name, a lone surrogate, invalid UTF-8, a number that does not parse,
// nesting deeper than canonMaxDepth) makes it give up, and the object goes
// through jcs.Transform, which decides it (canonWriter.object). Numbers are
// formatted by jcs.NumberToJSON, as Transform formats them.

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// canonMaxDepth bounds the nesting the direct writer handles (deeper goes to
// jcs.Transform): it keeps the writer's recursion, and the copying its
// reordering of members does per level, small.
const canonMaxDepth = 32

type canonWriter struct {
	in    []byte
	i     int
	out   []byte
	names []byte        // decoded member names of the objects being written
	mems  []canonMember // members of the objects being written
	tmp   []byte        // scratch for reordering an object's members
	depth int
	// checked: the second pass of Canonical (canonWriter.object).
	checked bool
}

// canonMember is one written member: its decoded name in names, and its
// canonical text `"name":value` in out.
type canonMember struct {
	nameStart, nameEnd int
	start, end         int
}

// canonWriters keeps writers' scratch buffers between records.
var canonWriters = sync.Pool{New: func() any { return new(canonWriter) }}

func getCanonWriter() *canonWriter { return canonWriters.Get().(*canonWriter) }

// putCanonWriter returns w to the pool without what it wrote or read, and
// without scratch grown past 64 KiB by an unusual object.
func putCanonWriter(w *canonWriter) {
	const keep = 64 << 10
	if cap(w.names) > keep || cap(w.tmp) > keep || cap(w.mems) > keep/32 {
		return
	}
	*w = canonWriter{names: w.names[:0], mems: w.mems[:0], tmp: w.tmp[:0]}
	canonWriters.Put(w)
}

// errCanonGiveUp: the direct pass met an object it is not sure of.
var errCanonGiveUp = errors.New("domain: canonical JSON needs the checked pass")

// object appends the RFC 8785 canonical form of raw, an embedded object of
// the record, to out.
//
// Unchecked (the first pass), raw is the text as given: empty or null is
// {}, as jsonObject has it; an object the direct writer parses whole and is
// sure of is written; anything else is errCanonGiveUp. A strict parse that
// succeeds is valid JSON, so jsonObject would have accepted it.
//
// Checked, raw has passed jsonObject: what the direct writer is not sure of
// goes to jcs.Transform. depth is how deep the object sits in the record (1
// for context and metadata, 3 for a sub-step payload): Transform's nesting
// limit counts from the record's root, so the object is given to it wrapped
// in that many arrays, and it fails or succeeds exactly as it did on the
// whole record. (json.Marshal had put the object into the record compacted,
// with <, >, &, U+2028 and U+2029 escaped: the same value to Transform, with
// the same errors, met in the same order.)
func (w *canonWriter) object(out, raw []byte, depth int) ([]byte, error) {
	s := raw
	if !w.checked {
		s = bytes.TrimSpace(raw)
		if len(s) == 0 || string(s) == "null" {
			return append(out, "{}"...), nil
		}
	}
	if len(s) == 2 && s[0] == '{' && s[1] == '}' {
		return append(out, "{}"...), nil
	}
	w.in, w.i, w.out, w.depth = s, 0, out, 0
	w.names, w.mems = w.names[:0], w.mems[:0] // what a parse that gave up left
	if len(s) > 0 && s[0] == '{' && w.objectValue() && w.skipSpace() && w.i == len(s) {
		return w.out, nil
	}
	if !w.checked {
		return nil, errCanonGiveUp
	}
	wrapped := make([]byte, 0, len(s)+2*depth)
	for range depth {
		wrapped = append(wrapped, '[')
	}
	wrapped = append(wrapped, s...)
	for range depth {
		wrapped = append(wrapped, ']')
	}
	c, err := jcs.Transform(wrapped)
	if err != nil {
		return nil, err
	}
	return append(out, c[depth:len(c)-depth]...), nil
}

// skipSpace skips JSON whitespace; it is always true (for chaining).
func (w *canonWriter) skipSpace() bool {
	for w.i < len(w.in) {
		switch w.in[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return true
		}
	}
	return true
}

func (w *canonWriter) value() bool {
	w.skipSpace()
	if w.i >= len(w.in) {
		return false
	}
	switch c := w.in[w.i]; {
	case c == '{':
		return w.objectValue()
	case c == '[':
		return w.array()
	case c == '"':
		return w.stringValue()
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return w.number()
	}
	return false
}

func (w *canonWriter) literal(lit string) bool {
	if len(w.in)-w.i < len(lit) || string(w.in[w.i:w.i+len(lit)]) != lit {
		return false
	}
	w.i += len(lit)
	w.out = append(w.out, lit...)
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number writes a number the way Transform does (strconv.ParseFloat, then
// jcs.NumberToJSON); an integer of at most 15 digits, exact as a double and
// below 1e21, is its own canonical form (but "-0" is "0").
func (w *canonWriter) number() bool {
	in, i := w.in, w.i
	start := i
	if in[i] == '-' {
		i++
	}
	digits := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && '1' <= in[i] && in[i] <= '9':
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	default:
		return false
	}
	integer := i-digits <= 15
	if i < len(in) && in[i] == '.' {
		integer = false
		i++
		if i >= len(in) || !isDigit(in[i]) {
			return false
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		integer = false
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || !isDigit(in[i]) {
			return false
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	}
	w.i = i
	tok := in[start:i]
	if integer {
		if string(tok) == "-0" {
			w.out = append(w.out, '0')
		} else {
			w.out = append(w.out, tok...)
		}
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return false
	}
	w.out = append(w.out, s...)
	return true
}

// stringValue writes a string: one without escapes or non-ASCII bytes is
// its own canonical form; any other is decoded and re-escaped.
func (w *canonWriter) stringValue() bool {
	w.i++
	for j := w.i; j < len(w.in); j++ {
		c := w.in[j]
		if c == '"' {
			w.out = append(w.out, '"')
			w.out = append(w.out, w.in[w.i:j+1]...)
			w.i = j + 1
			return true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
	}
	mark := len(w.names)
	var ok bool
	if w.names, ok = w.decodeString(w.names); !ok {
		return false
	}
	w.out = appendJCSString(w.out, w.names[mark:])
	w.names = w.names[:mark]
	return true
}

// decodeString appends the decoded string at w.i (past its opening quote)
// to dst, as Transform decodes it, and moves past its closing quote.
func (w *canonWriter) decodeString(dst []byte) ([]byte, bool) {
	in, i := w.in, w.i
	for i < len(in) {
		c := in[i]
		switch {
		case c == '"':
			w.i = i + 1
			return dst, true
		case c < 0x20:
			return dst, false
		case c == '\\':
			if i+1 >= len(in) {
				return dst, false
			}
			e := in[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(in, i)
				if !ok {
					return dst, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r > 0xDBFF || i+6 > len(in) || in[i] != '\\' || in[i+1] != 'u' {
						return dst, false
					}
					r2, ok := hex4(in, i+2)
					if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
						return dst, false
					}
					i += 6
					r = utf16.DecodeRune(r, r2)
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, false
			}
		case c < 0x80:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size <= 1 {
				return dst, false
			}
			dst = append(dst, in[i:i+size]...)
			i += size
		}
	}
	return dst, false
}

func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

const lowerHex = "0123456789abcdef"

// appendJCSString appends s (decoded, valid UTF-8) as RFC 8785 writes a
// string: '"', '\\' and control characters escaped (\b \t \n \f \r short,
// others \u00xx), every other byte as it is.
func appendJCSString[S []byte | string](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units
// (RFC 8785's member order). That is their byte order except where they
// first differ in a character from U+E000–U+FFFF (lead byte 0xEE or 0xEF)
// against one above U+FFFF (lead byte 0xF0–0xF4): in UTF-16 the latter is a
// surrogate pair (0xD800…) and sorts first. A differing byte of 0xEE or
// more is always a lead byte, as the strings agree up to it.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x >= 0xF0 && (y == 0xEE || y == 0xEF) {
			return -1
		}
		if y >= 0xF0 && (x == 0xEE || x == 0xEF) {
			return 1
		}
		if x < y {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

func (w *canonWriter) enter() bool {
	w.depth++
	w.i++
	return w.depth <= canonMaxDepth
}

func (w *canonWriter) array() bool {
	if !w.enter() {
		return false
	}
	w.out = append(w.out, '[')
	w.skipSpace()
	if w.i < len(w.in) && w.in[w.i] == ']' {
		w.i++
		w.out = append(w.out, ']')
		w.depth--
		return true
	}
	for {
		if !w.value() || !w.skipSpace() || w.i >= len(w.in) {
			return false
		}
		switch w.in[w.i] {
		case ',':
			w.i++
			w.out = append(w.out, ',')
		case ']':
			w.i++
			w.out = append(w.out, ']')
			w.depth--
			return true
		default:
			return false
		}
	}
}

func (w *canonWriter) name(m canonMember) []byte { return w.names[m.nameStart:m.nameEnd] }

func (w *canonWriter) objectValue() bool {
	if !w.enter() {
		return false
	}
	objStart := len(w.out)
	w.out = append(w.out, '{')
	w.skipSpace()
	if w.i < len(w.in) && w.in[w.i] == '}' {
		w.i++
		w.out = append(w.out, '}')
		w.depth--
		return true
	}
	memMark, nameMark := len(w.mems), len(w.names)
	sorted := true
	for {
		w.skipSpace()
		if w.i >= len(w.in) || w.in[w.i] != '"' {
			return false
		}
		w.i++
		m := canonMember{nameStart: len(w.names), start: len(w.out)}
		var ok bool
		if w.names, ok = w.decodeString(w.names); !ok {
			return false
		}
		m.nameEnd = len(w.names)
		w.out = appendJCSString(w.out, w.names[m.nameStart:m.nameEnd])
		w.skipSpace()
		if w.i >= len(w.in) || w.in[w.i] != ':' {
			return false
		}
		w.i++
		w.out = append(w.out, ':')
		if !w.value() {
			return false
		}
		m.end = len(w.out)
		if len(w.mems) > memMark {
			switch c := compareUTF16(w.name(w.mems[len(w.mems)-1]), w.name(m)); {
			case c == 0:
				return false // a duplicate name: Transform's error
			case c > 0:
				sorted = false
			}
		}
		w.mems = append(w.mems, m)
		w.skipSpace()
		if w.i >= len(w.in) {
			return false
		}
		if w.in[w.i] == ',' {
			w.i++
			w.out = append(w.out, ',')
			continue
		}
		if w.in[w.i] != '}' {
			return false
		}
		w.i++
		break
	}
	if !sorted {
		ms := w.mems[memMark:]
		slices.SortFunc(ms, func(a, b canonMember) int { return compareUTF16(w.name(a), w.name(b)) })
		for k := 1; k < len(ms); k++ {
			if compareUTF16(w.name(ms[k-1]), w.name(ms[k])) == 0 {
				return false
			}
		}
		body := objStart + 1
		w.tmp = append(w.tmp[:0], w.out[body:]...)
		w.out = w.out[:body]
		for k, m := range ms {
			if k > 0 {
				w.out = append(w.out, ',')
			}
			w.out = append(w.out, w.tmp[m.start-body:m.end-body]...)
		}
	}
	w.out = append(w.out, '}')
	w.mems, w.names = w.mems[:memMark], w.names[:nameMark]
	w.depth--
	return true
}
