package telemetry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// docs is the repository's docs directory.
var docs = filepath.Join("..", "..", "docs")

// loamName is a series' or a label's name of loam's in a query.
var loamName = regexp.MustCompile(`\bloam_[a-z0-9_]+`)

// exportedNames returns, of what a scrape shows, the series a query can
// name — a histogram's _bucket, _sum and _count — and the labels.
func exportedNames(t *testing.T) (series, labels map[string]string) {
	t.Helper()
	series, labels = map[string]string{}, map[string]string{}
	families := scrape(t)
	delete(families, "target_info") // the resource's, not a controller's
	for family, e := range families {
		if e.Type == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				series[family+suffix] = family
			}
		} else {
			series[family] = family
		}
		for _, l := range e.Labels {
			labels[l] = l
		}
	}
	return series, labels
}

// checkQuery asserts query names at least one series a controller
// exports, and no name of loam's that it doesn't, and returns the families
// it names.
func checkQuery(t *testing.T, where, query string, series, labels map[string]string) []string {
	t.Helper()
	var families []string
	for _, name := range loamName.FindAllString(query, -1) {
		if family, ok := series[name]; ok {
			families = append(families, family)
			continue
		}
		_, ok := labels[name]
		require.True(t, ok, "%s: %q names %s, which no controller exports", where, query, name)
	}
	require.NotEmpty(t, families, "%s: %q names no series of a controller's", where, query)
	return families
}

// grafanaDashboard is what the test reads of the dashboard.
type grafanaDashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func TestTheDashboardQueriesOnlyWhatAControllerExports(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(docs, "grafana", "loam-controller.json"))
	require.NoError(t, err)
	var d grafanaDashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)

	series, labels := exportedNames(t)
	queried := map[string]bool{}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			checkQuery(t, "variable "+v.Name, v.Definition, series, labels)
		}
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q", p.Title)
		var refs []string
		for _, target := range p.Targets {
			require.NotContains(t, refs, target.RefID, "panel %q", p.Title)
			refs = append(refs, target.RefID)
			require.Contains(t, target.Expr, `loam_kube_controller_name=~"$controller"`,
				"panel %q follows the controller variable", p.Title)
			for _, f := range checkQuery(t, "panel "+p.Title, target.Expr, series, labels) {
				queried[f] = true
			}
		}
	}

	var families []string
	for _, f := range series {
		if !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	for _, f := range families {
		require.True(t, queried[f], "no panel shows %s", f)
	}
}

// promqlBlocks returns the queries in the ```promql blocks of the
// Markdown in text, one per line that isn't a comment.
func promqlBlocks(text string) []string {
	var queries []string
	inBlock := false
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "```promql":
			inBlock = true
		case line == "```":
			inBlock = false
		case inBlock && line != "" && !strings.HasPrefix(line, "#"):
			queries = append(queries, line)
		}
	}
	return queries
}

func TestTheDocsPromQLQueriesOnlyWhatAControllerExports(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(docs, "*.md"))
	require.NoError(t, err)
	series, labels := exportedNames(t)
	var n int
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, q := range promqlBlocks(string(raw)) {
			checkQuery(t, filepath.Base(page), q, series, labels)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 3, "the docs show the three queries of the Telemetry section")
}
