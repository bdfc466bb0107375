package layers_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/internal/layers"
)

// TestRepository_keeps_the_facade_rule checks loam's own facade: kube and
// every package below it.
func TestRepository_keeps_the_facade_rule(t *testing.T) {
	found, err := layers.CheckFacade(filepath.Join("..", ".."), layers.Facade)
	require.NoError(t, err)
	for _, v := range found {
		t.Error(v)
	}
}

// funcOf returns a function declaration named name that spans lines
// lines, from its func keyword to its closing brace.
func funcOf(name string, lines int) string {
	return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
}

// padded returns src followed by blank lines up to lines lines in all.
func padded(src string, lines int) string {
	return src + strings.Repeat("\n", lines-strings.Count(src, "\n"))
}

// writeTree writes files, by slash-separated path, below a new directory,
// which it returns.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	}
	return root
}

// keptFacade is a facade that keeps every clause, at each limit: a file
// of 400 lines, with a function of 60 lines and a function literal of 60.
func keptFacade() map[string]string {
	longest := "package kube\n\nimport \"context\"\n\n" + funcOf("longest", layers.MaxFacadeFuncLines) +
		"\nvar literal = func() {\n" + strings.Repeat("\t_ = 0\n", layers.MaxFacadeFuncLines-2) + "}\n" +
		"\nvar _ context.Context\n"
	return map[string]string{
		"kube/kube.go":       padded(longest, layers.MaxFacadeFileLines),
		"kube/sub/sub.go":    "package sub\n\nimport \"errors\"\n\nvar Err = errors.New(\"x\")\n",
		"kube/last_line.go":  "package kube\n\nconst x = 1", // no newline at its end
		"kube/kube_test.go":  "package kube\nimport \"sync\"\nfunc f() { go func() {}() }\nvar _ sync.Mutex\n",
		"kube/testdata/x.go": "package x\nfunc f() { go f() }\n",
		"kube/_old/x.go":     "package x\nfunc f() { go f() }\n",
		"kube/mod/go.mod":    "module other\n",
		"kube/mod/x.go":      "package x\nfunc f() { go f() }\n",
		"adapters/a/a.go":    "package a\nimport \"sync\"\nfunc f() { go f() }\nvar _ sync.Mutex\n",
	}
}

func TestCheckFacade_finds_nothing_in_a_facade_that_keeps_the_rule(t *testing.T) {
	found, err := layers.CheckFacade(writeTree(t, keptFacade()), layers.Facade)
	require.NoError(t, err)
	require.Empty(t, found)
}

// TestCheckFacade_finds_every_broken_clause builds a facade whose files
// break each clause just past its limit, so the repository's check can't
// pass by finding nothing.
func TestCheckFacade_finds_every_broken_clause(t *testing.T) {
	files := keptFacade()
	files["kube/bad.go"] = "package kube\n" + // 1
		"\n" + // 2
		"import (\n" + // 3
		"\t\"sync\"\n" + // 4
		"\tatomic \"sync/atomic\"\n" + // 5
		")\n" + // 6
		"\n" + // 7
		"var mu sync.Mutex\n" + // 8
		"var n atomic.Int64\n" + // 9
		"\n" + // 10
		"func start() {\n" + // 11
		"\tgo start()\n" + // 12
		"\tf := func() {\n" + // 13
		"\t\tgo func() {}()\n" + // 14
		"\t}\n" + // 15
		"\tf()\n" + // 16
		"}\n" + // 17
		"\n" + // 18
		"type T[A any] struct{}\n" + // 19
		"\n" + // 20
		strings.Replace(funcOf("long", layers.MaxFacadeFuncLines+1), "func long", "func (*T[A]) long", 1) + // 21-81
		"\n" + // 82
		"var literal = func() {\n" + strings.Repeat("\t_ = 0\n", layers.MaxFacadeFuncLines-1) + "}\n" // 83-143
	files["kube/long.go"] = padded("package kube\n", layers.MaxFacadeFileLines+1)
	files["kube/sub/deeper/deeper.go"] = "package deeper\n\nfunc f() { go f() }\n"
	files["kube/group.go"] = "package kube\n\nimport _ \"golang.org/x/sync/errgroup\"\n"

	found, err := layers.CheckFacade(writeTree(t, files), layers.Facade)
	require.NoError(t, err)
	var got []string
	for _, v := range found {
		got = append(got, v.String())
	}
	require.Equal(t, []string{
		"kube/bad.go:4: imports sync: the facade holds no lock and no state that changes after construction",
		"kube/bad.go:5: imports sync/atomic: the facade holds no lock and no state that changes after construction",
		"kube/bad.go:12: a go statement: the facade starts no goroutine; adapters own goroutines",
		"kube/bad.go:14: a go statement: the facade starts no goroutine; adapters own goroutines",
		fmt.Sprintf("kube/bad.go:21: func T.long spans 61 lines: the facade's functions span at most %d", layers.MaxFacadeFuncLines),
		fmt.Sprintf("kube/bad.go:83: a function literal spans 61 lines: the facade's functions span at most %d", layers.MaxFacadeFuncLines),
		"kube/group.go:3: imports golang.org/x/sync/errgroup: the facade starts no goroutine and holds no lock, through a library either",
		fmt.Sprintf("kube/long.go:1: the file has 401 lines: the facade's files hold at most %d", layers.MaxFacadeFileLines),
		"kube/sub/deeper/deeper.go:3: a go statement: the facade starts no goroutine; adapters own goroutines",
	}, got)
}

func TestCheckFacade_reports_a_file_it_cannot_parse_and_the_others_violations(t *testing.T) {
	root := writeTree(t, map[string]string{
		"kube/broken.go": "package kube\nfunc {\n",
		"kube/go.go":     "package kube\nfunc f() { go f() }\n",
	})
	found, err := layers.CheckFacade(root, layers.Facade)
	require.ErrorContains(t, err, "parsing kube/broken.go")
	require.Len(t, found, 1)
	require.Equal(t, "kube/go.go", found[0].File)
}

func TestCheckFacade_fails_on_a_missing_facade(t *testing.T) {
	_, err := layers.CheckFacade(t.TempDir(), layers.Facade)
	require.Error(t, err)
}
