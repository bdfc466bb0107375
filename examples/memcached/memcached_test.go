package memcached

import (
	"context"
	"errors"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/eventstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files")

// crdPath is the CRD's YAML, checked in where the kustomization applies it.
const crdPath = "deploy/crd.yaml"

// injectCAFrom is the annotation that has cert-manager's CA injector put
// the CA of the Certificate memcached-system/memcached-webhooks, which
// deploy/ issues, into the CRD's conversion and the webhook
// configurations, as the API server needs to trust the webhooks. It is the
// deploy's to say, not the types', so the golden tests add it.
const injectCAFrom = "cert-manager.io/inject-ca-from"

// webhookCertificate is the Certificate the annotation names.
const webhookCertificate = "memcached-system/memcached-webhooks"

// TestMemcachedCRD is the golden test of the CRD: its YAML is checked in,
// where whatever deploys the controller applies it, and the test keeps it
// true to the types. It is MemcachedV1beta1's: both versions, converted by
// the operator's webhook. With -update, it rewrites the file.
func TestMemcachedCRD(t *testing.T) {
	crd, err := MemcachedV1beta1.CRD()
	require.NoError(t, err)
	metav1.SetMetaDataAnnotation(&crd.ObjectMeta, injectCAFrom, webhookCertificate)
	golden(t, "TestMemcachedCRD", crdPath, crd)
}

// golden checks that path holds the YAML of objs, one document each, and
// with -update writes it first. test is the test's name, which the
// failure tells to rerun.
func golden(t *testing.T, test, path string, objs ...any) {
	t.Helper()
	goldenHeaded(t, test, path, "", objs...)
}

// goldenHeaded is golden of a file that starts with header, comments
// that say what the YAML is for.
func goldenHeaded(t *testing.T, test, path, header string, objs ...any) {
	t.Helper()
	got := []byte(header)
	for i, obj := range objs {
		y, err := yaml.Marshal(obj)
		require.NoError(t, err)
		if i > 0 {
			got = append(got, "---\n"...)
		}
		got = append(got, y...)
	}
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s changed: run go test -run %s -update", path, test)
}

// cacheObject is the Memcached default/cache, as a test of the Reconciler
// builds it.
func cacheObject() Object {
	return Object{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default", UID: "cache-uid", Generation: 1},
		Spec:       MemcachedSpec{Size: 2, Image: "memcached:1.6.26-alpine3.19"},
	}
}

func TestReconciler_applies_a_Deployment_the_Memcached_controls(t *testing.T) {
	kc := kubefake.NewClientset()
	m := cacheObject()

	res, err := Reconciler{Kube: kc}.Reconcile(t.Context(), m)
	require.NoError(t, err)

	d, err := kc.AppsV1().Deployments("default").Get(t.Context(), "cache", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(2), *d.Spec.Replicas)
	require.Equal(t, "memcached:1.6.26-alpine3.19", d.Spec.Template.Spec.Containers[0].Image)
	owner := metav1.GetControllerOf(d)
	require.NotNil(t, owner)
	require.Equal(t, m.UID, owner.UID, "the Memcached controls the Deployment")

	require.NotNil(t, res.Status)
	c := meta.FindStatusCondition(res.Status.Conditions, "Available")
	require.NotNil(t, c)
	require.Equal(t, metav1.ConditionUnknown, c.Status, "until the Deployment controller has written its own")
	require.Equal(t, "DeploymentPending", c.Reason)
}

func TestReconciler_reports_a_failed_apply_as_a_condition_and_an_error(t *testing.T) {
	kc := kubefake.NewClientset()
	kc.PrependReactor("patch", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook denied the request")
	})

	res, err := Reconciler{Kube: kc}.Reconcile(t.Context(), cacheObject())
	require.ErrorContains(t, err, "admission webhook denied the request", "the error retries the Memcached")
	require.NotNil(t, res.Status, "the status is applied with the error")
	c := meta.FindStatusCondition(res.Status.Conditions, "Available")
	require.NotNil(t, c)
	require.Equal(t, metav1.ConditionUnknown, c.Status)
	require.Equal(t, "ApplyFailed", c.Reason)
	require.Contains(t, c.Message, "admission webhook denied the request")
}

