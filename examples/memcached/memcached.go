package memcached

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kube"
)

// MemcachedSpec is what a Memcached declares: how many memcached pods run,
// their image, and the ConfigMap, if any, that holds memcached's flags.
type MemcachedSpec struct {
	Size  int32  `json:"size"`
	Image string `json:"image"`
	// ConfigMap names a ConfigMap in the Memcached's namespace whose data
	// are memcached's command-line flags; "" runs memcached with none.
	ConfigMap string `json:"configMap,omitempty"`
}

// MemcachedStatus is what the controller reports: how many of the pods are
// ready, and whether the Memcached is available.
//
// Their tags keep an explicit zero through the conversion webhook, which
// decodes and encodes these types: readyReplicas 0 is written, never
// dropped (its schema default is 0, so the API server fills an absent one
// the same), and conditions [] stays [] while absent stays absent
// (omitzero omits a nil slice only).
type MemcachedStatus struct {
	ReadyReplicas int32              `json:"readyReplicas"`
	Conditions    []metav1.Condition `json:"conditions,omitzero"`
}

// Object is one Memcached, as the controller hands it to the Reconciler.
type Object = kube.Object[MemcachedSpec, MemcachedStatus]

// spec and status are what Memcached's Rules point into: Rules reads
// nothing from them, and only finds which field each pointer names.
var (
	spec   MemcachedSpec
	status MemcachedStatus
)

// Memcached is the Memcached custom resource, cache.example.com/v1alpha1,
// the version the Reconciler reconciles. Its schema is reflected from
// MemcachedSpec and MemcachedStatus. Its CRD alone serves v1alpha1 only,
// as the demo and most e2e tests install it; deploy/crd.yaml is
// MemcachedV1beta1's, which serves it too, as a Spoke.
var Memcached = kube.Resource[MemcachedSpec, MemcachedStatus]{
	Group:   "cache.example.com",
	Version: "v1alpha1",
	Kind:    "Memcached",
	Plural:  "memcacheds",
	Scope:   kube.Namespaced,
	// kubectl get mc lists Memcacheds, and kubectl get all lists them
	// beside the Deployments and Services they own, as operators'
	// resources commonly are: a category of their own would add nothing
	// the singular memcached doesn't already name.
	ShortNames: []string{"mc"},
	Categories: []string{"all"},
	Columns: []kube.PrinterColumn{
		kube.Column("Size", &spec.Size).Description("How many memcached pods run."),
		kube.Column("Ready", &status.ReadyReplicas).Description("How many of the pods are ready."),
		kube.ConditionColumn("Available", &status.Conditions, "Available").Description("Whether the Memcached serves: True, False or Unknown."),
	},
	// kubectl scale memcached/cache --replicas=2 sets the size, within
	// the schema's bounds, and the Scale reports the ready pods.
	Scale: kube.Scale(&spec.Size, &status.ReadyReplicas),
	Rules: []kube.TypeRules{
		kube.Rules(&spec,
			kube.Field(&spec.Size).Minimum(1).Maximum(3).Description("How many memcached pods run."),
			// memcached's own images, with a tag v1beta1's schema allows
			// too: the API server stores v1beta1, whose schema refuses a
			// malformed image such as "memcached:", which this pattern's
			// first form, ^memcached:, let through (issue #47).
			kube.Field(&spec.Image).Pattern(memcachedImage).Default(DefaultImage),
			// A ConfigMap's name is a DNS subdomain: the API server refuses
			// any other at once, rather than the Memcached waiting for a
			// ConfigMap that can never exist.
			kube.Field(&spec.ConfigMap).MaxLength(253).Pattern(configMapName).
				Description("The name of a ConfigMap in the Memcached's namespace whose data are memcached's flags: each key k with the value v is the flag --k=v. A change to the ConfigMap rolls the pods; until it exists, the Memcached is not Available and its Deployment is left as it is."),
		),
		kube.Rules(&status,
			kube.Field(&status.ReadyReplicas).Default(0),
			kube.Field(&status.Conditions).ListMap("type"),
		),
	},
}

