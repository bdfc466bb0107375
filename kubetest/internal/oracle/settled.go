// Package oracle holds the checks kubetest's explorer makes after each
// step without asking the end user (issue #25): whether an object's status
// observes its latest generation, and whether an operator stays quiet.
package oracle

import (
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrNoObservedGeneration is what Settled returns, wrapped, for a status
// that records no observed generation: the explorer can't tell when such
// an object is settled, and a missing oracle must not pass.
var ErrNoObservedGeneration = errors.New("the status records no observed generation")

// Settled returns how to tell, from the schema of a CRD version's whole
// object, whether an object's status observes its latest generation: by
// status.observedGeneration when the schema has it, and otherwise by the
// observedGeneration of status.conditions, every one of which must
// observe it. The func it returns says why an object isn't settled, or ""
// when it is. It fails with ErrNoObservedGeneration when the status has
// neither.
func Settled(schema *apiextensionsv1.JSONSchemaProps) (func(u *unstructured.Unstructured) string, error) {
	status, ok := schema.Properties["status"]
	if !ok {
		return nil, fmt.Errorf("%w: the object has no status", ErrNoObservedGeneration)
	}
	if g, ok := status.Properties["observedGeneration"]; ok && g.Type == "integer" {
		return func(u *unstructured.Unstructured) string {
			observed, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			switch {
			case err != nil:
				return fmt.Sprintf("%s: status.observedGeneration: %v", u.GetName(), err)
			case !found:
				return fmt.Sprintf("%s: no status.observedGeneration yet, generation %d", u.GetName(), u.GetGeneration())
			case observed != u.GetGeneration():
				return fmt.Sprintf("%s: status.observedGeneration %d, generation %d", u.GetName(), observed, u.GetGeneration())
			}
			return ""
		}, nil
	}
	if conds, ok := status.Properties["conditions"]; ok && conds.Items != nil && conds.Items.Schema != nil {
		if g, ok := conds.Items.Schema.Properties["observedGeneration"]; ok && g.Type == "integer" {
			return conditionsSettled, nil
		}
	}
	return nil, fmt.Errorf("%w: no status.observedGeneration, and no status.conditions with observedGeneration", ErrNoObservedGeneration)
}

func conditionsSettled(u *unstructured.Unstructured) string {
	conds, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return fmt.Sprintf("%s: status.conditions: %v", u.GetName(), err)
	}
	if len(conds) == 0 {
		return fmt.Sprintf("%s: no status.conditions yet, generation %d", u.GetName(), u.GetGeneration())
	}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if observed != u.GetGeneration() {
			return fmt.Sprintf("%s: condition %v observes generation %d, the object is at %d", u.GetName(), m["type"], observed, u.GetGeneration())
		}
	}
	return ""
}

// Changed returns the keys whose resourceVersion differs between two
// snapshots of what the cluster held, and those only one of them has:
// after a settled operator had time to act with nothing new to act on, it
// must be empty.
func Changed(before, after map[string]string) []string {
	var changed []string
	for k, rv := range after {
		if before[k] != rv {
			changed = append(changed, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			changed = append(changed, k)
		}
	}
	return changed
}
