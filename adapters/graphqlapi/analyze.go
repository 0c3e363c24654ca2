package graphqlapi

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/graph-gophers/graphql-go/ast"

	"github.com/threadengine/engine/domain"
)

// bind gives every field its cost node, with the model's rules bound.
func (idx *schemaIndex) bind(m domain.CostModel) {
	for typ, fields := range idx.objects {
		for name, fi := range fields {
			fi.cost = domain.CostField{Parent: typ, Name: name, List: fi.list}
			m.Bind(&fi.cost)
		}
	}
}

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
	cost     domain.CostField  // the field's cost node with its rules bound, copied per use
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
	// The introspection entry points are fields of the query type too.
	if q := idx.objects[idx.query]; q != nil {
		q["__schema"] = &fieldInfo{typeName: "__Schema", args: map[string]string{}}
		q["__type"] = &fieldInfo{typeName: "__Type", args: map[string]string{"name": "String"}}
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

// spreadCycle returns a fragment that spreads itself (directly or through
// others), or "". Validation refuses such a document; finding it first keeps
// every walk below finite and exact.
func (d *document) spreadCycle() string {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visitSel func(sel []*selection) string
	var visitFrag func(name string) string
	visitSel = func(sel []*selection) string {
		for _, s := range sel {
			var c string
			if s.kind == selSpread {
				c = visitFrag(s.name)
			} else {
				c = visitSel(s.sel)
			}
			if c != "" {
				return c
			}
		}
		return ""
	}
	visitFrag = func(name string) string {
		f := d.frags[name]
		if f == nil {
			return ""
		}
		switch state[name] {
		case visiting:
			return name
		case done:
			return ""
		}
		state[name] = visiting
		c := visitSel(f.sel)
		state[name] = done
		return c
	}
	for name := range d.frags {
		if c := visitFrag(name); c != "" {
			return c
		}
	}
	return ""
}

// walkFields visits every field of sel once per occurrence in the document
// (not per expansion): a fragment is entered once, however often it is
// spread, so the walk is linear in the document. Fragment fields are typed by
// the fragment's type condition.
func (d *document) walkFields(sel []*selection, parent string, idx *schemaIndex, seen map[string]bool,
	fn func(s *selection, parent string, fi *fieldInfo)) {
	for _, s := range sel {
		switch s.kind {
		case selField:
			fi := idx.objects[parent][s.name]
			fn(s, parent, fi)
			if fi != nil && len(s.sel) > 0 {
				d.walkFields(s.sel, fi.typeName, idx, seen, fn)
			}
		case selInline:
			d.walkFields(s.sel, typeOr(s.typeCond, parent), idx, seen, fn)
		case selSpread:
			f := d.frags[s.name]
			if f == nil || seen[s.name] {
				continue
			}
			seen[s.name] = true
			d.walkFields(f.sel, typeOr(f.typeCond, parent), idx, seen, fn)
		}
	}
}

func typeOr(cond, parent string) string {
	if cond != "" {
		return cond
	}
	return parent
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
	// One pass over the text: many edits must not copy it once each.
	sort.Slice(edits, func(i, j int) bool { return edits[i].pos < edits[j].pos })
	var b strings.Builder
	b.Grow(len(src) + 4*len(edits))
	last := 0
	for _, e := range edits {
		if e.pos < last || e.pos+len(e.old) > len(src) || src[e.pos:e.pos+len(e.old)] != e.old {
			continue
		}
		b.WriteString(src[last:e.pos])
		b.WriteString(e.repl)
		last = e.pos + len(e.old)
	}
	b.WriteString(src[last:])
	return b.String()
}

// costSet converts op into the domain's cost graph, resolving integer
// arguments from literals, variables and variable defaults. Each fragment is
// converted once and shared by its spreads, so the graph is no larger than
// the document. roots receives the operation's top-level fields with their
// selections (the fields that read threads are priced again once read).
func costSet(doc *document, op *operation, idx *schemaIndex, vars map[string]any) (*domain.CostSet, []rootField, *costConv) {
	defaults := map[string]value{}
	for _, v := range op.vars {
		if v.def != nil {
			defaults[v.name] = v.def
		}
	}
	c := &costConv{doc: doc, idx: idx, vars: vars, defaults: defaults, frags: map[string]*domain.CostSet{}}
	root := c.set(op.sel, idx.query)
	var roots []rootField
	seen := map[*domain.CostSet]bool{}
	var collect func(s *domain.CostSet, sel []*selection)
	collect = func(s *domain.CostSet, sel []*selection) {
		if seen[s] {
			return
		}
		seen[s] = true
		i, k := 0, 0
		for _, x := range sel {
			switch x.kind {
			case selField:
				roots = append(roots, rootField{f: &s.Fields[i], sel: x})
				i++
			case selInline:
				collect(s.Sets[k], x.sel)
				k++
			case selSpread:
				if fr := doc.frags[x.name]; fr != nil && k < len(s.Sets) && s.Sets[k] == c.frags[x.name] {
					collect(s.Sets[k], fr.sel)
					k++
				}
			}
		}
	}
	collect(root, op.sel)
	return root, roots, c
}

// rootField is a top-level field of the operation.
type rootField struct {
	f   *domain.CostField
	sel *selection
}

type costConv struct {
	doc      *document
	idx      *schemaIndex
	vars     map[string]any
	defaults map[string]value
	frags    map[string]*domain.CostSet // converted fragments; nil while being converted
}

func (c *costConv) set(sel []*selection, parent string) *domain.CostSet {
	n := 0
	for _, s := range sel {
		if s.kind == selField {
			n++
		}
	}
	out := &domain.CostSet{Fields: make([]domain.CostField, 0, n)}
	for _, s := range sel {
		switch s.kind {
		case selField:
			f := domain.CostField{Parent: parent, Name: s.name}
			child := ""
			if fi := c.idx.objects[parent][s.name]; fi != nil {
				f, child = fi.cost, fi.typeName
			}
			for _, a := range s.args {
				c.ints(a.name, a.val, &f)
				if c.given(a.val) {
					f.Given = append(f.Given, a.name)
				}
			}
			if len(s.sel) > 0 {
				f.Children = c.set(s.sel, child)
			}
			out.Fields = append(out.Fields, f)
		case selInline:
			out.Sets = append(out.Sets, c.set(s.sel, typeOr(s.typeCond, parent)))
		case selSpread:
			if fs := c.fragment(s.name); fs != nil {
				out.Sets = append(out.Sets, fs)
			}
		}
	}
	return out
}

func (c *costConv) fragment(name string) *domain.CostSet {
	if fs, ok := c.frags[name]; ok {
		return fs // nil while in progress: a cycle, refused before pricing
	}
	fr := c.doc.frags[name]
	if fr == nil {
		return nil
	}
	c.frags[name] = nil
	fs := c.set(fr.sel, fr.typeCond)
	fs.Shared = true
	c.frags[name] = fs
	return fs
}

// given reports whether v is a non-null value (variables resolved).
func (c *costConv) given(v value) bool {
	switch x := v.(type) {
	case nullVal:
		return false
	case varRef:
		if g, ok := c.vars[string(x)]; ok {
			return g != nil
		}
		d, ok := c.defaults[string(x)]
		return ok && c.given(d)
	}
	return v != nil
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
	case enumVal:
		setEnum(f, name, string(x))
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
	case string:
		setEnum(f, name, x) // a string variable is what an enum variable holds
	case map[string]any:
		for k, e := range x {
			c.jsonInts(name+"."+k, e, f)
		}
	}
}