// TestReconciler_copies_the_Deployment_status plays the Deployment
// controller, which the fake doesn't run: it writes the Deployment's status,
// and the next reconcile copies it.
func TestReconciler_copies_the_Deployment_status(t *testing.T) {
	tests := []struct {
		name       string
		condition  appsv1.DeploymentCondition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{
			name:       "available",
			condition:  appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			wantStatus: metav1.ConditionTrue, wantReason: "MinimumReplicasAvailable",
		},
		{
			name:       "unavailable",
			condition:  appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
			wantStatus: metav1.ConditionFalse, wantReason: "MinimumReplicasUnavailable",
		},
		{
			name:       "a condition without a reason keeps the pending one",
			condition:  appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
			wantStatus: metav1.ConditionTrue, wantReason: "DeploymentPending",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			m := cacheObject()
			r := Reconciler{Kube: kc}
			res, err := r.Reconcile(t.Context(), m)
			require.NoError(t, err)
			m.Status = *res.Status

			deployments := kc.AppsV1().Deployments("default")
			d, err := deployments.Get(t.Context(), "cache", metav1.GetOptions{})
			require.NoError(t, err)
			d.Status.ReadyReplicas = 2
			d.Status.Conditions = []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				tt.condition,
			}
			_, err = deployments.UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
			require.NoError(t, err)

			m.Generation = 2
			res, err = r.Reconcile(t.Context(), m)
			require.NoError(t, err)
			require.Equal(t, int32(2), res.Status.ReadyReplicas)
			require.Len(t, res.Status.Conditions, 1, "only Available is copied")
			c := res.Status.Conditions[0]
			require.Equal(t, "Available", c.Type)
			require.Equal(t, tt.wantStatus, c.Status)
			require.Equal(t, tt.wantReason, c.Reason)
			require.Equal(t, tt.condition.Message, c.Message)
			require.Equal(t, int64(2), c.ObservedGeneration, "the condition is about the spec reconciled")
		})
	}
}

// deployment is a Deployment ns/name with a selector, controlled by owner
// when it isn't nil.
func deployment(owner *metav1.OwnerReference) appsv1.Deployment {
	d := appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default", UID: "deployment-uid"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "memcached", "memcached": "cache"}},
		},
	}
	if owner != nil {
		d.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return d
}

func controller(apiVersion, kind string) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "cache", UID: "cache-uid", Controller: &yes}
}

func TestBudget(t *testing.T) {
	notController := controller("cache.example.com/v1alpha1", "Memcached")
	notController.Controller = nil
	tests := []struct {
		name       string
		deployment appsv1.Deployment
		wantBudget bool
	}{
		{name: "a Memcached's Deployment", deployment: deployment(controller("cache.example.com/v1alpha1", "Memcached")), wantBudget: true},
		{name: "another version of the group", deployment: deployment(controller("cache.example.com/v1", "Memcached")), wantBudget: true},
		{name: "no owner", deployment: deployment(nil)},
		{name: "an owner that isn't its controller", deployment: deployment(notController)},
		{name: "another kind", deployment: deployment(controller("cache.example.com/v1alpha1", "Redis"))},
		{name: "another group", deployment: deployment(controller("other.example.com/v1alpha1", "Memcached"))},
		{name: "no selector", deployment: func() appsv1.Deployment {
			d := deployment(controller("cache.example.com/v1alpha1", "Memcached"))
			d.Spec.Selector = nil
			return d
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			after, err := Budget{Kube: kc}.Reconcile(t.Context(), tt.deployment)
			require.NoError(t, err)
			require.Zero(t, after)

			pdbs, err := kc.PolicyV1().PodDisruptionBudgets("default").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			if !tt.wantBudget {
				require.Empty(t, pdbs.Items)
				return
			}
			require.Len(t, pdbs.Items, 1)
			pdb := pdbs.Items[0]
			require.Equal(t, "cache", pdb.Name)
			require.Equal(t, int32(1), pdb.Spec.MaxUnavailable.IntVal)
			require.Equal(t, tt.deployment.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels)
			owner := metav1.GetControllerOf(&pdb)
			require.NotNil(t, owner)
			require.Equal(t, tt.deployment.UID, owner.UID, "the Deployment controls its budget")
		})
	}
}

