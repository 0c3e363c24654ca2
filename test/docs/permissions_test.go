package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// permissionChecks lists the places in f where an adapter decides who may do
// what itself instead of calling a use case: authz.Require, a domain
// permission (domain.Perm…), a principal's Can or Require, or a comparison
// with a role, scope or principal kind constant.
func permissionChecks(fset *token.FileSet, f *ast.File) []string {
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what)
	}
	pkgSel := func(e ast.Expr) (pkg, name string) {
		if s, ok := e.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				return id.Name, s.Sel.Name
			}
		}
		return "", ""
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			switch pkg, name := pkgSel(n); {
			case (pkg == "authz" || pkg == "app") && name == "Require":
				report(n, pkg+".Require")
			case pkg == "domain" && strings.HasPrefix(name, "Perm") && name != "PermissionDenied":
				report(n, "domain."+name)
			}
		case *ast.CallExpr:
			if s, ok := n.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Can" || s.Sel.Name == "Require") {
				if pkg, _ := pkgSel(s); pkg != "authz" && pkg != "app" { // authz.Require is reported above
					report(n, "a ."+s.Sel.Name+"(…) check")
				}
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			for _, side := range []ast.Expr{n.X, n.Y} {
				if pkg, name := pkgSel(side); pkg == "domain" &&
					(strings.HasPrefix(name, "Role") || strings.HasPrefix(name, "Scope") || strings.HasPrefix(name, "Principal")) {
					report(n, "a comparison with domain."+name)
				}
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if pkg, name := pkgSel(e); pkg == "domain" && (strings.HasPrefix(name, "Role") || strings.HasPrefix(name, "Perm")) {
					report(e, "a switch on domain."+name)
				}
			}
		}
		return true
	})
	return out
}

// TestAdaptersLeavePermissionsToApp: every permission check is a use case's
// (app); adapters decode, call app and encode. An adapter that must refuse
// before doing work calls an app method for it (Queries.AuthorizeRead,
// Exports.AuthorizeStream, ingest.Authorize).
func TestAdaptersLeavePermissionsToApp(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(filepath.Join(root, "adapters"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, v := range permissionChecks(fset, f) {
			rel, _ := filepath.Rel(root, v)
			t.Errorf("%s in an adapter: move the check into an app use case", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d adapter files", files)
	}
}

// The checker finds each kind of check it is meant to refuse.
func TestPermissionChecksAreFound(t *testing.T) {
	t.Parallel()
	src := `package x
func f(ctx context.Context, p domain.Principal) {
	app.Require(ctx, domain.PermThreadsRead)
	_ = p.Can(perm)
	_ = p.Require(perm)
	_ = p.Role == domain.RoleAdmin
	_ = domain.ScopeParty != p.Scope
	switch p.Role {
	case domain.RoleOwner:
	}
	_ = p.PartyScoped()
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := permissionChecks(fset, f)
	if len(got) != 7 {
		t.Fatalf("found %d checks, want 7: %q", len(got), got)
	}
}
