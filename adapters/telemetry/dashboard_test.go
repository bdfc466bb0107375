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

// selected is a series a query selects: its name, written with a
// selector's braces, as every query of the dashboard's writes it.
var selected = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// grouped is a by or without clause's labels.
var grouped = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)

// matcher is a label a selector matches.
var matcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)

// scrapeLabels are the labels Prometheus adds to what it scrapes, and a
// histogram's and a summary's own.
var scrapeLabels = []string{"instance", "job", "le", "quantile"}

// exportedNames returns, of what an operator's /metrics shows — gather's
// reconciles and queue with controller-runtime's names too, and
// gatherOperator's shards, Leases, API requests, webhook reviews and Go
// runtime — the series a query can name (a histogram's _bucket, _sum and
// _count, a summary's own name, _sum and _count) and the labels, and the
// families of loam's own.
func exportedNames(t *testing.T) (series, labels map[string]string, loams []string) {
	t.Helper()
	series, labels = map[string]string{}, map[string]string{}
	families := exportedOf(append(gather(t, true), gatherOperator(t)...))
	delete(families, "target_info") // the resource's, not a controller's
	for family, e := range families {
		switch e.Type {
		case dto.MetricType_HISTOGRAM:
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				series[family+suffix] = family
			}
		case dto.MetricType_SUMMARY:
			for _, suffix := range []string{"", "_sum", "_count"} {
				series[family+suffix] = family
			}
		default:
			series[family] = family
		}
		for _, l := range e.Labels {
			labels[l] = l
		}
		if strings.HasPrefix(family, "loam_") {
			loams = append(loams, family)
		}
	}
	for _, l := range scrapeLabels {
		labels[l] = l
	}
	return series, labels, loams
}

// checkQuery asserts query selects at least one series an operator
// exports, and none it doesn't; that every label it groups or matches by
// is one the series carry or Prometheus adds; and that every name of
// loam's in it is such a series or label. It returns the families it
// selects.
func checkQuery(t *testing.T, where, query string, series, labels map[string]string) []string {
	t.Helper()
	var families []string
	for _, m := range selected.FindAllStringSubmatch(query, -1) {
		family, ok := series[m[1]]
		require.True(t, ok, "%s: %q selects %s, which no operator exports", where, query, m[1])
		families = append(families, family)
	}
	for _, m := range grouped.FindAllStringSubmatch(query, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			l = strings.TrimSpace(l)
			_, ok := labels[l]
			require.True(t, ok, "%s: %q groups by %s, which no series carries", where, query, l)
		}
	}
	for _, m := range matcher.FindAllStringSubmatch(query, -1) {
		_, ok := labels[m[1]]
		require.True(t, ok, "%s: %q matches %s, which no series carries", where, query, m[1])
	}
	for _, name := range loamName.FindAllString(query, -1) {
		family, isSeries := series[name]
		_, isLabel := labels[name]
		require.True(t, isSeries || isLabel, "%s: %q names %s, which no operator exports", where, query, name)
		if isSeries && !slices.Contains(families, family) {
			families = append(families, family) // selected without braces
		}
	}
	require.NotEmpty(t, families, "%s: %q selects no series", where, query)
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

// TestTheDashboardQueriesOnlyWhatAnOperatorExports: every query of the
// dashboard selects series an operator's /metrics really exports, by
// labels they carry; a query of a controller's follows the controller
// variable and every other the job variable; the rows of the controller's
// reconciles and queue, its shards, the webhooks, the API client and the
// Go runtime each have panels; and every family of loam's is shown.
func TestTheDashboardQueriesOnlyWhatAnOperatorExports(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(docs, "grafana", "loam-controller.json"))
	require.NoError(t, err)
	var d grafanaDashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)

	series, labels, loams := exportedNames(t)
	queried := map[string]bool{}
	var variables []string
	for _, v := range d.Templating.List {
		variables = append(variables, v.Name)
		if v.Definition != "" {
			checkQuery(t, "variable "+v.Name, v.Definition, series, labels)
		}
	}
	require.Subset(t, variables, []string{"datasource", "controller", "job"})
	rows := map[string]int{}
	row := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			row = p.Title
			rows[row] = 0
			continue
		}
		rows[row]++
		require.NotEmpty(t, p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q", p.Title)
		var refs []string
		for _, target := range p.Targets {
			require.NotContains(t, refs, target.RefID, "panel %q", p.Title)
			refs = append(refs, target.RefID)
			families := checkQuery(t, "panel "+p.Title, target.Expr, series, labels)
			for _, f := range families {
				queried[f] = true
			}
			if strings.HasPrefix(families[0], "loam_kube_controller_") {
				require.Contains(t, target.Expr, `loam_kube_controller_name=~"$controller"`,
					"panel %q follows the controller variable", p.Title)
			} else {
				require.Contains(t, target.Expr, `job=~"$job"`, "panel %q follows the job variable", p.Title)
			}
		}
	}
	for _, r := range []string{"Reconciles", "Work queue", "Shards", "Webhooks", "API client", "Go runtime"} {
		require.Positive(t, rows[r], "the row %q has no panels", r)
	}
	for _, f := range loams {
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
	series, labels, _ := exportedNames(t)
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