func TestBudget_returns_a_failed_apply(t *testing.T) {
	kc := kubefake.NewClientset()
	kc.PrependReactor("patch", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	_, err := Budget{Kube: kc}.Reconcile(t.Context(), deployment(controller("cache.example.com/v1alpha1", "Memcached")))
	require.ErrorContains(t, err, "quota exceeded")
}

func TestDefaultDeny(t *testing.T) {
	kc := kubefake.NewClientset()
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "team-a-uid"}}

	after, err := DefaultDeny{Kube: kc}.Reconcile(t.Context(), ns)
	require.NoError(t, err)
	require.Zero(t, after)

	p, err := kc.NetworkingV1().NetworkPolicies("team-a").Get(t.Context(), "default-deny", metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, p.Spec.PodSelector.MatchLabels, "it selects every pod")
	require.Empty(t, p.Spec.Ingress, "and allows them no ingress")
	require.Equal(t, "Ingress", string(p.Spec.PolicyTypes[0]))
	owner := metav1.GetControllerOf(p)
	require.NotNil(t, owner)
	require.Equal(t, ns.UID, owner.UID)

	// Run again, it is a no-op.
	_, err = DefaultDeny{Kube: kc}.Reconcile(t.Context(), ns)
	require.NoError(t, err)
}

// fakeConfigMaps is a ConfigMapReader over a map, as the Controller's
// cache of ConfigMaps is one for the Reconciler: Get returns a copy, and
// err, when set, fails every Get.
type fakeConfigMaps struct {
	items map[kube.Key]corev1.ConfigMap
	err   error
	gets  int
}

func (f *fakeConfigMaps) Get(namespace, name string) (corev1.ConfigMap, bool, error) {
	f.gets++
	if f.err != nil {
		return corev1.ConfigMap{}, false, f.err
	}
	cm, ok := f.items[kube.Key{Namespace: namespace, Name: name}]
	return *cm.DeepCopy(), ok, nil
}

// withConfigMaps returns a fakeConfigMaps holding the ConfigMap
// default/name of each entry of data.
func withConfigMaps(data map[string]map[string]string) *fakeConfigMaps {
	f := &fakeConfigMaps{items: map[kube.Key]corev1.ConfigMap{}}
	for name, d := range data {
		f.items[kube.Key{Namespace: "default", Name: name}] = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Data:       d,
		}
	}
	return f
}

// cacheNaming is the Memcached default/cache naming the ConfigMap name.
func cacheNaming(name string) Object {
	m := cacheObject()
	m.Spec.ConfigMap = name
	return m
}

// The interface is what the Controller's cache already is.
var _ ConfigMapReader = (*kube.Cache[corev1.ConfigMap])(nil)

func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want []string
	}{
		{name: "no data", data: nil, want: []string{}},
		{name: "empty data", data: map[string]string{}, want: []string{}},
		{name: "one key", data: map[string]string{"memory-limit": "64"}, want: []string{"--memory-limit=64"}},
		{
			name: "sorted by key",
			data: map[string]string{"threads": "4", "conn-limit": "1024", "memory-limit": "64", "max-item-size": "2m"},
			want: []string{"--conn-limit=1024", "--max-item-size=2m", "--memory-limit=64", "--threads=4"},
		},
		{name: "a value as it is", data: map[string]string{"extended": "ext_item_size=512,lru_crawler"}, want: []string{"--extended=ext_item_size=512,lru_crawler"}},
		{name: "an empty value", data: map[string]string{"disable-cas": ""}, want: []string{"--disable-cas="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, flags(tt.data))
		})
	}
}

