package insights_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/threadengine/engine/app/insights"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// pmFake records the window the process map reads.
type pmFake struct {
	reads        int
	since, until time.Time
}

func (f *pmFake) ProcessMapRows(_ context.Context, _ string, _ int, since, until time.Time) ([]ports.ProcessMapRow, error) {
	f.reads++
	f.since, f.until = since, until
	return nil, nil
}

type pmContract struct{}

func (pmContract) GetContract(_ context.Context, name string, _ int) (domain.Contract, error) {
	return domain.Contract{Name: name, Version: 1}, nil
}

// TestProcessMapWindowLimit: the window limit (MaxProcessMapWindow) is on
// the window asked — "the last 400 days" is served — and
// widening ends more than ports.ProcessMapHourlyKept ago to whole UTC days
// reads less than a day more at each end; a longer window is refused with
// validation_failed and nothing is read.
func TestProcessMapWindowLimit(t *testing.T) {
	const day = 24 * time.Hour
	iso := func(t time.Time) string { return t.Format(time.RFC3339) }
	old := now.Add(-20 * day) // 12:30, widened to the next UTC day
	for _, c := range []struct {
		name     string
		from, to time.Time
		ok       bool
		since    time.Time
		until    time.Time
	}{
		{"400 days to now, its start widened to the day", now.Add(-400 * day), now, true,
			now.Add(-400 * day).Truncate(day), now.Truncate(time.Hour).Add(time.Hour)},
		{"400 whole days to today", now.Truncate(day).Add(-400 * day), now.Truncate(day), true,
			now.Truncate(day).Add(-400 * day), now.Truncate(day)},
		{"399 days 23 hours, both ends widened to 400 days", old.Add(-399 * day), old, true,
			old.Truncate(day).Add(-399 * day), old.Truncate(day).Add(day)},
		{"400 days from 23:00 to 12:30, widened to 401 days", old.Add(-400*day + 630*time.Minute), old.Add(-690 * time.Minute), true,
			old.Add(-400*day + 630*time.Minute).Truncate(day), old.Truncate(day).Add(day)},
		{"400 days and a minute", now.Add(-400*day - time.Minute), now, false, time.Time{}, time.Time{}},
		{"401 days", old.Add(-401 * day), old, false, time.Time{}, time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &pmFake{}
			m, err := insights.NewProcessMapHandler(f, pmContract{}, clock).Handle(as(human), "flow", 1, iso(c.from), iso(c.to))
			if !c.ok {
				var de *domain.Error
				if !errors.As(err, &de) || de.Code != domain.CodeValidationFailed || de.Field != "from" {
					t.Fatalf("err %v, want validation_failed on from", err)
				}
				if f.reads != 0 {
					t.Fatalf("read [%s, %s) (%s) although refused", f.since, f.until, f.until.Sub(f.since))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !f.since.Equal(c.since) || !f.until.Equal(c.until) || !m.Since.Equal(c.since) || !m.Until.Equal(c.until) {
				t.Fatalf("read [%s, %s), answered [%s, %s); want [%s, %s)", f.since, f.until, m.Since, m.Until, c.since, c.until)
			}
			if f.until.Sub(f.since) > insights.MaxProcessMapWindow+2*day {
				t.Fatalf("read %s, more than the limit and the widening", f.until.Sub(f.since))
			}
		})
	}
}
