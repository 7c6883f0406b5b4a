package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoAliasOfAnInternalType: package core is the API, so the types it
// exports are its own or those of public packages; an alias of a type in
// an internal package would name what a reader cannot open.
func TestNoAliasOfAnInternalType(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	aliases := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name -> import path
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			local := filepath.Base(path)
			if im.Name != nil {
				local = im.Name.Name
			}
			imports[local] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Assign.IsValid() || !ts.Name.IsExported() {
				return true
			}
			aliases++
			ast.Inspect(ts.Type, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && strings.Contains(imports[pkg.Name]+"/", "/internal/") {
						t.Errorf("%s: core.%s is an alias of %s.%s (%s), an internal package", fset.Position(ts.Pos()), ts.Name.Name, pkg.Name, sel.Sel.Name, imports[pkg.Name])
					}
				}
				return true
			})
			return true
		})
	}
	if aliases == 0 {
		t.Fatal("no exported alias found: the check reads nothing")
	}
}
