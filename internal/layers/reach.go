package layers

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// ReachRule forbids a package, and every package it imports directly or
// through others, to import the packages Deny lists. Check reads the
// imports of loam's own files; a ReachRule follows them into every
// module, which is where a process global hides: kube imports nothing of
// the API server's, but one of its imports may.
type ReachRule struct {
	// From is the import path of the package whose whole import graph
	// the rule covers.
	From string
	// Why says what the rule protects, for the violation's message.
	Why string
	// Deny lists import paths that are forbidden, each with every package
	// below it.
	Deny []string
}

// ReachViolation is one forbidden package that a ReachRule's From
// reaches.
type ReachViolation struct {
	// Chain is the shortest chain of imports from the rule's From to the
	// forbidden package, both included.
	Chain []string
	Why   string // the broken rule's Why
}

func (v ReachViolation) String() string {
	return strings.Join(v.Chain, " → ") + ": " + v.Why
}

// Graph maps a package's import path to the import paths of the packages
// its non-test files import.
type Graph map[string][]string

// ReachRules are loam's rules on what its packages may reach.
func ReachRules() []ReachRule {
	return []ReachRule{
		{
			From: Module + "/" + Facade,
			Why: "nothing global: a program that imports kube must not get the API server's process globals — " +
				"its feature gates, its legacy metrics registry, its admission machinery — with their package inits",
			Deny: []string{
				"k8s.io/component-base/featuregate",
				"k8s.io/component-base/metrics/legacyregistry",
				"k8s.io/apiserver/pkg/util/feature",
				"k8s.io/apiserver/pkg/admission",
			},
		},
		{
			From: Module + "/" + Facade,
			Why: "no CEL unless asked: cel-go's and the API server's CEL libraries' package inits cost every program " +
				"that links them over a megabyte at start (benchmarks/cmd/initcost); only kube/webhookcel, " +
				"which an operator imports for match conditions, brings them",
			Deny: []string{
				Module + "/adapters/celcheck",
				"github.com/google/cel-go",
				"cel.dev/expr",
				"k8s.io/apiserver/pkg/cel",
			},
		},
	}
}

// ImportGraph returns the import graph of pkgs and of every package they
// import, without their tests, as the go command in dir resolves them
// (go list -deps). It fails with the go command's message when a package
// can't be listed.
func ImportGraph(ctx context.Context, dir string, pkgs ...string) (Graph, error) {
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s in %s: %w: %s", strings.Join(pkgs, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	g := Graph{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			g[fields[0]] = fields[1:]
		}
	}
	return g, nil
}

// CheckReach returns every forbidden package that a rule's From reaches in
// g, each with the shortest chain of imports that leads to it, sorted by
// the forbidden package. It doesn't look past a forbidden package: what it
// imports is reported with it. A From absent from g reaches nothing.
func CheckReach(g Graph, rules []ReachRule) []ReachViolation {
	var found []ReachViolation
	for _, r := range rules {
		found = append(found, reach(g, r)...)
	}
	sort.SliceStable(found, func(i, j int) bool {
		return found[i].Chain[len(found[i].Chain)-1] < found[j].Chain[len(found[j].Chain)-1]
	})
	return found
}

// reach walks g breadth first from r.From, so the first chain to a
// package is a shortest one.
func reach(g Graph, r ReachRule) []ReachViolation {
	var found []ReachViolation
	parent := map[string]string{r.From: ""}
	queue := []string{r.From}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if denied(r, pkg) {
			found = append(found, ReachViolation{Chain: chain(parent, pkg), Why: r.Why})
			continue
		}
		for _, imp := range g[pkg] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = pkg
				queue = append(queue, imp)
			}
		}
	}
	return found
}

func denied(r ReachRule, pkg string) bool {
	for _, d := range r.Deny {
		if Under(pkg, d) {
			return true
		}
	}
	return false
}

// chain returns the path from the walk's start to pkg.
func chain(parent map[string]string, pkg string) []string {
	var c []string
	for p := pkg; p != ""; p = parent[p] {
		c = append(c, p)
	}
	for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
		c[i], c[j] = c[j], c[i]
	}
	return c
}
