package gettingstarted

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateTOC = flag.Bool("update-toc", false, "rewrite docs/kubernetes.md's table of contents from its headings")

// reference is the page whose table of contents the test keeps.
const reference = "../../docs/kubernetes.md"

// The table of contents sits between these two comments.
const (
	tocStart = "<!-- toc: written by go test ./gettingstarted -update-toc, from the ## and ### headings -->\n"
	tocEnd   = "<!-- /toc -->\n"
)

// TestKubernetesMD_table_of_contents_matches_its_headings fails when a
// heading of docs/kubernetes.md is added, renamed or removed and its
// table of contents not; -update-toc rewrites it.
func TestKubernetesMD_table_of_contents_matches_its_headings(t *testing.T) {
	data, err := os.ReadFile(reference)
	require.NoError(t, err)
	text := string(data)
	before, rest, ok := strings.Cut(text, tocStart)
	require.True(t, ok, "%s has no table of contents: put %q and %q after its introduction, and run with -update-toc", reference, tocStart, tocEnd)
	old, after, ok := strings.Cut(rest, tocEnd)
	require.True(t, ok, "%s: the table of contents has no end, %q", reference, tocEnd)
	want := toc(after)
	if *updateTOC {
		require.NoError(t, os.WriteFile(reference, []byte(before+tocStart+want+tocEnd+after), 0o644))
		return
	}
	require.Equal(t, want, old, "%s's table of contents is stale: run go test ./gettingstarted -run TOC -update-toc in examples", reference)
}

// heading is a Markdown ATX heading.
var heading = regexp.MustCompile(`^(#{1,6}) (.+)$`)

// section is one heading of a page outside fenced code: its level, its
// text and the anchor GitHub gives it.
type section struct {
	level        int
	text, anchor string
}

// sections returns text's headings, with anchors numbered as GitHub
// numbers a repeated one (-1, -2, …).
func sections(text string) []section {
	var out []section
	seen := map[string]int{}
	fenced := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		anchor := slug(m[2])
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		out = append(out, section{level: len(m[1]), text: m[2], anchor: anchor})
	}
	return out
}

// toc returns the table of contents of text: a list item for each ## and
// ### heading, linked to its anchor.
func toc(text string) string {
	var b strings.Builder
	for _, s := range sections(text) {
		switch s.level {
		case 2:
			fmt.Fprintf(&b, "- [%s](#%s)\n", s.text, s.anchor)
		case 3:
			fmt.Fprintf(&b, "  - [%s](#%s)\n", s.text, s.anchor)
		}
	}
	return b.String()
}

// link is a Markdown link to an anchor of kubernetes.md or of the page
// itself.
var link = regexp.MustCompile(`\]\((kubernetes\.md)?#([^)]+)\)`)

// TestGettingStarted_links_name_existing_anchors checks every link of
// the getting-started page to a section, its own or docs/kubernetes.md's.
func TestGettingStarted_links_name_existing_anchors(t *testing.T) {
	anchors := func(file string) map[string]bool {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		set := map[string]bool{}
		for _, s := range sections(string(data)) {
			set[s.anchor] = true
		}
		return set
	}
	own, ref := anchors(page), anchors(reference)
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	links := link.FindAllStringSubmatch(string(data), -1)
	require.NotEmpty(t, links)
	for _, m := range links {
		if m[1] == "" {
			require.True(t, own[m[2]], "%s links #%s, which it has no heading for", page, m[2])
		} else {
			require.True(t, ref[m[2]], "%s links %s#%s, which has no such heading", page, reference, m[2])
		}
	}
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// and every character but letters, digits, hyphens and underscores
// dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug_is_githubs_anchor(t *testing.T) {
	for h, want := range map[string]string{
		"Connecting":                                    "connecting",
		"`Config()`, for client-go's clients":           "config-for-client-gos-clients",
		"Changes first: the priority queue":             "changes-first-the-priority-queue",
		"Namespaces: one, a set, or every one":          "namespaces-one-a-set-or-every-one",
		"The retries' bucket: RetryRate and RetryBurst": "the-retries-bucket-retryrate-and-retryburst",
	} {
		require.Equal(t, want, slug(h), h)
	}
}
