package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// surface prints, per public package of the SDK, the exported names a
// plugin author can reach (docs/adr/0015): top-level names (each constant,
// variable, function and type) and all names (those plus the methods,
// struct fields and interface methods of exported types).
func surface(root string, args []string) error {
	if len(args) != 0 {
		usage()
	}
	sdk := filepath.Join(root, "sdk")
	type count struct{ top, all int }
	pkgs := map[string]*count{}
	err := filepath.WalkDir(sdk, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "internal" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		c := pkgs[rel]
		if c == nil {
			c = &count{}
			pkgs[rel] = c
		}
		top, all := exported(f)
		c.top += top
		c.all += all
		return nil
	})
	if err != nil {
		return err
	}
	var total count
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		fmt.Printf("%-28s %4d top-level %4d all\n", p, pkgs[p].top, pkgs[p].all)
		total.top += pkgs[p].top
		total.all += pkgs[p].all
	}
	fmt.Printf("%d packages %d top-level %d all\n", len(pkgs), total.top, total.all)
	return nil
}

// exported counts one file's exported top-level names and all its
// exported names.
func exported(f *ast.File) (top, all int) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				top++
			} else if !ast.IsExported(receiver(d.Recv.List[0].Type)) {
				continue
			}
			all++
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							top++
							all++
						}
					}
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						top++
						all += 1 + members(s.Type)
					}
				}
			}
		}
	}
	return top, all
}

// members counts the exported fields of a struct type and the exported
// methods of an interface type.
func members(t ast.Expr) int {
	var list *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		return 0
	}
	n := 0
	for _, f := range list.List {
		for _, name := range f.Names {
			if name.IsExported() {
				n++
			}
		}
	}
	return n
}

func receiver(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
