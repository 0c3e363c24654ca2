package domain

import (
	"regexp"
	"strings"
)

// Failure message classes: free-form threads have no contract rule to group
// their failures by, so the Problems view groups them by what their first
// failure said with the parts that vary from one thread to the next (ids,
// numbers, quoted values) replaced, e.g. "timeout after 1200 ms calling
// psp-7" and "timeout after 950 ms calling psp-2" are one class.
var (
	classUUID   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	classHex    = regexp.MustCompile(`(?i)\b(0x)?[0-9a-f]*[0-9][0-9a-f]*\b`)
	classQuoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	classSpace  = regexp.MustCompile(`\s+`)
)

// MaxMessageClass bounds a class's length (runes).
const MaxMessageClass = 120

// MessageClass returns the class of a failure message.
func MessageClass(msg string) string {
	s := classUUID.ReplaceAllString(msg, "<id>")
	s = classQuoted.ReplaceAllString(s, `"…"`)
	s = classHex.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "0123456789") {
			return "<n>"
		}
		return m
	})
	s = strings.TrimSpace(classSpace.ReplaceAllString(s, " "))
	if r := []rune(s); len(r) > MaxMessageClass {
		s = string(r[:MaxMessageClass-1]) + "…"
	}
	return s
}
