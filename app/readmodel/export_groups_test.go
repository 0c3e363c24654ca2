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
	var ids [][]string
	for _, g := range exportGroups(threads, 50) {
		var gi []string
		for _, t := range g {
			gi = append(gi, t.ID)
		}
		ids = append(ids, gi)
	}
	got := fmt.Sprint(ids)
	if want := "[[0 1] [2] [3] [4 5 6] [7]]"; got != want {
		// 10+20 ≤ 50 < 10+20+30; 30 alone as 30+100 > 50; 100 alone; 5+5+0
		// then 60 alone.
		t.Fatalf("groups %s, want %s", got, want)
	}
	if g := exportGroups(nil, 50); len(g) != 0 {
		t.Fatalf("no threads: %v", g)
	}
}