// TestConfigHash_is_the_data_s_alone: the hash depends on the data and on
// nothing else, such as the order Go's map hands the keys in, and is the
// same from one release of the operator to the next, so an upgrade rolls
// no pods.
func TestConfigHash_is_the_data_s_alone(t *testing.T) {
	data := map[string]string{"threads": "4", "conn-limit": "1024", "memory-limit": "64", "max-item-size": "2m"}
	want := ConfigHash(data)
	for range 100 { // each map is built, and iterated, in its own order
		again := map[string]string{}
		for k, v := range data {
			again[k] = v
		}
		require.Equal(t, want, ConfigHash(again))
	}
	// sha256 of "\"conn-limit\"=\"1024\"\n\"max-item-size\"=\"2m\"\n\"memory-limit\"=\"64\"\n\"threads\"=\"4\"\n":
	// a change to the encoding changes every Memcached's annotation, and
	// rolls every pod, at the operator's upgrade.
	require.Equal(t, "ade9f1f5fd3c86140054b5a5901e91c4f4f57eb07678071b6ad635f168d6a6e7", want)
	require.Equal(t, ConfigHash(nil), ConfigHash(map[string]string{}), "no data is empty data")
	require.Len(t, want, 64, "SHA-256, in hex")
}

// TestConfigHash_tells_different_data_apart: each pair would hash the
// same under an encoding that doesn't quote, or doesn't sort.
func TestConfigHash_tells_different_data_apart(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string]string
	}{
		{name: "a value changes", a: map[string]string{"threads": "4"}, b: map[string]string{"threads": "8"}},
		{name: "a key is added", a: map[string]string{"threads": "4"}, b: map[string]string{"threads": "4", "verbose": ""}},
		{name: "a key is renamed", a: map[string]string{"threads": "4"}, b: map[string]string{"thread": "4"}},
		{name: "a newline in a value", a: map[string]string{"a": "1\nb=2"}, b: map[string]string{"a": "1", "b": "2"}},
		{name: "an = in a value", a: map[string]string{"a": "b=c"}, b: map[string]string{"a=b": "c"}},
		{name: "values swap keys", a: map[string]string{"a": "1", "b": "2"}, b: map[string]string{"a": "2", "b": "1"}},
		{name: "an empty value", a: map[string]string{}, b: map[string]string{"": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NotEqual(t, ConfigHash(tt.a), ConfigHash(tt.b))
		})
	}
}

// TestReconciler_runs_memcached_with_its_ConfigMap_s_flags: the flags are
// the container's arguments and the hash is the pod template's
// annotation; a Memcached that names no ConfigMap has neither, and reads
// none.
func TestReconciler_runs_memcached_with_its_ConfigMap_s_flags(t *testing.T) {
	data := map[string]string{"memory-limit": "64", "conn-limit": "1024"}
	tests := []struct {
		name      string
		configMap string
		wantArgs  []string
		wantHash  string
		wantGets  int
	}{
		{name: "no ConfigMap", configMap: "", wantGets: 0},
		{name: "a ConfigMap", configMap: "flags", wantArgs: []string{"--conn-limit=1024", "--memory-limit=64"}, wantHash: ConfigHash(data), wantGets: 1},
		{name: "an empty ConfigMap", configMap: "empty", wantHash: ConfigHash(nil), wantGets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			cms := withConfigMaps(map[string]map[string]string{"flags": data, "empty": nil})
			res, err := Reconciler{Kube: kc, ConfigMaps: cms}.Reconcile(t.Context(), cacheNaming(tt.configMap))
			require.NoError(t, err)
			require.Equal(t, tt.wantGets, cms.gets, "the ConfigMap is read when one is named, and only then")

			d, err := kc.AppsV1().Deployments("default").Get(t.Context(), "cache", metav1.GetOptions{})
			require.NoError(t, err)
			pod := d.Spec.Template
			require.Equal(t, tt.wantArgs, pod.Spec.Containers[0].Args)
			hash, ok := pod.Annotations[ConfigHashAnnotation]
			require.Equal(t, tt.wantHash != "", ok, "the annotation is there when a ConfigMap is named")
			require.Equal(t, tt.wantHash, hash)
			c := meta.FindStatusCondition(res.Status.Conditions, "Available")
			require.NotNil(t, c)
			require.Equal(t, "DeploymentPending", c.Reason)
		})
	}
}

