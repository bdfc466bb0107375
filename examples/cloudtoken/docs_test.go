package cloudtoken

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// section returns the section of the Markdown doc headed heading, up to
// the next heading of its level or above outside a code block.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	level := strings.Index(heading, " ")
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	require.NotEqual(t, -1, start, "the doc has no heading %q", heading)
	fenced := false
	for i := start + 1; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if !fenced && hashes > 0 && hashes <= level && strings.HasPrefix(line[hashes:], " ") {
			return strings.Join(lines[start+1:i], "\n")
		}
	}
	return strings.Join(lines[start+1:], "\n")
}

// goBlocks returns the Go code blocks of Markdown text.
func goBlocks(text string) []string {
	var blocks []string
	for {
		i := strings.Index(text, "```go\n")
		if i < 0 {
			return blocks
		}
		text = text[i+len("```go\n"):]
		j := strings.Index(text, "```\n")
		if j < 0 {
			return blocks
		}
		blocks = append(blocks, text[:j])
		text = text[j:]
	}
}

// The examples/connection package's errors send the reader to
// docs/kubernetes.md "Connecting to cloud clusters": each of its Go
// blocks that defines a function is this module's code, word for word,
// so that the docs show code that compiles and is tested.
func TestDocs_quote_the_module_s_code(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubernetes.md")
	require.NoError(t, err)
	text := section(t, string(doc), "### Connecting to cloud clusters")

	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var code strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		code.Write(b)
	}

	quoted := 0
	for _, b := range goBlocks(text) {
		if !strings.HasPrefix(b, "func ") {
			continue // an Init's lines, not a definition
		}
		require.Contains(t, code.String(), b, "the docs quote code that is not the module's")
		quoted++
	}
	require.GreaterOrEqual(t, quoted, 6, "the section quotes EKSToken, EKS, EKSFromSetup, GKE, GKEDefault, AKS and AKSDefault")
}
