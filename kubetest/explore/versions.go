package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// Mixed versions (issue #47): an operator whose resource has two served
// versions, converted by a webhook, meets objects written in either, as
// its users write them. The generator works from the explored version's
// schema; a Version says how a spec of it is written in another, and the
// explorer writes some steps in that one. Everything the explorer reads,
// and every oracle and invariant, reads the explored version: what
// differs between the versions is the conversion's, and the versions'
// oracle (agree) checks it after each step written in another.

// Version is another served version of the explored resource, which some
// of the explorer's steps write in. VersionOf makes one; the zero Version
// is a Config mistake.
type Version[S any] struct {
	gvr  schema.GroupVersionResource
	kind string
	// err is what is wrong with the version's Resource.
	err error
	// convert converts a spec of the explored version to this one, as
	// the JSON the API server is sent; normalize reads a spec of this
	// one into its type and back, as convert's JSON comes out of it.
	convert   func(S) (map[string]any, error)
	normalize func(map[string]any) (map[string]any, error)
}

// VersionOf returns the version r of the explored resource, whose steps
// the explorer writes with convert's spec: convert turns a spec of the
// explored version, as the generator made it, into the same spec in r's
// version, as a user who writes that version would write it. It is the
// user's idea of the conversion, not the webhook's: after each step
// written in r's version, the versions' oracle reads the object back in
// the explored version, through the API server's conversion, and checks
// it against the same spec written there, and, converted by convert,
// against the object read back in r's version.
func VersionOf[S, V, T any](r kube.Resource[V, T], convert func(S) (V, error)) Version[S] {
	v := Version[S]{gvr: r.GVR(), kind: r.Kind}
	if _, err := r.CRD(); err != nil {
		v.err = err
	}
	if convert != nil {
		v.convert = func(s S) (map[string]any, error) {
			to, err := convert(s)
			if err != nil {
				return nil, err
			}
			return runtime.DefaultUnstructuredConverter.ToUnstructured(&to)
		}
		v.normalize = func(spec map[string]any) (map[string]any, error) {
			var to V
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(spec), &to); err != nil {
				return nil, err
			}
			return runtime.DefaultUnstructuredConverter.ToUnstructured(&to)
		}
	}
	return v
}

// version is a Version made ready to write in: where, and how a spec of
// the explored version, as the generator makes it, converts to it.
type version struct {
	gvr        schema.GroupVersionResource
	apiVersion string
	convert    func(spec map[string]any) (map[string]any, error)
	normalize  func(spec map[string]any) (map[string]any, error)
}

// versionsOf returns cfg's Versions by their version's name, and the
// names in cfg's order, with an error naming every mistake: a zero
// Version or one without a conversion, a Resource that doesn't check,
// one of another resource, the explored version or one given twice, and
// one the cluster, which disco asks, doesn't serve.
func versionsOf[S, T any](cfg Config[S, T], disco discovery.DiscoveryInterface) (map[string]version, []string, error) {
	explored := cfg.Resource.GVR()
	out := map[string]version{}
	var names []string
	var errs []error
	for i, v := range cfg.Versions {
		field := fmt.Sprintf("explore.Config.Versions[%d]", i)
		switch {
		case v.convert == nil:
			errs = append(errs, fmt.Errorf("%s has no conversion: make it with explore.VersionOf(resource, convert)", field))
			continue
		case v.err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", field, v.err))
			continue
		case v.gvr.GroupResource() != explored.GroupResource() || v.kind != cfg.Resource.Kind:
			errs = append(errs, fmt.Errorf("%s: %s %s is not a version of %s %s", field, v.kind, v.gvr, cfg.Resource.Kind, explored))
			continue
		case v.gvr.Version == explored.Version:
			errs = append(errs, fmt.Errorf("%s: %s is the explored version, Resource's", field, v.gvr.Version))
			continue
		case slices.Contains(names, v.gvr.Version):
			errs = append(errs, fmt.Errorf("%s: %s is given twice", field, v.gvr.Version))
			continue
		}
		if err := served(disco, v.gvr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			continue
		}
		convert := v.convert
		names = append(names, v.gvr.Version)
		out[v.gvr.Version] = version{gvr: v.gvr, apiVersion: v.gvr.GroupVersion().String(), convert: func(spec map[string]any) (map[string]any, error) {
			var s S
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(spec), &s); err != nil {
				return nil, err
			}
			return convert(s)
		}, normalize: v.normalize}
	}
	return out, names, errors.Join(errs...)
}

// served returns an error unless the cluster serves gvr.
func served(disco discovery.DiscoveryInterface, gvr schema.GroupVersionResource) error {
	if disco == nil {
		return nil
	}
	list, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("asking the cluster whether it serves %s: %w", gvr, err)
	}
	if list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
		return nil
	}
	return fmt.Errorf("the cluster serves no %s: install a CRD that serves it", gvr)
}

// versionStream picks each step's version from a stream of its own, so
// that versions leave every seed's changes and faults as they were.
const versionStream = 0x56657273696f6e

// drawVersions sets the version each of steps, the sequence-th of seed,
// is written in: the explored one or one of names, uniformly. With no
// names, it leaves them all in the explored one.
func drawVersions(seed uint64, sequence int, steps []Step, names []string) {
	if len(names) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, uint64(sequence)^versionStream))
	for i := range steps {
		if n := rng.IntN(len(names) + 1); n > 0 {
			steps[i].Version = names[n-1]
		}
	}
}