// TestReconciler_rolls_the_pods_when_the_ConfigMap_changes: a second
// reconcile after the ConfigMap's data changed applies a template with
// the new flags and the new hash; one after a change of anything else
// applies the same template.
func TestReconciler_rolls_the_pods_when_the_ConfigMap_changes(t *testing.T) {
	kc := kubefake.NewClientset()
	cms := withConfigMaps(map[string]map[string]string{"flags": {"memory-limit": "64"}})
	r := Reconciler{Kube: kc, ConfigMaps: cms}
	template := func() corev1.PodTemplateSpec {
		_, err := r.Reconcile(t.Context(), cacheNaming("flags"))
		require.NoError(t, err)
		d, err := kc.AppsV1().Deployments("default").Get(t.Context(), "cache", metav1.GetOptions{})
		require.NoError(t, err)
		return d.Spec.Template
	}
	before := template()

	cm := cms.items[kube.Key{Namespace: "default", Name: "flags"}]
	cm.Labels = map[string]string{"team": "cache"}
	cms.items[kube.Key{Namespace: "default", Name: "flags"}] = cm
	require.Equal(t, before, template(), "a change of the ConfigMap's labels rolls nothing")

	cm.Data = map[string]string{"memory-limit": "128"}
	cms.items[kube.Key{Namespace: "default", Name: "flags"}] = cm
	after := template()
	require.Equal(t, []string{"--memory-limit=128"}, after.Spec.Containers[0].Args)
	require.Equal(t, ConfigHash(cm.Data), after.Annotations[ConfigHashAnnotation])
	require.NotEqual(t, before.Annotations[ConfigHashAnnotation], after.Annotations[ConfigHashAnnotation])
}

// TestReconciler_reports_a_missing_ConfigMap: the Memcached is not
// Available, saying which ConfigMap is missing, and a Warning Event says
// the same; no error, since the ConfigMap's creation reconciles it; and no
// apply, so a Deployment that exists keeps its flags.
func TestReconciler_reports_a_missing_ConfigMap(t *testing.T) {
	tests := []struct {
		name     string
		existing bool
	}{
		{name: "no Deployment yet"},
		{name: "a Deployment with its flags", existing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			cms := withConfigMaps(map[string]map[string]string{"flags": {"memory-limit": "64"}})
			events := eventstest.New()
			r := Reconciler{Kube: kc, ConfigMaps: cms}
			m := cacheNaming("flags")
			var before *appsv1.Deployment
			if tt.existing {
				res, err := r.Reconcile(events.Context(t, m), m)
				require.NoError(t, err)
				m.Status = *res.Status
				before, err = kc.AppsV1().Deployments("default").Get(t.Context(), "cache", metav1.GetOptions{})
				require.NoError(t, err)
			}
			delete(cms.items, kube.Key{Namespace: "default", Name: "flags"})
			kc.ClearActions()

			m.Generation = 2
			res, err := r.Reconcile(events.Context(t, m), m)
			require.NoError(t, err, "the ConfigMap's creation reconciles the Memcached: no retry")
			require.NotNil(t, res.Status)
			require.Zero(t, res.After, "no polling either")
			c := meta.FindStatusCondition(res.Status.Conditions, "Available")
			require.NotNil(t, c)
			require.Equal(t, metav1.ConditionFalse, c.Status)
			require.Equal(t, ReasonConfigMapMissing, c.Reason)
			require.Equal(t, `the ConfigMap "flags" is not in the namespace "default": the Deployment is left as it is until it is created`, c.Message)
			require.Equal(t, int64(2), c.ObservedGeneration)
			require.Equal(t, []eventstest.Event{{
				Namespace: "default", Name: "cache", UID: m.UID,
				Type: kube.Warning, Reason: ReasonConfigMapMissing, Action: "Reconcile", Note: c.Message,
			}}, events.Events(), "one Warning on the Memcached, saying what the condition says")

			require.Empty(t, kc.Actions(), "no request: no apply, and no read of the Deployment")
			d, err := kc.AppsV1().Deployments("default").Get(t.Context(), "cache", metav1.GetOptions{})
			if !tt.existing {
				require.True(t, apierrors.IsNotFound(err), "no Deployment is made: %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, before, d, "the Deployment keeps its flags")
		})
	}
}

// TestReconciler_records_a_missing_ConfigMap_through_kube_RecordEvent: a
// Reconciler with no RecordEvent of its own records through
// kube.RecordEvent, which refuses a context that no Controller handed it,
// as a test's is; a refused Event fails the reconcile, naming the
// Memcached, with the condition still returned.
func TestReconciler_records_a_missing_ConfigMap_through_kube_RecordEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record func(context.Context, kube.EventType, string, string) error
		want   string
	}{
		{name: "kube.RecordEvent", want: "the context is not one a Controller handed"},
		{name: "a failing recorder", record: func(context.Context, kube.EventType, string, string) error { return errors.New("no room") }, want: "no room"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Reconciler{Kube: kubefake.NewClientset(), ConfigMaps: withConfigMaps(nil), RecordEvent: tc.record}
			res, err := r.Reconcile(t.Context(), cacheNaming("flags"))
			require.ErrorContains(t, err, "the Memcached default/cache: ")
			require.ErrorContains(t, err, tc.want)
			require.NotNil(t, res.Status)
			require.Equal(t, ReasonConfigMapMissing, meta.FindStatusCondition(res.Status.Conditions, "Available").Reason)
		})
	}
}

