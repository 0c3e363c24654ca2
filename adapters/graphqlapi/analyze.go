package graphqlapi

import (
	"encoding/json"
	"math"
	"sort"

	"github.com/graph-gophers/graphql-go/ast"

	"github.com/threadengine/engine/domain"
)

// schemaIndex is the part of the schema the analysis needs: for every object
// type its fields (result type, list-ness, argument types) and for every input
// object its fields' types.
type schemaIndex struct {
	query   string
	objects map[string]map[string]*fieldInfo
	inputs  map[string]map[string]string // input type → field → named type
}

type fieldInfo struct {
	typeName string // named result type
	list     bool
	args     map[string]string // argument → named type
}

func unwrap(t ast.Type) (name string, list bool) {
	for {
		switch x := t.(type) {
		case *ast.NonNull:
			t = x.OfType
		case *ast.List:
			list = true
			t = x.OfType
		case ast.NamedType:
			return x.TypeName(), list
		default:
			return "", list
		}
	}
}

func newSchemaIndex(s *ast.Schema) *schemaIndex {
	idx := &schemaIndex{query: "Query", objects: map[string]map[string]*fieldInfo{}, inputs: map[string]map[string]string{}}
	if q, ok := s.RootOperationTypes["query"]; ok {
		idx.query = q.TypeName()
	}
	for name, t := range s.Types {
		switch x := t.(type) {
		case *ast.ObjectTypeDefinition:
			fields := map[string]*fieldInfo{}
			for _, f := range x.Fields {
				tn, list := unwrap(f.Type)
				fi := &fieldInfo{typeName: tn, list: list, args: map[string]string{}}
				for _, a := range f.Arguments {
					an, _ := unwrap(a.Type)
					fi.args[a.Name.Name] = an
				}
				fields[f.Name] = fi
			}
			idx.objects[name] = fields
		case *ast.InputObject:
			fields := map[string]string{}
			for _, v := range x.Values {
				vn, _ := unwrap(v.Type)
				fields[v.Name.Name] = vn
			}
			idx.inputs[name] = fields
		}
	}
	return idx
}

// pickOperation returns the operation graph-gophers will run, or nil when
// the choice is ambiguous or unknown (execution then fails before any
// resolver runs, so nothing needs pricing).
func (d *document) pickOperation(name string) *operation {
	if name == "" {
		if len(d.ops) == 1 {
			return d.ops[0]
		}
		return nil
	}
	for _, op := range d.ops {
		if op.name == name {
			return op
		}
	}
	return nil
}

// walkFields visits every field of op, entering fragments (each at most once
// per path, so a cyclic fragment — which validation rejects — cannot loop).
func (d *document) walkFields(sel []*selection, parent string, idx *schemaIndex, onPath map[string]bool,
	fn func(s *selection, parent string, fi *fieldInfo)) {
	for _, s := range sel {
		switch s.kind {
		case selField:
			fi := idx.objects[parent][s.name]
			fn(s, parent, fi)
			if fi != nil && len(s.sel) > 0 {
				d.walkFields(s.sel, fi.typeName, idx, onPath, fn)
			}
		case selInline:
			d.walkFields(s.sel, parent, idx, onPath, fn)
		case selSpread:
			f := d.frags[s.name]
			if f == nil || onPath[s.name] {
				continue
			}
			onPath[s.name] = true
			d.walkFields(f.sel, parent, idx, onPath, fn)
			delete(onPath, s.name)
		}
	}
}

// relaxIDs rewrites variable declarations so ID and String are
// interchangeable: a variable declared String but only used where an ID is
// expected is re-declared ID, and the reverse. The SDKs send
// `query($threadId: String!){ thread(id: $threadId) … }`, which strict
// validation (graph-gophers, gqlparser) refuses although both types are
// serialised as strings. Other mismatches are left for validation to report.
// Replacements keep the document's length where they can so error locations
// stay right.
func relaxIDs(src string, doc *document, op *operation, idx *schemaIndex) string {
	if op == nil || len(op.vars) == 0 {
		return src
	}
	uses := map[string]map[string]bool{} // variable → expected named types
	var visit func(v value, typ string)
	visit = func(v value, typ string) {
		switch x := v.(type) {
		case varRef:
			if uses[string(x)] == nil {
				uses[string(x)] = map[string]bool{}
			}
			uses[string(x)][typ] = true
		case listVal:
			for _, e := range x {
				visit(e, typ)
			}
		case objVal:
			for _, a := range x {
				visit(a.val, idx.inputs[typ][a.name])
			}
		}
	}
	doc.walkFields(op.sel, idx.query, idx, map[string]bool{}, func(s *selection, _ string, fi *fieldInfo) {
		for _, a := range s.args {
			t := ""
			if fi != nil {
				t = fi.args[a.name]
			}
			visit(a.val, t)
		}
	})
	type edit struct {
		pos       int
		old, repl string
	}
	var edits []edit
	for _, v := range op.vars {
		n := v.typ.named()
		u := uses[v.name]
		if len(u) != 1 {
			continue
		}
		switch {
		case n.name == "String" && u["ID"]:
			edits = append(edits, edit{n.pos, "String", "ID    "})
		case n.name == "ID" && u["String"]:
			edits = append(edits, edit{n.pos, "ID", "String"})
		}
	}
	if len(edits) == 0 {
		return src
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].pos > edits[j].pos })
	out := src
	for _, e := range edits {
		if e.pos+len(e.old) > len(out) || out[e.pos:e.pos+len(e.old)] != e.old {
			continue
		}
		out = out[:e.pos] + e.repl + out[e.pos+len(e.old):]
	}
	return out
}

