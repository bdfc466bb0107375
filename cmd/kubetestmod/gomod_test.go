package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// kubetestGoMod is a kubetest go.mod as a checkout has it: a local
// replace of the library, which the user's go.mod must not copy, and the
// staging modules' replaces, which it must.
const kubetestGoMod = `module github.com/loam-dev/loam/kubetest

go 1.27

require (
	github.com/loam-dev/loam v0.0.0
	k8s.io/api v0.37.2
	k8s.io/kubernetes v1.37.2
)

replace github.com/loam-dev/loam => ../

replace (
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => k8s.io/client-go v0.37.2
	k8s.io/kubelet => k8s.io/kubelet v0.37.2
)
`

// userHead is the start of a user's go.mod that requires kubetest from a
// checkout.
const userHead = `module example.com/website

go 1.27

require (
	github.com/loam-dev/loam v0.0.0
	github.com/loam-dev/loam/kubetest v0.0.0
)
`

// neededVersions returns the replaces of kubetestGoMod that a user's
// go.mod needs.
func neededVersions(t *testing.T) (olds, news []module.Version) {
	t.Helper()
	olds, news, err := Needed("kubetest/go.mod", []byte(kubetestGoMod))
	require.NoError(t, err)
	return olds, news
}

func TestFix_writes_what_check_asks_for_and_keeps_the_rest(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// problems is Check's messages before the fix.
		problems []string
		want     string
	}{
		{
			name: "no block: a new one at the end, with its comment",
			in:   userHead + "\nreplace github.com/loam-dev/loam => ../loam\n",
			problems: []string{
				"go.mod: missing replace k8s.io/api => k8s.io/api v0.37.2",
				"go.mod: missing replace k8s.io/client-go => k8s.io/client-go v0.37.2",
				"go.mod: missing replace k8s.io/kubelet => k8s.io/kubelet v0.37.2",
			},
			want: userHead + "\nreplace github.com/loam-dev/loam => ../loam\n\n" + blockComment + "\n" + `replace (
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => k8s.io/client-go v0.37.2
	k8s.io/kubelet => k8s.io/kubelet v0.37.2
)
`,
		},
		{
			name: "stale versions changed where they are, a missing one added in order, the user's own kept",
			in: userHead + `
replace (
	example.com/fork => ../fork
	k8s.io/api => k8s.io/api v0.36.1
	k8s.io/kubelet => k8s.io/kubelet v0.37.2 // a comment kept
)
`,
			problems: []string{
				"go.mod:12: replace k8s.io/api => k8s.io/api v0.36.1, want replace k8s.io/api => k8s.io/api v0.37.2",
				"go.mod: missing replace k8s.io/client-go => k8s.io/client-go v0.37.2",
			},
			want: userHead + `
replace (
	example.com/fork => ../fork
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => k8s.io/client-go v0.37.2
	k8s.io/kubelet => k8s.io/kubelet v0.37.2 // a comment kept
)
`,
		},
		{
			name: "a replace of one version only doesn't count, and becomes one of every version",
			in: userHead + `
replace k8s.io/api v0.0.0 => k8s.io/api v0.37.2

replace (
	k8s.io/client-go => k8s.io/client-go v0.37.2
	k8s.io/kubelet => k8s.io/kubelet v0.37.2
)
`,
			problems: []string{"go.mod: missing replace k8s.io/api => k8s.io/api v0.37.2"},
			want: userHead + `
replace k8s.io/api v0.0.0 => k8s.io/api v0.37.2

replace (
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => k8s.io/client-go v0.37.2
	k8s.io/kubelet => k8s.io/kubelet v0.37.2
)
`,
		},
		{
			name: "a stale replace of every version changed, the user's own of one version kept",
			in: userHead + `
replace (
	k8s.io/api v0.0.0 => ../api-fork // the user's own
	k8s.io/api => k8s.io/api v0.36.1
	k8s.io/client-go => k8s.io/client-go v0.37.2
)

replace k8s.io/kubelet => k8s.io/kubelet v0.36.1
`,
			problems: []string{
				"go.mod:12: replace k8s.io/api => k8s.io/api v0.36.1, want replace k8s.io/api => k8s.io/api v0.37.2",
				"go.mod:16: replace k8s.io/kubelet => k8s.io/kubelet v0.36.1, want replace k8s.io/kubelet => k8s.io/kubelet v0.37.2",
			},
			want: userHead + `
replace (
	k8s.io/api v0.0.0 => ../api-fork // the user's own
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => k8s.io/client-go v0.37.2
)

replace k8s.io/kubelet => k8s.io/kubelet v0.37.2
`,
		},
		{
			name: "a replace to another place is wrong too",
			in: userHead + `
replace (
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => ../client-go
	k8s.io/kubelet => k8s.io/kubelet v0.37.2
)
`,
			problems: []string{"go.mod:12: replace k8s.io/client-go => ../client-go, want replace k8s.io/client-go => k8s.io/client-go v0.37.2"},
			want: userHead + `
replace (
	k8s.io/api => k8s.io/api v0.37.2
	k8s.io/client-go => k8s.io/client-go v0.37.2
	k8s.io/kubelet => k8s.io/kubelet v0.37.2
)
`,
		},
	}
	olds, news := neededVersions(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := modfile.Parse("go.mod", []byte(tt.in), nil)
			require.NoError(t, err)
			var got []string
			for _, p := range Check(f, olds, news) {
				got = append(got, p.Message("go.mod"))
			}
			require.Equal(t, tt.problems, got)

			out, changed, err := Fix("go.mod", []byte(tt.in), olds, news)
			require.NoError(t, err)
			require.True(t, changed)
			require.Equal(t, tt.want, string(out))

			// Idempotent: the fixed file checks clean and a second fix
			// changes nothing.
			again, changed, err := Fix("go.mod", out, olds, news)
			require.NoError(t, err)
			require.False(t, changed)
			require.Equal(t, string(out), string(again))
		})
	}
}

