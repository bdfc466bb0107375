package transport

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/loam-dev/loam/ports"
)

// RequestsTotalName is client-go's rest_client_requests_total, as
// controller-runtime exports it: every request the transport sends, a
// watch's included, by code, method and host.
const RequestsTotalName = "rest_client_requests_total"

// errorCode is the code of a request that got no response, as client-go
// labels it.
const errorCode = "<error>"

// requestCounter counts every request through it in
// rest_client_requests_total, once its response's headers arrive, or its
// error: a watch counts when it starts, as client-go's does. It is the
// transport's outermost layer, so a request failure injection aborts
// counts as client-go's would, with the code the injected answer has.
type requestCounter struct {
	next    http.RoundTripper
	counter metric.Int64Counter
}

func newRequestCounter(next http.RoundTripper, mp metric.MeterProvider) (*requestCounter, error) {
	c, err := mp.Meter(ports.ScopeName).Int64Counter(RequestsTotalName,
		metric.WithDescription("Number of HTTP requests, partitioned by status code, method, and host."))
	if err != nil {
		return nil, fmt.Errorf("instrument %s: %w", RequestsTotalName, err)
	}
	return &requestCounter{next: next, counter: c}, nil
}

// RoundTrip sends r and counts it.
func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	code := errorCode
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	c.counter.Add(context.WithoutCancel(r.Context()), 1, metric.WithAttributes(
		attribute.String("code", code),
		attribute.String("method", r.Method),
		attribute.String("host", r.URL.Host),
	))
	return resp, err
}
