package kube

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/ports"
)

// telemetry is what a Controller reports through: the recorder of its
// reconciles, its work queue's metrics (nil records none) and the logger
// client-go's own records go to.
type telemetry struct {
	recorder ports.Recorder
	metrics  workqueue.MetricsProvider
	logger   logr.Logger
}

// telemetryOf returns the telemetry of a Controller named name, of kind's
// objects, on s's providers.
func telemetryOf(*app.Setup, string, string) (telemetry, error) {
	return telemetry{recorder: noRecorder{}, logger: logr.Discard()}, nil
}

// noRecorder records nothing.
type noRecorder struct{}

func (noRecorder) ReconcileStarted(ctx context.Context, _ ports.Key) context.Context { return ctx }
func (noRecorder) ScenarioStripped(context.Context, error)                           {}
func (noRecorder) ReconcileEnded(context.Context, ports.Key, ports.Report)           {}
