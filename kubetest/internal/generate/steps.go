package generate

import (
	"encoding/json"
	"fmt"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Op is what a Step does to an object.
type Op int

// The Ops.
const (
	Create Op = iota
	Update
	Delete
)

// String names the Op as a failure's report prints it.
func (o Op) String() string {
	switch o {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Step is one change to the explored objects: a create or an update with
// a spec, or a delete.
type Step struct {
	Op   Op
	Name string
	// Spec is the object's whole spec, for a create or an update.
	Spec map[string]any
	// Version is the version of the resource the change is written in,
	// when it is another than the one whose schema Spec follows: the
	// explorer converts Spec to it. "" is that one. The generator leaves
	// it "": the explorer draws it.
	Version string
}

// String prints the Step as a failure's report does: the Op, the name,
// the spec as JSON and, when it is written in another version, "in" and
// the version.
func (s Step) String() string {
	in := ""
	if s.Version != "" {
		in = " in " + s.Version
	}
	if s.Op == Delete {
		return fmt.Sprintf("delete %s%s", s.Name, in)
	}
	b, err := json.Marshal(s.Spec)
	if err != nil {
		return fmt.Sprintf("%s %s %v%s", s.Op, s.Name, s.Spec, in)
	}
	return fmt.Sprintf("%s %s %s%s", s.Op, s.Name, b, in)
}

// Steps returns n changes to objects named from names, each valid where
// it comes: a create of an object that isn't there (again, after a
// delete: a re-create), an update or a delete of one that is. An update
// is the likeliest, then a delete, then a create, with a create whenever
// no object is there. Each spec is one spec accepts, from Value, and an
// update's differs from the object's spec before it when the schema
// leaves room for another.
func (g *Generator) Steps(spec *apiextensionsv1.JSONSchemaProps, names []string, n int) ([]Step, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no names to make steps for")
	}
	present := map[string]bool{}
	specs := map[string]map[string]any{}
	steps := make([]Step, 0, n)
	for range n {
		var here, gone []string
		for _, name := range names {
			if present[name] {
				here = append(here, name)
			} else {
				gone = append(gone, name)
			}
		}
		op := Create
		switch roll := g.rnd.IntN(10); {
		case len(here) == 0:
		case roll < 5:
			op = Update
		case roll < 8 || len(gone) == 0:
			op = Delete
		}
		step := Step{Op: op}
		switch op {
		case Create:
			step.Name = gone[g.rnd.IntN(len(gone))]
			present[step.Name] = true
		case Update:
			step.Name = here[g.rnd.IntN(len(here))]
		case Delete:
			step.Name = here[g.rnd.IntN(len(here))]
			delete(present, step.Name)
		}
		if op != Delete {
			for range tries {
				v, err := g.Value(spec)
				if err != nil {
					return nil, err
				}
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("the spec's schema makes a %T, not an object", v)
				}
				step.Spec = m
				if op != Update || !reflect.DeepEqual(m, specs[step.Name]) {
					break
				}
			}
			specs[step.Name] = step.Spec
		}
		steps = append(steps, step)
	}
	return steps, nil
}
