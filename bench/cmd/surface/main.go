// Command surface counts the identifiers each public package of ratewise
// exports, as `go doc -all` lists them: constants, variables, functions,
// types, methods, struct fields and interface methods. It prints a table
// and, with -check, exits 1 when the core packages, or all public packages
// together, export more than their budget.
//
//	go run ./bench/cmd/surface [-check]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// core are the packages a user of the library builds on.
var core = []string{".", "algorithms", "store", "storememory", "storeredis"}

func main() {
	check := flag.Bool("check", false, "exit 1 if the core or all public packages export more than their budget")
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	counts, err := countAll(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(2)
	}
	ok := report(counts, *check)
	if !ok {
		os.Exit(1)
	}
}

// count is one package's exported identifiers, by what they are.
type count struct {
	consts, vars, funcs, types, methods, fields int
}

func (c count) total() int { return c.consts + c.vars + c.funcs + c.types + c.methods + c.fields }

// countAll counts every public package under root: every directory with
// non-test Go files outside internal/, testdata/ and nested modules.
func countAll(root string) (map[string]count, error) {
	counts := map[string]count{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		if rel != "." &&
			(name == "internal" || name == "testdata" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if rel != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
		}
		c, ok, err := countDir(path)
		if err != nil {
			return err
		}
		if ok {
			counts[filepath.ToSlash(rel)] = c
		}
		return nil
	})
	return counts, err
}

// countDir counts the exported identifiers of the package in dir, if it
// holds one other than a main package.
func countDir(dir string) (count, bool, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		return count{}, false, err
	}
	var c count
	found := false
	for name, pkg := range pkgs {
		if name == "main" {
			continue
		}
		found = true
		var files []*ast.File
		for _, f := range pkg.Files {
			files = append(files, f)
		}
		p, err := doc.NewFromFiles(fset, files, "ratewise/"+dir)
		if err != nil {
			return count{}, false, err
		}
		values := func(vs []*doc.Value) (n int) {
			for _, v := range vs {
				n += len(v.Names)
			}
			return n
		}
		c.consts += values(p.Consts)
		c.vars += values(p.Vars)
		c.funcs += len(p.Funcs)
		for _, t := range p.Types {
			c.types++
			c.consts += values(t.Consts)
			c.vars += values(t.Vars)
			c.funcs += len(t.Funcs)
			c.methods += len(t.Methods)
			c.fields += members(t.Decl)
		}
	}
	return c, found, nil
}

// members counts a type's exported struct fields or interface methods.
func members(decl *ast.GenDecl) (n int) {
	for _, spec := range decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok || !ts.Name.IsExported() {
			continue
		}
		var list *ast.FieldList
		switch t := ts.Type.(type) {
		case *ast.StructType:
			list = t.Fields
		case *ast.InterfaceType:
			list = t.Methods
		}
		if list == nil {
			continue
		}
		for _, f := range list.List {
			if len(f.Names) == 0 { // embedded: exported if its type name is
				if id := embeddedName(f.Type); id != nil && id.IsExported() {
					n++
				}
				continue
			}
			for _, name := range f.Names {
				if name.IsExported() {
					n++
				}
			}
		}
	}
	return n
}

func embeddedName(e ast.Expr) *ast.Ident {
	switch t := e.(type) {
	case *ast.Ident:
		return t
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel
	case *ast.IndexExpr:
		return embeddedName(t.X)
	}
	return nil
}

func report(counts map[string]count, check bool) bool {
	var names []string
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	isCore := map[string]bool{}
	for _, name := range core {
		isCore[name] = true
	}
	fmt.Println("| package | consts | vars | funcs | types | methods | fields | total |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	var coreTotal, all int
	for _, name := range names {
		c := counts[name]
		label := name
		if name == "." {
			label = "ratewise"
		}
		if isCore[name] {
			label += " (core)"
			coreTotal += c.total()
		}
		all += c.total()
		fmt.Printf(
			"| %s | %d | %d | %d | %d | %d | %d | %d |\n",
			label,
			c.consts,
			c.vars,
			c.funcs,
			c.types,
			c.methods,
			c.fields,
			c.total(),
		)
	}
	fmt.Printf("\ncore: %d (budget %d); all public packages: %d (budget %d)\n",
		coreTotal, coreBudget, all, allBudget)
	if !check {
		return true
	}
	ok := coreTotal <= coreBudget && all <= allBudget
	if !ok {
		fmt.Println("over budget")
	}
	return ok
}

// The budgets -check enforces: the core packages, and every public
// package of the library module (the tools, modules of their own, are not
// counted).
const (
	coreBudget = 190
	allBudget  = 300
)