func TestFix_reports_a_go_mod_that_does_not_parse_naming_its_file_and_line(t *testing.T) {
	olds, news := neededVersions(t)
	_, _, err := Fix("website/go.mod", []byte(userHead+"\nreplace k8s.io/api =>\n"), olds, news)
	require.ErrorContains(t, err, "website/go.mod:10:")
}

func TestNeeded_leaves_out_local_replaces_and_refuses_a_go_mod_without_any(t *testing.T) {
	olds, news := neededVersions(t)
	require.Len(t, olds, 3)
	for i := range olds {
		require.Equal(t, olds[i].Path, news[i].Path)
		require.Equal(t, "v0.37.2", news[i].Version)
	}
	_, _, err := Needed("x/go.mod", []byte("module x\n\nreplace a => ../a\n"))
	require.ErrorContains(t, err, "x/go.mod: holds no replace to a module version")
}

func TestLocate_finds_kubetest_required_replaced_by_a_directory_or_a_module(t *testing.T) {
	tests := []struct {
		name    string
		gomod   string
		want    Source
		wantErr string
	}{
		{
			name:  "a version from the module cache",
			gomod: "module m\n\nrequire github.com/loam-dev/loam/kubetest v0.3.0\n",
			want:  Source{Path: KubetestModule, Version: "v0.3.0"},
		},
		{
			name:  "a checkout, relative to the go.mod",
			gomod: "module m\n\nrequire github.com/loam-dev/loam/kubetest v0.0.0\n\nreplace github.com/loam-dev/loam/kubetest => ../loam/kubetest\n",
			want:  Source{Dir: filepath.Join("website", "..", "loam", "kubetest")},
		},
		{
			name:  "a fork",
			gomod: "module m\n\nrequire github.com/loam-dev/loam/kubetest v0.3.0\n\nreplace github.com/loam-dev/loam/kubetest v0.3.0 => example.com/kubetest v0.3.1\n",
			want:  Source{Path: "example.com/kubetest", Version: "v0.3.1"},
		},
		{
			name:  "a replace of another version is not this one's",
			gomod: "module m\n\nrequire github.com/loam-dev/loam/kubetest v0.3.0\n\nreplace github.com/loam-dev/loam/kubetest v0.2.0 => ../old\n",
			want:  Source{Path: KubetestModule, Version: "v0.3.0"},
		},
		{
			name:    "no kubetest",
			gomod:   "module m\n",
			wantErr: "website/go.mod: requires no github.com/loam-dev/loam/kubetest",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := modfile.Parse("website/go.mod", []byte(tt.gomod), nil)
			require.NoError(t, err)
			got, err := Locate(filepath.Join("website", "go.mod"), f)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRun_writes_then_checks_against_a_checkout runs the command as a
// person does from a checkout: kubetest replaced by a directory, whose
// go.mod it reads; the first run writes, the second finds nothing to do,
// -check passes, and a stale line makes -check fail naming it.
func TestRun_writes_then_checks_against_a_checkout(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o600))
	}
	write("loam/kubetest/go.mod", kubetestGoMod)
	write("website/go.mod", userHead+"\nreplace (\n\tgithub.com/loam-dev/loam => ../loam\n\tgithub.com/loam-dev/loam/kubetest => ../loam/kubetest\n)\n")
	gomod := filepath.Join(root, "website", "go.mod")
	noFetch := func(context.Context, string, string) (string, []byte, error) {
		t.Fatal("a checkout's kubetest is read from its directory")
		return "", nil, nil
	}
	cmd := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), args, &stdout, &stderr, noFetch)
		return stdout.String(), stderr.String(), err
	}

	_, stderr, err := cmd("-check", gomod)
	require.ErrorIs(t, err, errProblems)
	require.Contains(t, stderr, gomod+": missing replace k8s.io/api => k8s.io/api v0.37.2\n")
	require.Contains(t, stderr, "3 of the 3 replaces of "+filepath.Join(root, "loam", "kubetest", "go.mod")+" are missing or wrong")

	stdout, _, err := cmd(gomod)
	require.NoError(t, err)
	require.Equal(t, gomod+": wrote the 3 replaces of "+filepath.Join(root, "loam", "kubetest", "go.mod")+"\n", stdout)
	written, err := os.ReadFile(gomod)
	require.NoError(t, err)
	require.Contains(t, string(written), "github.com/loam-dev/loam/kubetest => ../loam/kubetest\n", "the user's own replaces are kept")

	stdout, _, err = cmd(gomod)
	require.NoError(t, err)
	require.Contains(t, stdout, "already has the 3 replaces")
	stdout, _, err = cmd("-check", gomod)
	require.NoError(t, err)
	require.Contains(t, stdout, "has the 3 replaces")

	write("website/go.mod", strings.Replace(string(written), "k8s.io/kubelet v0.37.2", "k8s.io/kubelet v0.37.1", 1))
	_, stderr, err = cmd("-check", gomod)
	require.ErrorIs(t, err, errProblems)
	require.Contains(t, stderr, gomod+":20: replace k8s.io/kubelet => k8s.io/kubelet v0.37.1, want replace k8s.io/kubelet => k8s.io/kubelet v0.37.2\n")
}

