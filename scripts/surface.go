//go:build ignore

// surface.go counts the exported names of Go packages: run by
// scripts/surface, which says which packages and why. Each argument is
// LABEL=DIR; it prints one line per package that exports a name, and the
// total.
//
// A name counts when a user can write it after the package's name: every
// exported top-level const, var, func and type (each name of a group on
// its own), and every exported method declared on an exported type
// (generic ones included). Struct fields and interface methods are not
// counted: they are part of their type. The files are those go build
// would compile on this machine (no _test.go files).
package main

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// The targets of v0.2 (issue 21): the exported names of elicit, and of
// all the published packages together.
const (
	targetElicit = 70
	targetTotal  = 200
)

func main() {
	total, elicit := 0, -1
	for _, arg := range os.Args[1:] {
		label, dir, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "surface: %q is not LABEL=DIR\n", arg)
			os.Exit(2)
		}
		n, err := count(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "surface: %s: %v\n", label, err)
			os.Exit(1)
		}
		if n == 0 {
			continue // nothing to import: fuzz, which holds only fuzz targets
		}
		fmt.Printf("  %-22s %4d\n", label, n)
		total += n
		if label == "elicit" {
			elicit = n
		}
	}
	fmt.Printf("  %-22s %4d\n", "total", total)
	fmt.Printf("  target: elicit <= %d (%s), total <= %d (%s)\n",
		targetElicit, met(elicit >= 0 && elicit <= targetElicit), targetTotal, met(total <= targetTotal))
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// count returns the number of exported names of the package in dir.
func count(dir string) (int, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return 0, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		files = append(files, f)
	}
	exportedType := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						exportedType[ts.Name.Name] = true
					}
				}
			}
		}
	}
	n := 0
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedType[receiver(d.Recv.List[0].Type)]) {
					n++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, name := range s.Names {
							if name.IsExported() {
								n++
							}
						}
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n, nil
}

// receiver returns the name of a method's receiver type: T of T, *T,
// T[P] and *T[P, Q].
func receiver(t ast.Expr) string {
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
