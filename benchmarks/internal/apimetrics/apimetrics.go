// Package apimetrics reads what the API server counts about itself from
// its /metrics: the requests it served (apiserver_request_total) and the
// objects it stores (apiserver_storage_objects). The harness reads them
// before and after each run, so a run's figures are the API server's own
// count of what each controller asked of it.
package apimetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Request names one kind of request, as apiserver_request_total's labels
// do.
type Request struct {
	// Verb is the request's verb as the API server counts it: GET, LIST,
	// WATCH, POST, PUT, PATCH, APPLY (a server-side apply), DELETE, ...
	Verb string
	// Group, Resource and Subresource name what it was made to; the core
	// group is "".
	Group, Resource, Subresource string
	// Code is the HTTP status code of the answer.
	Code string
}

// String is the request as a person reads it: "APPLY memcacheds/status".
func (r Request) String() string {
	s := r.Verb + " " + r.Resource
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	return s
}

// Requests counts requests by kind.
type Requests map[Request]float64

// Sample is what one read of /metrics holds.
type Sample struct {
	// Requests is apiserver_request_total.
	Requests Requests
	// StoredObjects is apiserver_storage_objects summed over every
	// resource. The API server refreshes it once a minute
	// (--etcd-count-metric-poll-period), so it lags behind deletes.
	StoredObjects float64
}

// Read reads the API server's /metrics through client, which any
// clientset's Discovery().RESTClient() is.
func Read(ctx context.Context, client rest.Interface) (Sample, error) {
	body, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return Sample{}, fmt.Errorf("read the API server's /metrics: %w", err)
	}
	return Parse(bytes.NewReader(body))
}

// Parse reads a Sample from /metrics in Prometheus's text format.
func Parse(r io.Reader) (Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Sample{}, fmt.Errorf("parse the API server's /metrics: %w", err)
	}
	s := Sample{Requests: Requests{}}
	if f := families["apiserver_request_total"]; f != nil {
		for _, m := range f.GetMetric() {
			l := labels(m)
			s.Requests[Request{
				Verb: l["verb"], Group: l["group"], Resource: l["resource"],
				Subresource: l["subresource"], Code: l["code"],
			}] += m.GetCounter().GetValue()
		}
	}
	if f := families["apiserver_storage_objects"]; f != nil {
		for _, m := range f.GetMetric() {
			// -1 is the API server's mark of a failed count.
			s.StoredObjects += max(m.GetGauge().GetValue(), 0)
		}
	}
	return s, nil
}

func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// Since returns the requests counted in r and not in before.
func (r Requests) Since(before Requests) Requests {
	d := Requests{}
	for k, v := range r {
		if dv := v - before[k]; dv > 0 {
			d[k] = dv
		}
	}
	return d
}

// Sum returns how many requests r counts for which keep is true.
func (r Requests) Sum(keep func(Request) bool) float64 {
	var n float64
	for k, v := range r {
		if keep(k) {
			n += v
		}
	}
	return n
}

// ByKind returns r's counts for which keep is true, summed over their
// groups and codes, by their String, sorted by count, highest first.
func (r Requests) ByKind(keep func(Request) bool) []Count {
	sums := map[string]float64{}
	for k, v := range r {
		if keep(k) {
			sums[k.String()] += v
		}
	}
	counts := make([]Count, 0, len(sums))
	for _, kind := range slices.Sorted(maps.Keys(sums)) {
		counts = append(counts, Count{Kind: kind, N: sums[kind]})
	}
	slices.SortStableFunc(counts, func(a, b Count) int {
		switch {
		case a.N > b.N:
			return -1
		case a.N < b.N:
			return 1
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return counts
}

// Count is how many requests of one kind there were.
type Count struct {
	Kind string
	N    float64
}

// IsWrite reports whether verb changes what is stored.
func IsWrite(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}
