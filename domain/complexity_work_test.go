package domain

import "testing"

// What a field costs the database is priced beside what it returns: a
// count of every match, a sort no index serves, rows skipped by an offset.
func TestDatabaseWorkPriced(t *testing.T) {
	t.Parallel()
	m := QueryCostModel
	conn := func(ints map[string]int, enums map[string]string, children ...CostField) []CostField {
		return []CostField{{Parent: "Query", Name: "threads", Ints: ints, Enums: enums, Children: set(children...)}}
	}
	count := leaf("ThreadConnection", "totalCount")
	for _, c := range []struct {
		name   string
		fields []CostField
		want   int
	}{
		{"count", conn(nil, nil, count), 2 + CountPoints},
		{"indexed sort", conn(nil, map[string]string{"orderBy": "STARTED_AT"}, count), 2 + CountPoints},
		{"sort by duration", conn(nil, map[string]string{"orderBy": "DURATION"}, count), 2 + CountPoints + SortPoints},
		{"offset 1", conn(map[string]int{"offset": 1}, nil, count), 2 + CountPoints + 1},
		{"offset 10,000", conn(map[string]int{"offset": 10000}, nil, count), 2 + CountPoints + 100},
		{"offset 10,001", conn(map[string]int{"offset": 10001}, nil, count), 2 + CountPoints + 101},
		{"negative offset", conn(map[string]int{"offset": -5}, nil, count), 2 + CountPoints},
		{"issue 25's alias", conn(map[string]int{"offset": 4000, "limit": 1}, map[string]string{"orderBy": "DURATION"}, count),
			2 + CountPoints + SortPoints + 40},
	} {
		if got := m.Price(set(c.fields...), nil); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// 330 aliases of the last one (issue 25) cost far above the limit: at
	// most 1000/92 of them fit.
	alias := conn(map[string]int{"offset": 4000, "limit": 1}, map[string]string{"orderBy": "DURATION"}, count)[0]
	var many []CostField
	for i := 0; i < 330; i++ {
		many = append(many, alias)
	}
	if got := m.Price(set(many...), nil); m.Check(got) == nil {
		t.Fatalf("330 aliases cost %d and pass", got)
	}
}

// By rows, an object or a list item costs one point whatever scalars it
// selects and a scalar nothing; lists still multiply and the work is
// still charged.
func TestPerRowPricing(t *testing.T) {
	t.Parallel()
	m := QueryCostModel
	m.PerRow = true
	history := CostField{Parent: "Query", Name: "stepHistory", List: true, Ints: map[string]int{"limit": 1000},
		Children: set(leaves("StepHistory", "attempt", "timestamp", "status", "context", "duration", "error")...)}
	threads := threadsField(map[string]int{"limit": 100}, leaves("Thread", "id", "status", "refs")...)
	threads.Children.Fields = append(threads.Children.Fields, leaf("ThreadConnection", "totalCount"))
	one := CostField{Parent: "Query", Name: "thread", Children: set(leaves("Thread", "id", "status")...)}
	for _, c := range []struct {
		name  string
		field CostField
		want  int
	}{
		{"a page of 1,000 attempts", history, 1000},
		{"100 threads and their count", threads, 1 + 100 + CountPoints},
		{"one thread", one, 1},
	} {
		if got := m.Price(set(c.field), nil); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// By fields, the same page of attempts costs 1 + 1000 × 6.
	if got := QueryCostModel.Price(set(history), nil); got != 6001 {
		t.Fatalf("by fields: %d", got)
	}
}
