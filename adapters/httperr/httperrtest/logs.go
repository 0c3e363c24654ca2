// Package httperrtest records log records, so a transport's tests can count
// how often an error was logged (once) and check what it was logged with.
package httperrtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Logs is a slog.Handler keeping every record (with its logger's attrs).
type Logs struct {
	mu      *sync.Mutex
	records *[]Record
	attrs   []slog.Attr
}

// Record is one logged record: level, message and every attr as text.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// NewLogs returns an empty recorder.
func NewLogs() *Logs { return &Logs{mu: &sync.Mutex{}, records: &[]Record{}} }

// Logger is a logger writing into l.
func (l *Logs) Logger() *slog.Logger { return slog.New(l) }

// Enabled keeps every level, debug included.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps r.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Message: r.Message, Attrs: map[string]string{}}
	for _, a := range l.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	*l.records = append(*l.records, rec)
	l.mu.Unlock()
	return nil
}

// WithAttrs shares l's records.
func (l *Logs) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *l
	c.attrs = append(append([]slog.Attr(nil), l.attrs...), attrs...)
	return &c
}

// WithGroup is not used by the engine's loggers; records keep flat keys.
func (l *Logs) WithGroup(string) slog.Handler { return l }

// Records returns the records kept so far.
func (l *Logs) Records() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), *l.records...)
}

// Mentioning returns the records at level or above whose message or attrs
// contain s.
func (l *Logs) Mentioning(level slog.Level, s string) []Record {
	var out []Record
	for _, r := range l.Records() {
		if r.Level < level {
			continue
		}
		hit := strings.Contains(r.Message, s)
		for _, v := range r.Attrs {
			hit = hit || strings.Contains(v, s)
		}
		if hit {
			out = append(out, r)
		}
	}
	return out
}
