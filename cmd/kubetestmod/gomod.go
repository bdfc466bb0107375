package main

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// KubetestModule is the module whose replace directives a user's go.mod
// needs: it requires k8s.io/kubernetes, which requires its staging modules
// at v0.0.0.
const KubetestModule = "github.com/loam-dev/loam/kubetest"

// blockComment heads the replace block Fix writes when the go.mod has none
// of kubetest's replaces yet.
const blockComment = "// kubetest builds k8s.io/kubernetes, which requires its staging modules\n" +
	"// at v0.0.0: each points at its release (go run .../loam/cmd/kubetestmod)."

// Source says where kubetest's own go.mod is for the version a go.mod
// requires: in a directory (a replace to a local path), or in the module
// cache, as Path at Version.
type Source struct {
	// Dir is the directory of kubetest's module, when the user's go.mod
	// replaces it with a local path; relative paths are resolved against
	// the user's go.mod's directory.
	Dir string
	// Path and Version name the module to download otherwise.
	Path, Version string
}

// String names the source in messages.
func (s Source) String() string {
	if s.Dir != "" {
		return filepath.Join(s.Dir, "go.mod")
	}
	return s.Path + "@" + s.Version
}

// Locate finds which kubetest the go.mod named file, parsed as f, builds:
// the version it requires, or the module or directory it replaces it with.
// It fails, naming the file, when the go.mod requires no kubetest.
func Locate(file string, f *modfile.File) (Source, error) {
	var required *modfile.Require
	for _, r := range f.Require {
		if r.Mod.Path == KubetestModule {
			required = r
		}
	}
	if required == nil {
		return Source{}, fmt.Errorf("%s: requires no %s: add `require %s <version>` first (v0.0.0 with a replace to a checkout)", file, KubetestModule, KubetestModule)
	}
	src := Source{Path: KubetestModule, Version: required.Mod.Version}
	for _, r := range f.Replace {
		if r.Old.Path != KubetestModule || (r.Old.Version != "" && r.Old.Version != required.Mod.Version) {
			continue
		}
		if modfile.IsDirectoryPath(r.New.Path) {
			dir := r.New.Path
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(filepath.Dir(file), dir)
			}
			return Source{Dir: dir}, nil
		}
		src = Source{Path: r.New.Path, Version: r.New.Version}
	}
	return src, nil
}

// Needed returns the replaces of kubetest's go.mod, data read from the
// file named file, that a module building kubetest must repeat: every
// replace to a module version. Replaces to local paths (kubetest's own
// `github.com/loam-dev/loam => ../` in a checkout) mean nothing outside
// kubetest's directory and are left out. It fails when data is not a
// go.mod, or holds no such replace.
func Needed(file string, data []byte) ([]module.Version, []module.Version, error) {
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		return nil, nil, err
	}
	var olds, news []module.Version
	for _, r := range f.Replace {
		if r.New.Version == "" {
			continue
		}
		olds = append(olds, r.Old)
		news = append(news, r.New)
	}
	if len(olds) == 0 {
		return nil, nil, fmt.Errorf("%s: holds no replace to a module version: is it kubetest's go.mod?", file)
	}
	return olds, news, nil
}

// Problem is one replace a go.mod lacks or has wrong.
type Problem struct {
	// Line is the line of the wrong replace, 0 for a missing one.
	Line int
	Old  module.Version
	// Have is what the go.mod replaces Old with; zero when it doesn't.
	Have module.Version
	// Want is what kubetest's go.mod replaces Old with.
	Want module.Version
}

// Message names the file, the line of a wrong replace, and the line to
// write.
func (p Problem) Message(file string) string {
	want := "replace " + versionString(p.Old) + " => " + versionString(p.Want)
	if p.Line == 0 {
		return fmt.Sprintf("%s: missing %s", file, want)
	}
	return fmt.Sprintf("%s:%d: replace %s => %s, want %s", file, p.Line, versionString(p.Old), versionString(p.Have), want)
}

// versionString writes a module path and, when it has one, its version.
func versionString(v module.Version) string {
	if v.Version == "" {
		return v.Path
	}
	return v.Path + " " + v.Version
}

// Check returns every replace of olds => news that f lacks or replaces
// otherwise, in the order given. A replace of the same module at one
// version only does not count: kubetest's replaces cover every version.
func Check(f *modfile.File, olds, news []module.Version) []Problem {
	var problems []Problem
	for i, old := range olds {
		var have *modfile.Replace
		for _, r := range f.Replace {
			if r.Old == old {
				have = r
			}
		}
		switch {
		case have == nil:
			problems = append(problems, Problem{Old: old, Want: news[i]})
		case have.New != news[i]:
			problems = append(problems, Problem{Line: have.Syntax.Start.Line, Old: old, Have: have.New, Want: news[i]})
		}
	}
	return problems
}