// TestReconciler_returns_a_failed_read_of_the_ConfigMap: an error of the
// cache, which a reconcile never sees unless the operator is wired wrong,
// retries the Memcached, naming it; the status and the Deployment are left
// alone.
func TestReconciler_returns_a_failed_read_of_the_ConfigMap(t *testing.T) {
	tests := []struct {
		name       string
		configMaps ConfigMapReader
		want       string
	}{
		{
			name:       "the cache fails",
			configMaps: &fakeConfigMaps{err: errors.New("kube: Cache(/v1, Resource=configmaps) is watched by no Controller")},
			want:       "the Memcached default/cache: reading the ConfigMap default/flags: kube: Cache(/v1, Resource=configmaps) is watched by no Controller",
		},
		{
			name:       "no cache",
			configMaps: nil,
			want:       "the Memcached default/cache: the Reconciler has no ConfigMaps to read its ConfigMap from",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			res, err := Reconciler{Kube: kc, ConfigMaps: tt.configMaps}.Reconcile(t.Context(), cacheNaming("flags"))
			require.EqualError(t, err, tt.want)
			require.Nil(t, res.Status, "the status is left alone")
			require.Empty(t, kc.Actions(), "no apply")
		})
	}
}

func TestConfigMapOf(t *testing.T) {
	tests := []struct {
		name      string
		configMap string
		want      []kube.Key
	}{
		{name: "none named", configMap: "", want: nil},
		{name: "one named, in the Memcached's namespace", configMap: "flags", want: []kube.Key{{Namespace: "default", Name: "flags"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, configMapOf(cacheNaming(tt.configMap)))
		})
	}
}

// TestKeepData: the cache keeps what the Reconciler reads, and what a
// cache and its selectors need, and drops the rest.
func TestKeepData(t *testing.T) {
	cm := corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "flags", Namespace: "default",
			Labels:      map[string]string{"team": "cache"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"threads":"4"}}`},
		},
		Data:       map[string]string{"threads": "4"},
		BinaryData: map[string][]byte{"blob": {0, 1, 2}},
	}
	keepData(&cm)
	require.Equal(t, corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "flags", Namespace: "default", Labels: map[string]string{"team": "cache"}},
		Data:       map[string]string{"threads": "4"},
	}, cm)
}
