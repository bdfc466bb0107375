package explore

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// External state (issue #47): an operator of something outside the
// cluster, databases on a database server say, keeps state the explorer
// can't see and the replays share. Each replay must name what it makes
// there apart from every other replay's, and from another run's, or a
// replay that failed would leave names the next one trips on; and the
// explorer's final check, that deleting every object leaves nothing
// behind, must look outside the cluster too.

// External is what the explorer needs to know of the state an operator
// keeps outside the cluster. The zero External says it keeps none.
type External struct {
	// Spec, when set, changes each created or updated object's spec
	// before the step writes it, in the replay of namespace, for the
	// object name: it gets a copy of the spec the sequence holds, to
	// change in place, typically the names the spec gives things
	// outside the cluster, which it makes the replay's own. The same
	// namespace, name and spec must give the same change, and a spec
	// the schema accepts. The sequence itself, as reported and kept,
	// holds the spec before the change, so a kept sequence replays the
	// same in any namespace.
	Spec func(namespace, name string, spec map[string]any)
	// Gone are checked once in each replay, after deleting every object
	// has left nothing behind in the cluster: that the operator's
	// finalizers left nothing outside it either. A failure fails the
	// replay, as an invariant's after a step does.
	Gone []Invariant
}

// external returns the change step makes in the replay of namespace:
// step itself, or a step with a copy of its spec that e's External.Spec
// has changed.
func (e *explorer) external(namespace string, step generate.Step) generate.Step {
	if e.externalSpec == nil || step.Spec == nil {
		return step
	}
	step.Spec = runtime.DeepCopyJSON(step.Spec)
	e.externalSpec(namespace, step.Name, step.Spec)
	return step
}

// checkGone checks e's External.Gone in namespace, every one, and
// returns what is false of each.
func (e *explorer) checkGone(ctx context.Context, namespace string) error {
	var errs []error
	for _, inv := range e.gone {
		if err := inv.Check(ctx, e.admin, namespace); err != nil {
			errs = append(errs, fmt.Errorf("invariant %q: %w", inv.Name, err))
		}
	}
	return errors.Join(errs...)
}
