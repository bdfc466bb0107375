package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loam-dev/loam/examples/memcached"
)

// state is what the demo shows of one Memcached.
type state struct {
	generation int64
	size       int64
	replicas   int64 // its Deployment's spec; 0 when there is none
	pdb        bool
	ready      int64
	available  *metav1.Condition
	annotated  bool
}

// state reads the Memcached name, its Deployment and its budget.
func (d *demo) state(ctx context.Context, name string) (state, error) {
	u, err := d.memcacheds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return state{}, err
	}
	var m memcached.Object
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m); err != nil {
		return state{}, err
	}
	s := state{
		generation: m.Generation,
		size:       int64(m.Spec.Size),
		ready:      int64(m.Status.ReadyReplicas),
		available:  meta.FindStatusCondition(m.Status.Conditions, "Available"),
	}
	_, s.annotated = m.Annotations[scenarioAnnotation]
	dep, err := d.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return state{}, err
	default:
		s.replicas = int64(*dep.Spec.Replicas)
	}
	_, err = d.kube.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return state{}, err
	default:
		s.pdb = true
	}
	return s, nil
}

// waitFor waits until cond holds of the Memcached name, or fails after
// patience, or when the operator exits.
func (d *demo) waitFor(ctx context.Context, what string, cond func(state) bool, name string) error {
	deadline := time.Now().Add(patience)
	for {
		s, err := d.state(ctx, name)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if cond(s) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not within %s; last seen %+v", what, patience, s)
		}
		select {
		case code := <-d.operator:
			return fmt.Errorf("waiting for %s: the operator exited with %d", what, code)
		default:
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// table prints every Memcached's state.
func (d *demo) table(ctx context.Context) error {
	d.say("  %-9s %-5s %-11s %-4s %-6s %-10s %s", "NAME", "SIZE", "DEPLOYMENT", "PDB", "READY", "AVAILABLE", "REASON")
	for _, c := range caches {
		s, err := d.state(ctx, c.name)
		if err != nil {
			return err
		}
		pdb := "no"
		if s.pdb {
			pdb = "yes"
		}
		avail, reason := "-", "-"
		if s.available != nil {
			avail, reason = string(s.available.Status), s.available.Reason
		}
		name := c.name
		if s.annotated {
			name += "*"
		}
		d.say("  %-9s %-5d %-11s %-4s %-6d %-10s %s", name, s.size, fmt.Sprintf("%d replicas", s.replicas), pdb, s.ready, avail, reason)
	}
	return nil
}

// names lists the demo's Memcacheds.
func names() string {
	var n []string
	for _, c := range caches {
		n = append(n, fmt.Sprintf("%s (size %d)", c.name, c.size))
	}
	return strings.Join(n, ", ")
}
