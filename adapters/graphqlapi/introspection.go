package graphqlapi

import (
	"maps"

	"github.com/graph-gophers/graphql-go/introspection"

	"github.com/threadengine/engine/domain"
)

// introspectionModel prices introspection by what it returns: its lists are
// sized by this schema's own counts (every type; per type its fields, input
// fields, enum values, interfaces and possible types; per field its
// arguments; every directive and its arguments), as averages rounded up, so
// that a whole-schema query such as the explorer's is charged about the
// values it returns, and fifty aliased copies fifty times that.
func introspectionModel(base domain.CostModel, s *introspection.Schema) domain.CostModel {
	m := base
	m.Lists = maps.Clone(base.Lists)
	all := struct{ fields, args, inputs, enums, ifaces, possible int }{}
	types := s.Types()
	for _, t := range types {
		if f := t.Fields(&struct{ IncludeDeprecated bool }{true}); f != nil {
			all.fields += len(*f)
			for _, fl := range *f {
				all.args += len(fl.Args(&struct{ IncludeDeprecated bool }{true}))
			}
		}
		if f := t.InputFields(&struct{ IncludeDeprecated bool }{true}); f != nil {
			all.inputs += len(*f)
		}
		if e := t.EnumValues(&struct{ IncludeDeprecated bool }{true}); e != nil {
			all.enums += len(*e)
		}
		if i := t.Interfaces(); i != nil {
			all.ifaces += len(*i)
		}
		if p := t.PossibleTypes(); p != nil {
			all.possible += len(*p)
		}
	}
	dirArgs := 0
	dirs := s.Directives()
	for _, d := range dirs {
		dirArgs += len(d.Args(&struct{ IncludeDeprecated bool }{true}))
	}
	avg := func(n, of int) domain.ListSizing {
		size := 1
		if of > 0 && n > of {
			size = (n + of - 1) / of
		}
		return domain.ListSizing{Size: domain.PageSize{Default: size, Max: size}}
	}
	m.Lists[domain.FieldKey{Type: "__Schema", Field: "types"}] = avg(len(types), 1)
	m.Lists[domain.FieldKey{Type: "__Schema", Field: "directives"}] = avg(len(dirs), 1)
	m.Lists[domain.FieldKey{Type: "__Type", Field: "fields"}] = avg(all.fields, len(types))
	m.Lists[domain.FieldKey{Type: "__Type", Field: "inputFields"}] = avg(all.inputs, len(types))
	m.Lists[domain.FieldKey{Type: "__Type", Field: "enumValues"}] = avg(all.enums, len(types))
	m.Lists[domain.FieldKey{Type: "__Type", Field: "interfaces"}] = avg(all.ifaces, len(types))
	m.Lists[domain.FieldKey{Type: "__Type", Field: "possibleTypes"}] = avg(all.possible, len(types))
	m.Lists[domain.FieldKey{Type: "__Field", Field: "args"}] = avg(all.args, max(1, all.fields))
	m.Lists[domain.FieldKey{Type: "__Directive", Field: "args"}] = avg(dirArgs, max(1, len(dirs)))
	return m.Compiled()
}