// costFields converts op into the domain's cost tree, inlining fragments and
// resolving integer arguments from literals, variables and variable defaults.
func costFields(doc *document, op *operation, idx *schemaIndex, vars map[string]any) []domain.CostField {
	defaults := map[string]value{}
	for _, v := range op.vars {
		if v.def != nil {
			defaults[v.name] = v.def
		}
	}
	c := &costConv{doc: doc, idx: idx, vars: vars, defaults: defaults, onPath: map[string]bool{}}
	return c.fields(op.sel, idx.query)
}

type costConv struct {
	doc      *document
	idx      *schemaIndex
	vars     map[string]any
	defaults map[string]value
	onPath   map[string]bool
}

func (c *costConv) fields(sel []*selection, parent string) []domain.CostField {
	var out []domain.CostField
	for _, s := range sel {
		switch s.kind {
		case selField:
			f := domain.CostField{Parent: parent, Name: s.name}
			child := ""
			if fi := c.idx.objects[parent][s.name]; fi != nil {
				f.List, child = fi.list, fi.typeName
			}
			for _, a := range s.args {
				c.ints(a.name, a.val, &f)
			}
			if len(s.sel) > 0 {
				f.Children = c.fields(s.sel, child)
			}
			out = append(out, f)
		case selInline:
			out = append(out, c.fields(s.sel, parent)...)
		case selSpread:
			fr := c.doc.frags[s.name]
			if fr == nil || c.onPath[s.name] {
				continue
			}
			c.onPath[s.name] = true
			out = append(out, c.fields(fr.sel, parent)...)
			delete(c.onPath, s.name)
		}
	}
	return out
}

// ints records the integer value of argument name (and of input-object
// fields, as "name.field") on f.
func (c *costConv) ints(name string, v value, f *domain.CostField) {
	switch x := v.(type) {
	case varRef:
		if given, ok := c.vars[string(x)]; ok {
			c.jsonInts(name, given, f)
			return
		}
		if d, ok := c.defaults[string(x)]; ok {
			c.ints(name, d, f)
		}
	case intVal:
		setInt(f, name, float64(x))
	case floatVal:
		setInt(f, name, float64(x))
	case objVal:
		for _, a := range x {
			c.ints(name+"."+a.name, a.val, f)
		}
	}
}

func (c *costConv) jsonInts(name string, v any, f *domain.CostField) {
	switch x := v.(type) {
	case float64:
		setInt(f, name, x)
	case json.Number:
		if n, err := x.Float64(); err == nil {
			setInt(f, name, n)
		}
	case int:
		setInt(f, name, float64(x))
	case int32:
		setInt(f, name, float64(x))
	case int64:
		setInt(f, name, float64(x))
	case map[string]any:
		for k, e := range x {
			c.jsonInts(name+"."+k, e, f)
		}
	}
}

func setInt(f *domain.CostField, name string, v float64) {
	if math.IsNaN(v) {
		return
	}
	if f.Ints == nil {
		f.Ints = map[string]int{}
	}
	switch {
	case v > math.MaxInt32:
		f.Ints[name] = math.MaxInt32
	case v < math.MinInt32:
		f.Ints[name] = math.MinInt32
	default:
		f.Ints[name] = int(v)
	}
}

// tooDeep finds the first field nested deeper than max (top-level fields are
// at depth 1; fragments add no depth), as graph-gophers' MaxDepth rule does.
// It runs before pricing so that a deep query is reported as too deep rather
// than as too expensive.
func (d *document) tooDeep(sel []*selection, depth, max int, onPath map[string]bool) (string, int) {
	for _, s := range sel {
		switch s.kind {
		case selField:
			if depth > max {
				return s.name, depth
			}
			if name, n := d.tooDeep(s.sel, depth+1, max, onPath); name != "" {
				return name, n
			}
		case selInline:
			if name, n := d.tooDeep(s.sel, depth, max, onPath); name != "" {
				return name, n
			}
		case selSpread:
			f := d.frags[s.name]
			if f == nil || onPath[s.name] {
				continue
			}
			onPath[s.name] = true
			name, n := d.tooDeep(f.sel, depth, max, onPath)
			delete(onPath, s.name)
			if name != "" {
				return name, n
			}
		}
	}
	return "", 0
}