// Fix returns data, the go.mod named file, with every replace of olds =>
// news that Check reports written: a wrong one changed where it is, and a
// missing one added to the block that holds the others, or to a new block
// at the end when the file has none of them. It keeps every other line,
// and returns data itself, and false, when nothing was missing or wrong.
func Fix(file string, data []byte, olds, news []module.Version) ([]byte, bool, error) {
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		return nil, false, err
	}
	problems := Check(f, olds, news)
	if len(problems) == 0 {
		return data, false, nil
	}
	var missing []Problem
	for _, p := range problems {
		if p.Line == 0 {
			missing = append(missing, p)
			continue
		}
		setReplace(f, p.Old, p.Want)
	}
	if len(missing) > 0 {
		addMissing(f, olds, missing)
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", file, err)
	}
	// The written file must parse, and hold every replace: a check of our
	// own edit, so a bug here never writes a go.mod that still fails.
	g, err := modfile.Parse(file, out, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s: the rewritten go.mod does not parse: %w", file, err)
	}
	if left := Check(g, olds, news); len(left) > 0 {
		return nil, false, fmt.Errorf("%s: the rewritten go.mod still lacks %d replaces", file, len(left))
	}
	return out, true, nil
}

// setReplace changes the replace of exactly old in f, the one Check read,
// to replace it with want, where it is and with its comments. It is not
// modfile's AddReplace, which, for an old of no version, rewrites the
// first replace of old's path at any version, the user's own of one
// version among them, and deletes the others.
func setReplace(f *modfile.File, old, want module.Version) {
	var have *modfile.Replace
	for _, r := range f.Replace {
		if r.Old == old {
			have = r
		}
	}
	tokens := []string{modfile.AutoQuote(old.Path)}
	if old.Version != "" {
		tokens = append(tokens, old.Version)
	}
	tokens = append(tokens, "=>", modfile.AutoQuote(want.Path))
	if want.Version != "" {
		tokens = append(tokens, want.Version)
	}
	if !have.Syntax.InBlock {
		tokens = append([]string{"replace"}, tokens...)
	}
	have.Syntax.Token = tokens
	have.New = want
}

// addMissing adds the missing replaces to the block of f that holds
// another of olds, each at its place in path order, or else to a new
// block at the end of f.
func addMissing(f *modfile.File, olds []module.Version, missing []Problem) {
	lines := make([]*modfile.Line, 0, len(missing))
	for _, p := range missing {
		tokens := []string{modfile.AutoQuote(p.Old.Path)}
		if p.Old.Version != "" {
			tokens = append(tokens, p.Old.Version)
		}
		tokens = append(tokens, "=>", modfile.AutoQuote(p.Want.Path))
		if p.Want.Version != "" {
			tokens = append(tokens, p.Want.Version)
		}
		lines = append(lines, &modfile.Line{Token: tokens, InBlock: true})
	}
	if block := blockOf(f, olds); block != nil {
		for _, l := range lines {
			i, _ := slices.BinarySearchFunc(block.Line, l, func(a, b *modfile.Line) int {
				return cmp.Compare(firstToken(a), firstToken(b))
			})
			block.Line = slices.Insert(block.Line, i, l)
		}
		return
	}
	slices.SortFunc(lines, func(a, b *modfile.Line) int { return cmp.Compare(firstToken(a), firstToken(b)) })
	var before []modfile.Comment
	for c := range strings.SplitSeq(blockComment, "\n") {
		before = append(before, modfile.Comment{Token: c})
	}
	f.Syntax.Stmt = append(f.Syntax.Stmt, &modfile.LineBlock{
		Comments: modfile.Comments{Before: before},
		Token:    []string{"replace"},
		Line:     lines,
	})
}

// blockOf returns the replace block of f that holds a replace of one of
// olds, or nil.
func blockOf(f *modfile.File, olds []module.Version) *modfile.LineBlock {
	for _, stmt := range f.Syntax.Stmt {
		block, ok := stmt.(*modfile.LineBlock)
		if !ok || len(block.Token) == 0 || block.Token[0] != "replace" {
			continue
		}
		for _, r := range f.Replace {
			if slices.Contains(olds, r.Old) && slices.Contains(block.Line, r.Syntax) {
				return block
			}
		}
	}
	return nil
}

// firstToken is a block line's module path, for ordering.
func firstToken(l *modfile.Line) string {
	if len(l.Token) == 0 {
		return ""
	}
	return l.Token[0]
}

// errProblems is what a check that found problems returns, after it
// printed each.
var errProblems = errors.New("the go.mod lacks replaces kubetest needs")
