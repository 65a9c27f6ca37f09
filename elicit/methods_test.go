package elicit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is the most methods a type of package elicit (or a package
// under it), or of the engine (internal/engine and the packages under
// it), may have (issue 19): a type that grows past it holds more
// than one thing, and the engine or a type of its own should take some.
const maxMethods = 25

// TestNoTypeHasTooManyMethods holds maxMethods over the non-test sources
// of elicit, the engine, and the packages under them.
func TestNoTypeHasTooManyMethods(t *testing.T) {
	counts := map[string]int{} // package dir + type → methods
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if idx, ok := typ.(*ast.IndexExpr); ok {
				typ = idx.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				counts[filepath.Dir(path)+"."+id.Name]++
			}
		}
		return nil
	}
	for _, root := range []string{".", "../internal/engine"} {
		if err := filepath.WalkDir(root, walk); err != nil {
			t.Fatal(err)
		}
	}
	if counts["..Elicitor"] == 0 || counts["../internal/engine.Engine"] == 0 {
		t.Fatalf("the Elicitor's or the Engine's methods were not found: %v", counts)
	}
	for typ, n := range counts {
		if n > maxMethods {
			t.Errorf("%s has %d methods, more than %d", typ, n, maxMethods)
		}
	}
}
