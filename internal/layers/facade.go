package layers

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The facade's limits, as issue #40 states them: a facade declares types,
// validates and assembles, which never takes a long function or file.
const (
	// MaxFacadeFuncLines is the most lines a function of the facade may
	// span, counted from its func keyword's line to its closing brace's,
	// both inclusive; a doc comment above it doesn't count.
	MaxFacadeFuncLines = 60
	// MaxFacadeFileLines is the most lines a file of the facade may hold,
	// as wc -l counts them, plus one for a last line without a newline.
	MaxFacadeFileLines = 400
)

// Facade is the import path, below Module, of loam's facade: the package
// end users import, and every package below it.
const Facade = "kube"

// FacadeViolation is one place where a file of the facade breaks the
// facade rule.
type FacadeViolation struct {
	File string // the file's path, relative to the checked root
	Line int    // the line the broken clause starts at
	What string // which clause it breaks, and how
}

func (v FacadeViolation) String() string {
	return fmt.Sprintf("%s:%d: %s", v.File, v.Line, v.What)
}

// CheckFacade checks the facade rule on the non-test Go files of the
// package in directory dir below root, and of every package below it: the
// facade starts no goroutine, holds no lock and stays small, so it has no
// go statement (in a function literal either), imports neither sync nor
// sync/atomic, has no function declaration or literal over
// MaxFacadeFuncLines lines and no file over MaxFacadeFileLines lines. It
// returns every violation, sorted by file and line, and skips the
// directories Check skips. It fails when a file can't be read or parsed,
// naming the file, and still returns the violations of the others.
func CheckFacade(root, dir string) ([]FacadeViolation, error) {
	var (
		found []FacadeViolation
		errs  []error
	)
	fset := token.NewFileSet()
	err := walkGoFiles(filepath.Join(root, filepath.FromSlash(dir)), func(p string) error {
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		vs, err := checkFacadeFile(fset, p, rel)
		if err != nil {
			errs = append(errs, err)
		}
		found = append(found, vs...)
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].File != found[j].File {
			return found[i].File < found[j].File
		}
		return found[i].Line < found[j].Line
	})
	return found, errors.Join(errs...)
}

// checkFacadeFile returns the violations of the file at p, named rel in
// them.
func checkFacadeFile(fset *token.FileSet, p, rel string) ([]FacadeViolation, error) {
	src, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", rel, err)
	}
	var found []FacadeViolation
	at := func(pos token.Pos, format string, args ...any) {
		found = append(found, FacadeViolation{File: rel, Line: fset.Position(pos).Line, What: fmt.Sprintf(format, args...)})
	}
	if n := lineCount(src); n > MaxFacadeFileLines {
		at(f.Package, "the file has %d lines: the facade's files hold at most %d", n, MaxFacadeFileLines)
	}
	// names maps the names the file gives "time" and "context" to their
	// paths: both have an AfterFunc, which runs a function in a goroutine
	// of its own without a go statement.
	names := map[string]string{}
	for _, spec := range f.Imports {
		imp, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return found, fmt.Errorf("%s: import %s: %w", rel, spec.Path.Value, err)
		}
		if imp == "time" || imp == "context" {
			name := imp
			if spec.Name != nil {
				name = spec.Name.Name
			}
			names[name] = imp
		}
		switch {
		case imp == "sync" || imp == "sync/atomic":
			at(spec.Pos(), "imports %s: the facade holds no lock and no state that changes after construction", imp)
		case Under(imp, "golang.org/x/sync"):
			// errgroup and singleflight start goroutines and hold locks
			// without a go statement or a sync import in the facade.
			at(spec.Pos(), "imports %s: the facade starts no goroutine and holds no lock, through a library either", imp)
		}
	}
	lines := func(n ast.Node) int { return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1 }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n.Go, "a go statement: the facade starts no goroutine; adapters own goroutines")
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && n.Sel.Name == "AfterFunc" && names[x.Name] != "" {
				at(n.Pos(), "%s.AfterFunc: the facade starts no goroutine, not even through a timer; adapters own goroutines", names[x.Name])
			}
		case *ast.FuncDecl:
			// A declaration without a body is implemented elsewhere.
			if n.Body != nil && lines(n) > MaxFacadeFuncLines {
				at(n.Pos(), "func %s spans %d lines: the facade's functions span at most %d", funcName(n), lines(n), MaxFacadeFuncLines)
			}
		case *ast.FuncLit:
			if lines(n) > MaxFacadeFuncLines {
				at(n.Pos(), "a function literal spans %d lines: the facade's functions span at most %d", lines(n), MaxFacadeFuncLines)
			}
		}
		return true
	})
	return found, nil
}

// funcName names a function declaration as its violation does: a method
// with its receiver's type.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
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
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}

// lineCount counts src's lines: its newlines, and a last line without
// one.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// walkGoFiles calls visit with the path of every Go file below root, in
// lexical order, and stops at visit's first error, which it returns, skipping what the go command skips: directories named
// testdata or vendor or starting with "." or "_", and every directory
// other than root that holds a go.mod of its own, which is another
// module.
func walkGoFiles(root string, visit func(p string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		return visit(p)
	})
}