// memcachedImage is the image of a v1alpha1 Memcached: memcached's own
// repository on Docker Hub, and a tag as imageReference, v1beta1's
// pattern, has one, so that every image v1alpha1 admits v1beta1 admits
// too (TestImage_v1alpha1_admits_only_images_v1beta1_admits).
var memcachedImage = regexp.MustCompile(`^memcached:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// configMapName is what a ConfigMap's name may be: a DNS subdomain, as
// Kubernetes validates it.
var configMapName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// ConfigHashAnnotation is the pod template's annotation that holds
// ConfigHash of the data of the Memcached's ConfigMap. A change to the
// template rolls the pods. The flags are the container's arguments, so
// they change the template too; the annotation also says, where kubectl
// shows it, which data a pod runs with, and would still roll the pods if
// the data reached them some other way, such as a mounted file, which
// changes no template.
const ConfigHashAnnotation = "cache.example.com/config-hash"

// ReasonConfigMapMissing is the reason of the Available condition of a
// Memcached whose ConfigMap doesn't exist.
const ReasonConfigMapMissing = "ConfigMapMissing"

// ConfigMapReader reads a ConfigMap by namespace and name, and reports
// false when there is none. Init's is the Controller's cache of
// ConfigMaps, a *kube.Cache[corev1.ConfigMap], so a reconcile sends no
// request to read one; a test's is a fake.
type ConfigMapReader interface {
	Get(namespace, name string) (corev1.ConfigMap, bool, error)
}

// Reconciler is the Memcached operator's Reconciler: it applies a
// Deployment that the Memcached controls, with the flags of the
// Memcached's ConfigMap, and reports the Deployment's ready replicas, and
// whether it is available.
type Reconciler struct {
	Kube kubernetes.Interface
	// ConfigMaps reads the ConfigMap a Memcached names. Only a Memcached
	// that names one needs it.
	ConfigMaps ConfigMapReader
	// RecordEvent records an Event on the Memcached being reconciled, as
	// kube.RecordEvent does, which it is when nil. A unit test records
	// with kube/eventstest's context instead; this is for one whose
	// recorder fails.
	RecordEvent func(ctx context.Context, typ kube.EventType, reason, note string) error
}

// Reconcile applies m's Deployment and returns m's status. A failed apply
// is both an Available condition of Unknown with the reason ApplyFailed,
// which the controller applies, and the error, which retries m.
//
// A ConfigMap that m names and that doesn't exist is an Available
// condition of False with the reason ConfigMapMissing, a Warning Event
// on m with the same reason, which kubectl describe shows, and no error:
// the Controller watches ConfigMaps, so the ConfigMap's creation
// reconciles m again, and a retry could do no better before then. An
// Event that can't be recorded is an error, which retries m. The Deployment isn't
// applied then: an existing one keeps running with the flags it had,
// rather than restarting with none, which a ConfigMap deleted by mistake
// would otherwise cause.
func (r Reconciler) Reconcile(ctx context.Context, m Object) (kube.Result[MemcachedStatus], error) {
	st := m.Status
	labels := map[string]string{"app": "memcached", "memcached": m.Name}
	template := corev1ac.PodTemplateSpec().WithLabels(labels)
	container := corev1ac.Container().WithName("memcached").WithImage(m.Spec.Image)
	if name := m.Spec.ConfigMap; name != "" {
		cm, found, err := r.configMap(m.Namespace, name)
		if err != nil {
			return kube.Result[MemcachedStatus]{}, fmt.Errorf("the Memcached %s/%s: %w", m.Namespace, m.Name, err)
		}
		if !found {
			message := fmt.Sprintf("the ConfigMap %q is not in the namespace %q: the Deployment is left as it is until it is created", name, m.Namespace)
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{
				Type: "Available", Status: metav1.ConditionFalse, Reason: ReasonConfigMapMissing,
				Message: message, ObservedGeneration: m.Generation,
			})
			if err := r.recordEvent(ctx, kube.Warning, ReasonConfigMapMissing, message); err != nil {
				return kube.Result[MemcachedStatus]{Status: &st}, fmt.Errorf("the Memcached %s/%s: %w", m.Namespace, m.Name, err)
			}
			return kube.Result[MemcachedStatus]{Status: &st}, nil
		}
		container.WithArgs(flags(cm.Data)...)
		template.WithAnnotations(map[string]string{ConfigHashAnnotation: ConfigHash(cm.Data)})
	}

	d, err := r.Kube.AppsV1().Deployments(m.Namespace).Apply(ctx,
		appsv1ac.Deployment(m.Name, m.Namespace).
			WithLabels(map[string]string{ManagedByLabel: UserAgent}).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion(m.APIVersion).WithKind(m.Kind).WithName(m.Name).WithUID(m.UID).
				WithController(true).WithBlockOwnerDeletion(true)).
			WithSpec(appsv1ac.DeploymentSpec().
				WithReplicas(m.Spec.Size).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(template.WithSpec(corev1ac.PodSpec().WithContainers(container)))),
		metav1.ApplyOptions{FieldManager: "memcached-controller", Force: true},
	)
	if err != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: "Available", Status: metav1.ConditionUnknown, Reason: "ApplyFailed",
			Message: err.Error(), ObservedGeneration: m.Generation,
		})
		return kube.Result[MemcachedStatus]{Status: &st}, err
	}
	st.ReadyReplicas = d.Status.ReadyReplicas
	meta.SetStatusCondition(&st.Conditions, available(d, m.Generation))
	return kube.Result[MemcachedStatus]{Status: &st}, nil
}

// recordEvent records an Event on the Memcached that ctx's reconcile was
// handed, through r.RecordEvent or else kube.RecordEvent, and returns
// their error.
func (r Reconciler) recordEvent(ctx context.Context, typ kube.EventType, reason, note string) error {
	if r.RecordEvent != nil {
		return r.RecordEvent(ctx, typ, reason, note)
	}
	return kube.RecordEvent(ctx, typ, reason, note)
}

// configMap reads the ConfigMap namespace/name through r.ConfigMaps.
func (r Reconciler) configMap(namespace, name string) (corev1.ConfigMap, bool, error) {
	if r.ConfigMaps == nil {
		return corev1.ConfigMap{}, false, errors.New("the Reconciler has no ConfigMaps to read its ConfigMap from")
	}
	cm, found, err := r.ConfigMaps.Get(namespace, name)
	if err != nil {
		return corev1.ConfigMap{}, false, fmt.Errorf("reading the ConfigMap %s/%s: %w", namespace, name, err)
	}
	return cm, found, nil
}

// flags returns memcached's command-line flags for a ConfigMap's data:
// --k=v for each key k with the value v, sorted by key, so the pod
// template, and with it the pods, stay the same from one reconcile to the
// next, whatever order Go's map hands the keys in.
func flags(data map[string]string) []string {
	out := make([]string, 0, len(data))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		out = append(out, "--"+k+"="+data[k])
	}
	return out
}

// ConfigHash returns the hash of a ConfigMap's data that the pod
// template's ConfigHashAnnotation holds: SHA-256, in hex, of the data's
// canonical encoding, a line "key"="value" for each key, sorted, both
// quoted as Go quotes a string. The encoding must be canonical, one for
// each data and only one: hashing the entries in the order Go's map hands
// them would change the annotation from one reconcile to the next, and
// with it the pod template, rolling the pods with nothing changed. The
// quoting keeps a value holding a newline or an "=" from passing for
// other entries. No data and empty data hash the same.
func ConfigHash(data map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		_, _ = io.WriteString(h, strconv.Quote(k)+"="+strconv.Quote(data[k])+"\n") // a hash.Hash never fails a write
	}
	return hex.EncodeToString(h.Sum(nil))
}

// available is the Memcached's Available condition: the Deployment's own,
// copied, so a Deployment whose pods don't become available says why in
// the Memcached's status. Until the Deployment controller has written it
// for the Deployment's latest spec, it is Unknown: the condition it wrote
// for the spec before, such as one replica's availability when the
// Memcached has just grown to three, says nothing of this one, and
// copying it would report the Memcached Available before its pods are.
func available(d *appsv1.Deployment, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type: "Available", Status: metav1.ConditionUnknown, Reason: "DeploymentPending",
		ObservedGeneration: generation,
	}
	if d.Status.ObservedGeneration < d.Generation {
		// No generation in the message: the Deployment's counts the
		// writes that led here, so two Memcacheds of one spec would
		// differ by it (kubetest/explore's fresh-create oracle said so).
		c.Message = "waiting for the Deployment controller to observe the Deployment's latest spec"
		return c
	}
	for _, dc := range d.Status.Conditions {
		if dc.Type != appsv1.DeploymentAvailable {
			continue
		}
		c.Status, c.Message = metav1.ConditionStatus(dc.Status), dc.Message
		if dc.Reason != "" {
			c.Reason = dc.Reason // the API server requires a reason
		}
	}
	return c
}
