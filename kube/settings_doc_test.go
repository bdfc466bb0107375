package kube

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// typeDocs returns the doc comment of each type declared in settings.go,
// as go doc shows it.
func typeDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "settings.go", nil, parser.ParseComments)
	require.NoError(t, err)
	p, err := doc.NewFromFiles(fset, []*ast.File{f}, "github.com/loam-dev/loam/kube")
	require.NoError(t, err)
	docs := make(map[string]string, len(p.Types))
	for _, typ := range p.Types {
		docs[typ.Name] = typ.Doc
	}
	return docs
}

// Settings and LeaderElection are domain/settings' types, whose field
// docs go doc does not show on kube's aliases: each alias's own doc lists
// every field, its type and its default, so `go doc kube.Settings` is
// where a reader learns them. The test fails when a field is added to
// the domain's struct and not to the list, or a default changes and the
// list doesn't.
func TestSettingsDocListsEveryFieldWithItsDefault(t *testing.T) {
	docs := typeDocs(t)
	d := DefaultSettings()
	for _, tc := range []struct {
		typ      reflect.Type
		defaults map[string]string // a field's default as the doc writes it
	}{
		{reflect.TypeFor[Settings](), map[string]string{
			"Name":             "No default",
			"Namespace":        `"" (the default)`,
			"Namespaces":       "nil (the default)",
			"LabelSelector":    `"" (the default)`,
			"Workers":          "Default " + strconv.Itoa(d.Workers),
			"Shards":           "Default 0",
			"Resync":           "Default " + fmtDuration(d.Resync),
			"RetryBaseDelay":   "Defaults " + fmtDuration(d.RetryBaseDelay) + " and " + fmtDuration(d.RetryMaxDelay),
			"RetryRate":        "Defaults " + strconv.Itoa(int(d.RetryRate)) + " and " + strconv.Itoa(d.RetryBurst),
			"ReconcileTimeout": "Default " + fmtDuration(d.ReconcileTimeout),
			"FailureEvents":    "Default (and zero) FailureEventsOn",
			"LeaderElection": "LeaseDuration " + fmtDuration(d.LeaderElection.LeaseDuration) +
				", RenewDeadline " + fmtDuration(d.LeaderElection.RenewDeadline) +
				", RetryPeriod " + fmtDuration(d.LeaderElection.RetryPeriod) +
				", DrainTimeout " + fmtDuration(d.LeaderElection.DrainTimeout),
		}},
		{reflect.TypeFor[LeaderElection](), map[string]string{
			"Namespace":     "No default",
			"Identity":      "No default",
			"LeaseDuration": "Default " + fmtDuration(d.LeaderElection.LeaseDuration),
			"RenewDeadline": "Default " + fmtDuration(d.LeaderElection.RenewDeadline),
			"RetryPeriod":   "Default " + fmtDuration(d.LeaderElection.RetryPeriod),
			"DrainTimeout":  "Default " + fmtDuration(d.LeaderElection.DrainTimeout),
		}},
	} {
		t.Run(tc.typ.Name(), func(t *testing.T) {
			items := listItems(docs[tc.typ.Name()])
			for i := range tc.typ.NumField() {
				f := tc.typ.Field(i)
				item, ok := items[f.Name]
				require.True(t, ok, "the doc of %s lists no field %s", tc.typ.Name(), f.Name)
				require.Contains(t, item[0], " "+typeName(f.Type), "the item of %s names its type", f.Name)
				require.Contains(t, item[1], tc.defaults[f.Name], "the item of %s gives its default", f.Name)
			}
			require.Len(t, items, tc.typ.NumField(), "every item of the doc of %s is a field", tc.typ.Name())
		})
	}
}

// listItems returns the fields a doc's list names, each with its item's
// head, "A, B type" or "A typeA, B typeB", and its text; an item naming
// two fields is each field's.
func listItems(text string) map[string][2]string {
	items := map[string][2]string{}
	for _, it := range strings.Split(text, "\n  - ")[1:] {
		it, _, _ = strings.Cut(it, "\n\n")
		it = strings.Join(strings.Fields(it), " ")
		head, _, ok := strings.Cut(it, ":")
		if !ok {
			continue
		}
		for part := range strings.SplitSeq(head, ", ") {
			items[strings.Fields(part)[0]] = [2]string{head, it}
		}
	}
	return items
}

// typeName is a field's type as the doc writes it: a type of
// domain/settings by its name, which kube re-exports, any other as Go
// prints it.
func typeName(t reflect.Type) string {
	if t.PkgPath() == reflect.TypeFor[Settings]().PkgPath() {
		return t.Name()
	}
	return t.String()
}

// fmtDuration writes d as the docs do: 10h, 5m, 15s, 5ms, 1000s.
func fmtDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d < time.Hour && d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d%time.Second == 0:
		return strconv.Itoa(int(d/time.Second)) + "s"
	default:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	}
}
