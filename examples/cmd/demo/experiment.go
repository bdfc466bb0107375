package main

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/baggage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

// experimentID identifies the demo's experiment on everything it causes.
const experimentID = "demo-pages-abort"

// experimentLimit is how long the demo's experiment lasts at most: it ends
// by itself then, should the demo die before it removes the annotation.
const experimentLimit = 5 * time.Minute

// experiment aborts experimentOn's applies of its Deployment, resizes it,
// shows the failure and the backoff, and ends the experiment.
func (d *demo) experiment(ctx context.Context, codec *jsonscenario.Codec) error {
	ends := time.Now().Add(experimentLimit).UTC().Truncate(time.Second)
	value, err := annotationValue(codec, fit.Scenario{
		Rules: []fit.Rule{{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}}},
		Ends:  ends,
		ID:    experimentID,
	})
	if err != nil {
		return err
	}
	d.say("")
	d.say("Experiment %s: the reconciles of %s abort every apply of a Deployment (kube:deployments.apps:patch),", experimentID, experimentOn)
	d.say("until %s at the latest, should nobody end it first.", ends.Format(time.RFC3339))
	d.say("  %s: %s", scenarioAnnotation, value)
	before := d.reconciles(experimentOn)
	if err := d.patch(ctx, experimentOn, map[string]any{"metadata": map[string]any{"annotations": map[string]any{scenarioAnnotation: value}}}); err != nil {
		return err
	}
	d.say("Resizing %s from 2 to 3, so its next reconcile must apply its Deployment...", experimentOn)
	if err := d.patch(ctx, experimentOn, map[string]any{"spec": map[string]any{"size": 3}}); err != nil {
		return err
	}
	if err := d.waitFor(ctx, experimentOn+"'s ApplyFailed condition", func(s state) bool {
		return s.available != nil && s.available.Reason == "ApplyFailed" && s.available.ObservedGeneration == s.generation
	}, experimentOn); err != nil {
		return err
	}
	s, err := d.state(ctx, experimentOn)
	if err != nil {
		return err
	}
	d.say("  Available=%s reason=%s", s.available.Status, s.available.Reason)
	d.say("  message: %s", s.available.Message)
	d.say("  its Deployment still has %d replicas: the apply never left the process.", s.replicas)
	d.say("Each failure retries it after a backoff that doubles, so its reconciles slow down:")
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		d.say("  reconciles of %s since the experiment began: %d", experimentOn, d.reconciles(experimentOn)-before)
	}
	d.say("  waits between its failed reconciles: %s", formatWaits(d.failedWaits(experimentOn)))
	d.say("The others are not touched by it, and stay available (* marks the annotated one):")
	if err := d.table(ctx); err != nil {
		return err
	}

	d.say("")
	d.say("Ending the experiment: removing the annotation reconciles %s at once, without the scenario.", experimentOn)
	if err := d.patch(ctx, experimentOn, map[string]any{"metadata": map[string]any{"annotations": map[string]any{scenarioAnnotation: nil}}}); err != nil {
		return err
	}
	if err := d.waitFor(ctx, experimentOn+"'s Deployment to be resized", func(s state) bool {
		return s.replicas == 3 && s.available != nil && s.available.Reason != "ApplyFailed"
	}, experimentOn); err != nil {
		return err
	}
	if err := d.deploymentReady(ctx, experimentOn); err != nil {
		return err
	}
	if err := d.waitFor(ctx, experimentOn+" to be available again", func(s state) bool {
		return s.ready == 3 && s.available != nil && s.available.Status == metav1.ConditionTrue && s.available.ObservedGeneration == s.generation
	}, experimentOn); err != nil {
		return err
	}
	d.say("Recovered: its Deployment has 3 replicas, and (once the Deployment controller's part is played) it is available:")
	return d.table(ctx)
}

// annotationValue returns the value of an annotation that carries s,
// written with codec: the W3C baggage fit.ContextWithScenario leaves.
func annotationValue(codec fit.Encoder, s fit.Scenario) (string, error) {
	ctx, err := fit.ContextWithScenario(context.Background(), codec, s)
	if err != nil {
		return "", err
	}
	return baggage.FromContext(ctx).String(), nil
}

// patch applies a JSON merge patch to the Memcached name.
func (d *demo) patch(ctx context.Context, name string, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = d.memcacheds.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}
