package readmodel

import (
	"fmt"
	"testing"

	"github.com/threadengine/engine/ports"
)

// An export loads about ExportStepBudget steps at a time: groups keep the
// threads' order, stay within the budget, and a thread over it goes alone.
func TestExportGroupsStayWithinTheStepBudget(t *testing.T) {
	t.Parallel()
	var threads []ports.ThreadView
	for i, n := range []int{10, 20, 30, 100, 5, 5, 0, 60} {
		threads = append(threads, ports.ThreadView{ID: fmt.Sprint(i), StepCount: n})
	}
	got := groupIDs(exportGroups(threads, 50, nil, 0))
	if want := "[[0 1] [2] [3] [4 5 6] [7]]"; got != want {
		// 10+20 ≤ 50 < 10+20+30; 30 alone as 30+100 > 50; 100 alone; 5+5+0
		// then 60 alone.
		t.Fatalf("groups %s, want %s", got, want)
	}
	if g := exportGroups(nil, 50, nil, 0); len(g) != 0 {
		t.Fatalf("no threads: %v", g)
	}
}

func groupIDs(groups [][]ports.ThreadView) string {
	var ids [][]string
	for _, g := range groups {
		var gi []string
		for _, t := range g {
			gi = append(gi, t.ID)
		}
		ids = append(ids, gi)
	}
	return fmt.Sprint(ids)
}

// With a byte bound, groups also stay within it by the threads' stored
// bytes, and a thread over it goes alone (the stream names it instead of
// loading it).
func TestExportGroupsStayWithinTheByteBound(t *testing.T) {
	t.Parallel()
	var threads []ports.ThreadView
	sizes := map[string]int64{}
	for i, n := range []int64{40, 50, 20, 500, 90, 10, 0} {
		id := fmt.Sprint(i)
		threads = append(threads, ports.ThreadView{ID: id, StepCount: 1})
		sizes[id] = n
	}
	got := groupIDs(exportGroups(threads, 50, sizes, 100))
	// 40+50 ≤ 100 < 40+50+20; 20 then 500 over alone; 90+10+0.
	if want := "[[0 1] [2] [3] [4 5 6]]"; got != want {
		t.Fatalf("groups %s, want %s", got, want)
	}
}