// TestRun_reads_a_released_kubetest_through_fetch checks that a version
// with no replace is fetched, and that the fetch's failure names the
// go.mod and the version.
func TestRun_reads_a_released_kubetest_through_fetch(t *testing.T) {
	dir := t.TempDir()
	gomod := filepath.Join(dir, "go.mod")
	require.NoError(t, os.WriteFile(gomod, []byte("module m\n\ngo 1.27\n\nrequire github.com/loam-dev/loam/kubetest v0.3.0\n"), 0o600))
	var asked []string
	fetch := func(_ context.Context, path, version string) (string, []byte, error) {
		asked = append(asked, path+"@"+version)
		return "cache/kubetest@v0.3.0/go.mod", []byte(kubetestGoMod), nil
	}
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(t.Context(), []string{gomod}, &stdout, &stderr, fetch))
	require.Equal(t, []string{KubetestModule + "@v0.3.0"}, asked)
	require.Contains(t, stdout.String(), "wrote the 3 replaces of "+KubetestModule+"@v0.3.0")

	failing := func(context.Context, string, string) (string, []byte, error) {
		return "", nil, errors.New("not found")
	}
	require.NoError(t, os.WriteFile(gomod, []byte("module m\n\nrequire github.com/loam-dev/loam/kubetest v1.9.9\n"), 0o600))
	err := run(t.Context(), []string{gomod}, &stdout, &stderr, failing)
	require.EqualError(t, err, gomod+" requires "+KubetestModule+"@v1.9.9: not found")
}

func TestRun_refuses_two_files_and_reports_a_missing_one(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.ErrorContains(t, run(t.Context(), []string{"a", "b"}, &stdout, &stderr, nil), "one go.mod at most")
	require.ErrorContains(t, run(t.Context(), []string{filepath.Join(t.TempDir(), "go.mod")}, &stdout, &stderr, nil), "no such file")
}

