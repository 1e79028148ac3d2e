// Package codesize measures the source of the module itself: it lists the
// non-test functions longer than a limit, so the style rule "a function fits
// on a screen" (issue 37: none over 80 lines but one table) is a number a
// test can report instead of an impression.
package codesize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one function or method declaration and its length in lines,
// from the line of "func" to the line of its closing brace.
type Func struct {
	File  string // path relative to the walked root, slash-separated
	Line  int    // line of the "func" keyword
	Name  string // "Name" or "Recv.Name" for a method
	Lines int
}

func (f Func) String() string {
	return fmt.Sprintf("%4d %s:%d %s", f.Lines, f.File, f.Line, f.Name)
}

// LongFuncs walks root and returns the non-test functions longer than limit
// lines, longest first. Directories named in skip (slash-separated, relative
// to root), testdata, hidden directories and _test.go files are not read.
func LongFuncs(root string, limit int, skip ...string) ([]Func, error) {
	var long []Func
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel, d.Name(), skip) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos()).Line
			lines := fset.Position(fn.End()).Line - start + 1
			if lines > limit {
				long = append(long, Func{File: rel, Line: start, Name: funcName(fn), Lines: lines})
			}
		}
		return nil
	})
	sort.Slice(long, func(i, j int) bool {
		if long[i].Lines != long[j].Lines {
			return long[i].Lines > long[j].Lines
		}
		return long[i].File+long[i].Name < long[j].File+long[j].Name
	})
	return long, err
}

func skipDir(rel, name string, skip []string) bool {
	if name == "testdata" || strings.HasPrefix(name, ".") {
		return true
	}
	for _, s := range skip {
		if rel == s {
			return true
		}
	}
	return false
}

// funcName names a method by its receiver's type, without the pointer or
// type parameters: "watcher.run".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch r := t.(type) {
	case *ast.IndexExpr:
		t = r.X
	case *ast.IndexListExpr:
		t = r.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