// writer returns where step is written, and step with its spec in that
// version: the explored resource's, or its Version's, converted.
func (e *explorer) writer(ns string, step generate.Step) (writeTo, generate.Step, error) {
	if step.Version == "" {
		return writeTo{objects: e.admin.Resource(e.gvr).Namespace(ns), apiVersion: e.apiVersion}, step, nil
	}
	v, ok := e.otherVersions[step.Version]
	if !ok {
		return writeTo{}, step, fmt.Errorf("no explore.Config.Versions names %s", step.Version)
	}
	if step.Spec != nil {
		spec, err := v.convert(step.Spec)
		if err != nil {
			return writeTo{}, step, fmt.Errorf("converting the spec to %s: %w", step.Version, err)
		}
		step.Spec = spec
	}
	return writeTo{objects: e.admin.Resource(v.gvr).Namespace(ns), apiVersion: v.apiVersion}, step, nil
}

// dryRunSuffix names the versions' oracle's dry run after the stepped
// object. A dry run leaves nothing behind, and no explored name ends so.
const dryRunSuffix = "-dry-run"

// agree is the versions' oracle, after a step written in another version
// than the explored one: the API server must admit the step's spec in
// the explored version exactly when it admitted it in the step's, and,
// admitted, the object must read back in the explored version with the
// spec the same spec written there has (a dry run's: defaults, and the
// admission webhooks' changes, included). A conversion that loses or
// changes a field, or versions whose schemas or webhooks admit different
// specs, fail it: what one version admits is stored, and served in the
// other. A read that fails while the operator is down, whose webhooks
// may convert, is tried again once it is back. A change the API server
// admitted while the operator was down (made.admittedDown) met none of
// its admission webhooks, and what they make of the same spec, back,
// says nothing of the conversion: the oracle leaves it alone.
func (e *explorer) agree(ctx context.Context, r *replicas, step generate.Step, m made) error {
	if step.Version == "" || step.Op == generate.Delete || m.wasted || m.admittedDown() {
		return nil
	}
	objects := e.admin.Resource(e.gvr).Namespace(r.ns)
	var dry, got *unstructured.Unstructured
	var refused string
	err := r.untilUp(ctx, func() error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": e.apiVersion, "kind": e.kind,
			"metadata": map[string]any{"name": step.Name + dryRunSuffix, "namespace": r.ns},
			"spec":     runtime.DeepCopyJSON(step.Spec),
		}}
		var err error
		dry, err = objects.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		refused = ""
		if refusal(err) {
			refused, err = err.Error(), nil
		}
		if err != nil || m.refused != "" || refused != "" {
			return err
		}
		got, err = objects.Get(ctx, step.Name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("the versions' oracle, writing the same spec in %s as a dry run and reading the object back: %w", e.gvr.Version, err)
	}
	switch {
	case m.refused != "" && refused == "":
		return fmt.Errorf("the API server refuses the spec in %s and admits it in %s: %s", step.Version, e.gvr.Version, m.refused)
	case m.refused == "" && refused != "":
		return fmt.Errorf("the API server admits the spec in %s and refuses it in %s: %s", step.Version, e.gvr.Version, refused)
	case m.refused != "":
		return nil
	}
	if a, b := got.Object["spec"], dry.Object["spec"]; !equality.Semantic.DeepEqual(a, b) {
		return fmt.Errorf("written in %s, %s's spec reads back in %s as %s, where the same spec written in %s reads back as %s",
			step.Version, step.Name, e.gvr.Version, asJSON(a), e.gvr.Version, asJSON(b))
	}
	return e.keeps(ctx, r, step, got)
}

// keeps checks what agree's comparison with the dry run can't see: a
// conversion that loses or changes a field on its way to the explored
// version does so to the dry run too, which reads back through it. Read
// back in the step's own version, each field the step wrote there that
// the object has must be what the object read in the explored version,
// got, has, by the Version's conversion: the user's idea of it. Fields
// the step didn't write (another version's defaults, fields the explored
// version has no word for) aren't compared.
func (e *explorer) keeps(ctx context.Context, r *replicas, step generate.Step, got *unstructured.Unstructured) error {
	v, ok := e.otherVersions[step.Version]
	if !ok || v.normalize == nil {
		return nil
	}
	spec, _ := got.Object["spec"].(map[string]any)
	written, err := v.convert(step.Spec)
	if err != nil {
		return fmt.Errorf("converting the spec to %s: %w", step.Version, err)
	}
	via, err := v.convert(spec)
	if err != nil {
		return fmt.Errorf("converting %s's spec, as it reads back in %s, to %s: %w", step.Name, e.gvr.Version, step.Version, err)
	}
	var back *unstructured.Unstructured
	if err := r.untilUp(ctx, func() error {
		var err error
		back, err = e.admin.Resource(v.gvr).Namespace(r.ns).Get(ctx, step.Name, metav1.GetOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("the versions' oracle, reading %s back in %s: %w", step.Name, step.Version, err)
	}
	stored, _ := back.Object["spec"].(map[string]any)
	seen, err := v.normalize(stored)
	if err != nil {
		return fmt.Errorf("reading %s's spec in %s: %w", step.Name, step.Version, err)
	}
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(written)) {
		if _, ok := stored[k]; ok && !equality.Semantic.DeepEqual(seen[k], via[k]) {
			changed = append(changed, fmt.Sprintf("%s %s, where its spec read in %s has, in %s, %s", k, asJSON(seen[k]), e.gvr.Version, step.Version, asJSON(via[k])))
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("written in %s, %s's spec reads back in %s with %s: the conversion to %s loses or changes what was written",
			step.Version, step.Name, step.Version, strings.Join(changed, "; "), e.gvr.Version)
	}
	return nil
}

// refusal reports whether err is the API server refusing a change: as
// invalid, by its schema or a CEL rule, or as forbidden, by an admission
// webhook's denial (the explorer's client may do anything RBAC allows).
func refusal(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
}

// asJSON prints v as JSON, for a report.
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