// FuzzFix checks, for any go.mod that parses, that Fix never panics, that
// what it writes parses, checks clean and is fixed for good, and that it
// keeps every replace of the user's own: one of a module at a version, or
// of a module kubetest doesn't replace.
func FuzzFix(f *testing.F) {
	f.Add(userHead)
	f.Add(userHead + "\nreplace k8s.io/api => k8s.io/api v0.1.0\n")
	f.Add(userHead + "\nreplace (\n\tk8s.io/api v0.0.0 => ../api\n\t// a comment\n)\n")
	f.Add("module m\nreplace ( k8s.io/kubelet => x v1.0.0 )\n")
	f.Add("module m\nreplace (\n\tk8s.io/api v0.0.0 => ../fork\n\tk8s.io/api => k8s.io/api v0.1.0\n\texample.com/x => ../x\n)\n")
	olds, news, err := Needed("kubetest/go.mod", []byte(kubetestGoMod))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, in string) {
		out, _, err := Fix("go.mod", []byte(in), olds, news)
		if err != nil {
			if _, perr := modfile.Parse("go.mod", []byte(in), nil); perr == nil {
				t.Fatalf("Fix failed on a go.mod that parses: %v", err)
			}
			return
		}
		g, err := modfile.Parse("go.mod", out, nil)
		require.NoError(t, err)
		require.Empty(t, Check(g, olds, news))
		before, err := modfile.Parse("go.mod", []byte(in), nil)
		require.NoError(t, err)
		for _, r := range before.Replace {
			if slices.Contains(olds, r.Old) {
				continue
			}
			require.True(t, slices.ContainsFunc(g.Replace, func(h *modfile.Replace) bool { return h.Old == r.Old && h.New == r.New }),
				"the user's replace %v => %v is kept", r.Old, r.New)
		}
		again, changed, err := Fix("go.mod", out, olds, news)
		require.NoError(t, err)
		require.False(t, changed)
		require.Equal(t, string(out), string(again))
	})
}

// TestExitCode_tells_missing_replaces_from_a_check_that_never_ran runs
// the command as a CI step does: 1 means the go.mod lacks replaces, 2
// that the check never ran, and -h is no failure.
func TestExitCode_tells_missing_replaces_from_a_check_that_never_ran(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "loam", "kubetest"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "website"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "loam", "kubetest", "go.mod"), []byte(kubetestGoMod), 0o600))
	gomod := filepath.Join(root, "website", "go.mod")
	require.NoError(t, os.WriteFile(gomod, []byte(userHead+"\nreplace github.com/loam-dev/loam/kubetest => ../loam/kubetest\n"), 0o600))
	noKubetest := filepath.Join(root, "other.mod")
	require.NoError(t, os.WriteFile(noKubetest, []byte("module m\n"), 0o600))

	tests := []struct {
		name   string
		args   []string
		want   int
		stderr string
	}{
		{name: "-h prints the usage", args: []string{"-h"}, want: 0, stderr: "usage: kubetestmod"},
		{name: "a bad flag, reported once", args: []string{"-chek", gomod}, want: 2, stderr: "flag provided but not defined: -chek\nusage: kubetestmod"},
		{name: "missing replaces", args: []string{"-check", gomod}, want: 1, stderr: gomod + ": missing replace k8s.io/api"},
		{name: "no go.mod", args: []string{"-check", filepath.Join(root, "none", "go.mod")}, want: 2, stderr: "kubetestmod: open " + filepath.Join(root, "none", "go.mod")},
		{name: "no kubetest required", args: []string{"-check", noKubetest}, want: 2, stderr: "kubetestmod: " + noKubetest + ": requires no " + KubetestModule},
		{name: "two go.mods", args: []string{"-check", gomod, gomod}, want: 2, stderr: "kubetestmod: one go.mod at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, &stdout, &stderr, nil)
			require.Equal(t, tt.want, exitCode(err, &stderr), "stderr:\n%s", stderr.String())
			require.Contains(t, stderr.String(), tt.stderr)
			require.Equal(t, 1, strings.Count(stderr.String(), strings.SplitN(tt.stderr, "\n", 2)[0]), "said once:\n%s", stderr.String())
		})
	}
}