// setEnum records an enum argument's value (and, harmlessly, a string's:
// the cost model reads only the enum arguments it names).
func setEnum(f *domain.CostField, name, v string) {
	if f.Enums == nil {
		f.Enums = map[string]string{}
	}
	f.Enums[name] = v
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
// than as too expensive. depths memoises each fragment's depth, so only
// branches that do go too deep are entered: the search is linear in the
// document.
func (d *document) tooDeep(sel []*selection, depth, max int, depths map[string]int) (string, int) {
	if depth-1+d.depthOf(sel, depths) <= max {
		return "", 0
	}
	for _, s := range sel {
		switch s.kind {
		case selField:
			if depth > max {
				return s.name, depth
			}
			if name, n := d.tooDeep(s.sel, depth+1, max, depths); name != "" {
				return name, n
			}
		case selInline:
			if name, n := d.tooDeep(s.sel, depth, max, depths); name != "" {
				return name, n
			}
		case selSpread:
			if f := d.frags[s.name]; f != nil {
				if name, n := d.tooDeep(f.sel, depth, max, depths); name != "" {
					return name, n
				}
			}
		}
	}
	return "", 0
}

// depthOf returns the nesting of sel's deepest field (a leaf is 1).
// Fragments must be acyclic (spreadCycle).
func (d *document) depthOf(sel []*selection, depths map[string]int) int {
	deepest := 0
	for _, s := range sel {
		n := 0
		switch s.kind {
		case selField:
			n = 1 + d.depthOf(s.sel, depths)
		case selInline:
			n = d.depthOf(s.sel, depths)
		case selSpread:
			if v, ok := depths[s.name]; ok {
				n = v
			} else if f := d.frags[s.name]; f != nil {
				depths[s.name] = 0
				n = d.depthOf(f.sel, depths)
				depths[s.name] = n
			}
		}
		deepest = max(deepest, n)
	}
	return deepest
}
