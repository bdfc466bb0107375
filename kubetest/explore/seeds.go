package explore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// Seed objects (issue #47): a field such as a Memcached's configMap
// names an object of another kind, and a random name never names one
// that exists, so the operator's path for an object that is there is
// never explored. The explorer creates the Config's ConfigMaps and
// Secrets in each replay's namespace before the first step, and the
// generator draws each field the Config's References name from their
// names, or now and then a name none has.

// seed is an object to create in each replay's namespace, in the form the
// explorer's dynamic client sends.
type seed struct {
	gvr    schema.GroupVersionResource
	object map[string]any
}

// The kinds a reference may name, as Config.References spells them.
const (
	configMapKind = "ConfigMap"
	secretKind    = "Secret"
)

// seeds returns the ConfigMaps and Secrets to create, and the names of
// each kind, or an error naming every mistake: an object with no name or
// an invalid one, with a namespace (each replay has its own), or named
// twice.
func seeds(configMaps []corev1.ConfigMap, secrets []corev1.Secret) ([]seed, map[string][]string, error) {
	var (
		out   []seed
		names = map[string][]string{}
		errs  []string
	)
	add := func(kind, resource string, i int, meta metav1.ObjectMeta, obj runtime.Object) {
		field := fmt.Sprintf("explore.Config.%ss[%d]", kind, i)
		switch {
		case meta.Name == "":
			errs = append(errs, field+": no name")
			return
		case len(validation.IsDNS1123Subdomain(meta.Name)) > 0:
			errs = append(errs, fmt.Sprintf("%s: name %q: %s", field, meta.Name, strings.Join(validation.IsDNS1123Subdomain(meta.Name), "; ")))
			return
		case meta.Namespace != "":
			errs = append(errs, fmt.Sprintf("%s %s: namespace %q: leave it empty, each replay has a namespace of its own", field, meta.Name, meta.Namespace))
			return
		case slices.Contains(names[kind], meta.Name):
			errs = append(errs, fmt.Sprintf("%s: a second %s named %s", field, kind, meta.Name))
			return
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %s: %v", field, meta.Name, err))
			return
		}
		unstructured.RemoveNestedField(u, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(u, "metadata", "uid")
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		u["apiVersion"], u["kind"] = "v1", kind
		names[kind] = append(names[kind], meta.Name)
		out = append(out, seed{gvr: corev1.SchemeGroupVersion.WithResource(resource), object: u})
	}
	for i := range configMaps {
		add(configMapKind, "configmaps", i, configMaps[i].ObjectMeta, &configMaps[i])
	}
	for i := range secrets {
		add(secretKind, "secrets", i, secrets[i].ObjectMeta, &secrets[i])
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, names, nil
}

// references checks refs, Config.References, against spec, the schema of
// the explored resource's spec, and names, the seed objects' names by
// kind, and returns the names each field is drawn from, by its path, or
// an error naming every mistake: a path that isn't a string field of
// the spec through its objects' properties, a kind that isn't ConfigMap
// or Secret, or one with no seed object.
func references(refs map[string]string, spec *apiextensionsv1.JSONSchemaProps, names map[string][]string) (map[string][]string, error) {
	out := map[string][]string{}
	var errs []string
	for _, path := range slices.Sorted(maps.Keys(refs)) {
		kind := refs[path]
		field := fmt.Sprintf("explore.Config.References[%q]", path)
		if kind != configMapKind && kind != secretKind {
			errs = append(errs, fmt.Sprintf("%s: kind %q: want %s or %s", field, kind, configMapKind, secretKind))
			continue
		}
		if len(names[kind]) == 0 {
			errs = append(errs, fmt.Sprintf("%s: no %s to name: give the Config's %ss", field, kind, kind))
			continue
		}
		if why := stringField(spec, path); why != "" {
			errs = append(errs, fmt.Sprintf("%s: %s", field, why))
			continue
		}
		out[path] = names[kind]
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

// stringField says why path, such as "auth.secretName", isn't a string
// field of s through its objects' properties, or "" when it is.
func stringField(s *apiextensionsv1.JSONSchemaProps, path string) string {
	at := "spec"
	for part := range strings.SplitSeq(path, ".") {
		p, ok := s.Properties[part]
		if !ok {
			return fmt.Sprintf("%s has no field %q", at, part)
		}
		s, at = &p, at+"."+part
	}
	if s.Type != "string" {
		return fmt.Sprintf("%s is of type %q, not a string", at, s.Type)
	}
	return ""
}

// generator returns the generator of seed's sequences, drawing each
// referring field from the names of the objects it names.
func (e *explorer) generator(seed uint64) *generate.Generator {
	g := generate.New(seed)
	for _, path := range slices.Sorted(maps.Keys(e.refs)) {
		g.Refer(path, e.refs[path])
	}
	return g
}

// createSeeds creates the seed objects in ns.
func (e *explorer) createSeeds(ctx context.Context, ns string) error {
	for _, s := range e.seeds {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(s.object)}
		u.SetNamespace(ns)
		if _, err := e.admin.Resource(s.gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the seed %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
