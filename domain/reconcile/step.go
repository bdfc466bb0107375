package reconcile

import (
	"strconv"

	"github.com/loam-dev/loam/ports"
)

// Step is the one thing a pass over a key does.
type Step int

const (
	// StepSkip does nothing: the object is gone from the cache, or it is
	// being deleted and the controller's finalizer doesn't hold it.
	StepSkip Step = iota
	// StepAddFinalizer adds the controller's finalizer to an object that
	// lacks it, before its first reconcile. That is the whole pass: the
	// change it makes queues the object again.
	StepAddFinalizer
	// StepFinalize calls the Finalize of an object being deleted that the
	// controller's finalizer holds, then removes the finalizer.
	StepFinalize
	// StepReconcile calls the Reconciler and applies the status it returns.
	StepReconcile
)

// String returns the step's name, such as "add finalizer".
func (s Step) String() string {
	switch s {
	case StepSkip:
		return "skip"
	case StepAddFinalizer:
		return "add finalizer"
	case StepFinalize:
		return "finalize"
	case StepReconcile:
		return "reconcile"
	}
	return "Step(" + strconv.Itoa(int(s)) + ")"
}

// Decide returns the step a pass takes over obj, which found says the
// cache holds, for a controller whose Finalize holds objects with
// finalizer, or that has no Finalize when finalizer is "".
func Decide(obj ports.Object, found bool, finalizer string) Step {
	switch {
	case !found:
		return StepSkip
	case obj.Deleting:
		// One deleted before its first pass never got the finalizer, and
		// one whose Finalize already ran has lost it: neither is ours to
		// hold any more.
		if finalizer != "" && obj.HasFinalizer(finalizer) {
			return StepFinalize
		}
		return StepSkip
	case finalizer != "" && !obj.HasFinalizer(finalizer):
		return StepAddFinalizer
	}
	return StepReconcile
}
