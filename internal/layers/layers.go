// Package layers checks loam's dependency rules: which of its packages may
// import which. The rules make the ports-and-adapters shape of
// docs/architecture.md mechanical, so a review never has to catch an arrow
// pointing the wrong way.
package layers

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Rule constrains the imports of every package whose import path is Scope
// or lies under it. An import is a violation when Allow is set and rejects
// it, or when Deny matches it.
type Rule struct {
	// Scope is an import path; the rule covers it and every package below.
	Scope string
	// Why says what the rule protects, for the violation's message.
	Why string
	// Allow, when not nil, reports whether an import is permitted.
	Allow func(imp string) bool
	// Deny lists import paths that are forbidden, each with every package
	// below it.
	Deny []string
}

// Violation is one import that breaks a Rule.
type Violation struct {
	File   string // the file's path, relative to the checked root
	Pkg    string // the importing package's import path
	Import string // the forbidden import path
	Why    string // the broken rule's Why
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s imports %s: %s", v.File, v.Pkg, v.Import, v.Why)
}

// Under reports whether imp is path or lies below it.
func Under(imp, p string) bool {
	return imp == p || strings.HasPrefix(imp, p+"/")
}

// TestOnly reports whether imp is a library that only tests link, which a
// _test.go file of any layer may import: assertions, mocks and the
// goroutine-leak check run in the test binary, never in the package.
func TestOnly(imp string) bool {
	for _, lib := range []string{"github.com/stretchr/testify", "go.uber.org/mock", "go.uber.org/goleak"} {
		if Under(imp, lib) {
			return true
		}
	}
	return false
}

// Standard reports whether imp is a package of the standard library: its
// first element has no dot.
func Standard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// Check parses the imports of every Go file below root, whose module path
// is module, and returns the imports that break rules, sorted by file.
// Directories named testdata or vendor, and those starting with "." or
// "_", are skipped, as the go command skips them; so is every directory
// holding a go.mod of its own other than root, which is another module.
// It fails when a file can't be parsed.
func Check(root, module string, rules []Rule) ([]Violation, error) {
	var (
		found []Violation
		errs  []error
	)
	fset := token.NewFileSet()
	err := walkGoFiles(root, func(p string) error {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		pkg := path.Join(module, filepath.ToSlash(filepath.Dir(rel)))
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			errs = append(errs, fmt.Errorf("parsing %s: %w", rel, err))
			return nil
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: import %s: %w", rel, spec.Path.Value, err))
				continue
			}
			if strings.HasSuffix(p, "_test.go") && TestOnly(imp) {
				continue
			}
			for _, r := range rules {
				if !Under(pkg, r.Scope) || !breaks(r, imp) {
					continue
				}
				found = append(found, Violation{File: filepath.ToSlash(rel), Pkg: pkg, Import: imp, Why: r.Why})
			}
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].File != found[j].File {
			return found[i].File < found[j].File
		}
		return found[i].Import < found[j].Import
	})
	return found, errors.Join(errs...)
}

func breaks(r Rule, imp string) bool {
	if r.Allow != nil && !r.Allow(imp) {
		return true
	}
	for _, d := range r.Deny {
		if Under(imp, d) {
			return true
		}
	}
	return false
}
