package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// reconciles counts the operator's reconciles of the Memcached name that
// have ended.
func (d *demo) reconciles(name string) int {
	n := 0
	for _, s := range d.spans.Ended() {
		if s.Name() == "reconcile Memcached" && objectName(s) == name {
			n++
		}
	}
	return n
}

// failedWaits returns how long the Memcached name waited between each of
// its failed reconciles that have ended and the next: from the end of one
// to the start of the next, which is the backoff's delay.
func (d *demo) failedWaits(name string) []time.Duration {
	var failed []sdktrace.ReadOnlySpan
	for _, s := range d.spans.Ended() {
		if s.Name() == "reconcile Memcached" && objectName(s) == name && s.Status().Code == codes.Error {
			failed = append(failed, s)
		}
	}
	slices.SortFunc(failed, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	var waits []time.Duration
	for i := 1; i < len(failed); i++ {
		waits = append(waits, failed[i].StartTime().Sub(failed[i-1].EndTime()))
	}
	return waits
}

// formatWaits writes waits to the millisecond, separated by spaces.
func formatWaits(waits []time.Duration) string {
	out := make([]string, len(waits))
	for i, w := range waits {
		out[i] = w.Round(time.Millisecond).String()
	}
	return strings.Join(out, " ")
}

// objectName is the reconciled object's name on a reconcile's span.
func objectName(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == "loam.kube.object.name" {
			return kv.Value.AsString()
		}
	}
	return ""
}

// printTrace prints the first failed reconcile of experimentOn as a tree:
// the reconcile's span, the API requests it made, and the events on each.
func (d *demo) printTrace() {
	ended := d.spans.Ended()
	var root sdktrace.ReadOnlySpan
	for _, s := range ended {
		if s.Name() == "reconcile Memcached" && objectName(s) == experimentOn && s.Status().Code == codes.Error {
			if root == nil || s.StartTime().Before(root.StartTime()) {
				root = s // the first: it also applied the ApplyFailed status
			}
		}
	}
	d.say("")
	if root == nil {
		d.say("No failed reconcile of %s was recorded.", experimentOn)
		return
	}
	d.say("One failed reconcile of %s, as its trace records it (trace %s):", experimentOn, root.SpanContext().TraceID())
	children := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		if s.SpanContext().TraceID() == root.SpanContext().TraceID() && s.Parent().IsValid() {
			p := s.Parent().SpanID().String()
			children[p] = append(children[p], s)
		}
	}
	for _, list := range children {
		slices.SortFunc(list, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	}
	d.printSpan(root, children, "  ")
}

// printSpan prints s, its events and its children, indented.
func (d *demo) printSpan(s sdktrace.ReadOnlySpan, children map[string][]sdktrace.ReadOnlySpan, indent string) {
	line := fmt.Sprintf("%s%s  %s", indent, s.Name(), s.EndTime().Sub(s.StartTime()).Round(10*time.Microsecond))
	if s.Status().Code == codes.Error {
		line += "  ERROR"
	}
	d.say("%s", line)
	var attrs []string
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case "k8s.namespace.name", "loam.kube.object.name", "http.request.method", "url.full", "http.response.status_code", "error.type":
			attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
	}
	if len(attrs) > 0 {
		d.say("%s  | %s", indent, strings.Join(attrs, " "))
	}
	for _, e := range s.Events() {
		var ea []string
		for _, kv := range e.Attributes {
			ea = append(ea, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
		d.say("%s  event %s %s", indent, e.Name, strings.Join(ea, " "))
	}
	for _, c := range children[s.SpanContext().SpanID().String()] {
		d.printSpan(c, children, indent+"    ")
	}
}
