package gettingstarted

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// page is the page under test, from this package's directory.
const page = "../../docs/getting-started.md"

// fileBlock is a fenced block that a <!-- file: NAME --> comment names.
var fileBlock = regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n```[a-z]*\n(.*?)```\n")

// pageFiles returns the page's named blocks by file name, failing on a
// name given twice or one that leaves the module's directory.
func pageFiles(t *testing.T, text string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, m := range fileBlock.FindAllStringSubmatch(text, -1) {
		name := m[1]
		require.True(t, filepath.IsLocal(name), "%s: the block's file %q leaves the module", page, name)
		require.NotContains(t, files, name, "%s: two blocks name %s", page, name)
		files[name] = m[2]
	}
	return files
}

// commands returns the lines of the page's command block, the first
// fenced sh block after "## The commands".
func commands(t *testing.T, text string) []string {
	t.Helper()
	return shLinesAfter(t, text, "## The commands\n")
}

// shLinesAfter returns the non-empty lines, trimmed, of the first fenced
// sh block after marker in text, failing when there is none.
func shLinesAfter(t *testing.T, text, marker string) []string {
	t.Helper()
	_, after, ok := strings.Cut(text, marker)
	require.True(t, ok, "%s has no %q", page, marker)
	_, after, ok = strings.Cut(after, "```sh\n")
	require.True(t, ok, "%s: no sh block follows %q", page, marker)
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok, "%s: the sh block after %q has no end", page, marker)
	var lines []string
	for l := range strings.Lines(block) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestGettingStarted writes the page's files into a fresh module beside
// a link to this checkout, as the page lays them out, and runs the
// page's commands 3 to 6 on it with the module proxy off: the replace
// tool, its check, go mod tidy, go vet, and both go test runs. Then it
// runs commands 7 to 10 and the kubectl steps (runAsUser): the operator
// against kubetest as its ServiceAccount.
func TestGettingStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("links a test binary that holds an API server")
	}
	_, err := exec.LookPath("kubectl")
	require.NoError(t, err, kubectlMissing)
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	text := string(data)

	cmds := commands(t, text)
	require.LessOrEqual(t, len(cmds), 10, "%s promises ten commands at most", page)
	for _, want := range []string{"go run -C ../loam ./cmd/kubetestmod $PWD/go.mod", "go mod tidy", "go test . -update", "go test ./..."} {
		require.True(t, hasCommand(cmds, want), "%s's commands run %q, which the test runs", page, want)
	}

	files := pageFiles(t, text)
	for _, name := range []string{"go.mod", "website.go", "cmd/website/main.go", "connection.go", "website_test.go", "e2e/website_test.go", "rbac.yaml", "hello.yaml"} {
		require.Contains(t, files, name, "%s has no block for %s", page, name)
	}
	operator := strings.Count(files["website.go"], "\n") + strings.Count(files["cmd/website/main.go"], "\n")
	require.LessOrEqual(t, operator, 100, "%s promises an operator of 100 lines at most", page)

	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.Symlink(checkout, filepath.Join(root, "loam")))
	dir := filepath.Join(root, "website")
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	}
	gomod := filepath.Join(dir, "go.mod")

	// 3: the replace block, written, then checked.
	run(t, dir, "go", "run", "-C", "../loam", "./cmd/kubetestmod", gomod)
	out := run(t, dir, "go", "run", "-C", "../loam", "./cmd/kubetestmod", "-check", gomod)
	require.Contains(t, out, "has the 31 replaces")

	// The proxy is off, so go.sum can't be checked against the checksum
	// database: start from kubetest's, which holds every module the page
	// builds, and which tidy trims.
	sum, err := os.ReadFile(filepath.Join(checkout, "kubetest", "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o600))

	run(t, dir, "go", "mod", "tidy") // 4
	// 7's command, kubetest's, loads from the go.mod and go.sum tidy
	// left, with no entry missing: go run builds it from them.
	run(t, dir, "go", "list", "-deps", "github.com/loam-dev/loam/kubetest/cmd/kubetest")
	goroot := strings.TrimSpace(run(t, dir, "go", "env", "GOROOT"))
	require.Empty(t, run(t, dir, filepath.Join(goroot, "bin", "gofmt"), "-l", "."), "gofmt would change the page's Go files")
	run(t, dir, "go", "vet", "./...")
	// go vet has just run every analyzer on these packages; the vet that
	// go test runs first is a subset of them with other flags, so it would
	// analyse every package they import for its facts again, kubetest's
	// API server among them, to find nothing go vet did not.
	run(t, dir, "go", "test", "-count=1", "-ldflags=-w", "-vet=off", ".", "-update") // 5
	_, err = os.Stat(filepath.Join(dir, "crd.yaml"))
	require.NoError(t, err, "go test . -update writes crd.yaml")
	out = run(t, dir, "go", "test", "-count=1", "-ldflags=-w", "-vet=off", "./...") // 6
	require.Contains(t, out, "ok  \texample.com/website/e2e")

	runAsUser(t, text, cmds, root, dir) // 7 to 10, and the kubectl steps
}

// hasCommand reports whether one of the lines runs want.
func hasCommand(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// run runs name with args in dir, offline, with make test's build flags,
// and returns its output; it fails the test with the output if the
// command fails. It sets no -mod=mod, which would add what the go.mod or
// go.sum lacks: the commands read them as a person's do.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-buildvcs=false -trimpath")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "%s %s in %s:\n%s", name, strings.Join(args, " "), dir, out.String())
	return out.String()
}
