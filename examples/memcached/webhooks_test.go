package memcached

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
)

// webhooksPath is the webhook configurations' YAML, checked in where the
// kustomization applies it.
const webhooksPath = "deploy/webhooks.yaml"

// webhooksHeader says what deploy/webhooks.yaml is for, and why its
// hooks set what they set (Hooks says it at length).
const webhooksHeader = `# The operator's admission webhooks, called through the Service
# memcached-webhooks (webhooks-service.yaml), which publishes not-ready
# addresses so the API server reaches them before the pod is ready.
# sideEffects None: neither hook writes anything, so dry runs are
# admitted by them too. matchPolicy Equivalent: v1alpha1 writes reach
# these v1beta1 hooks converted, so the image policy holds for both.
# reinvocationPolicy Never, no matchConditions and no subresources, as
# Hooks in webhooks.go says why.
# Written by TestWebhookConfigurations (go test -run TestWebhookConfigurations -update).
`

// webhookService is the Service in front of the operator's webhooks, as
// deploy/webhooks-service.yaml declares it: the one MemcachedV1beta1's
// Conversion names, so the CRD and the configurations call one Service.
var webhookService = *MemcachedV1beta1.Conversion

// TestWebhookConfigurations is the golden test of the validating and
// mutating webhook configurations of Hooks, which call the operator
// through the Service memcached-system/memcached-webhooks, with the CA
// cert-manager injects. With -update, it rewrites the file.
func TestWebhookConfigurations(t *testing.T) {
	validating, mutating, err := kube.WebhookConfigurations("memcached-operator", webhookService,
		Hooks(Images{Allowed: []string{"memcached:"}, DefaultImage: DefaultImage})...)
	require.NoError(t, err)
	require.NotNil(t, validating)
	require.NotNil(t, mutating)
	metav1.SetMetaDataAnnotation(&validating.ObjectMeta, injectCAFrom, webhookCertificate)
	metav1.SetMetaDataAnnotation(&mutating.ObjectMeta, injectCAFrom, webhookCertificate)
	goldenHeaded(t, "TestWebhookConfigurations", webhooksPath, webhooksHeader, mutating, validating)
}

func TestImages_Check(t *testing.T) {
	tests := []struct {
		name   string
		images Images
		want   []string // each a line of the error; none for nil
	}{
		{name: "the defaults", images: Images{Allowed: []string{"memcached:"}, DefaultImage: DefaultImage}},
		{name: "every image allowed", images: Images{DefaultImage: "registry.example.com/cache/memcached@sha256:" + strings.Repeat("a", 64)}},
		{name: "no default", images: Images{Allowed: []string{"memcached:"}},
			want: []string{"the default image is empty: set one, such as " + DefaultImage}},
		{name: "a default with no tag", images: Images{DefaultImage: "memcached"},
			want: []string{`the default image "memcached" is not an image reference, such as ` + DefaultImage}},
		{name: "a default not allowed", images: Images{Allowed: []string{"memcached:", "registry.example.com/"}, DefaultImage: "nginx:1.27"},
			want: []string{`the default image "nginx:1.27" starts with none of the allowed prefixes ["memcached:" "registry.example.com/"]`}},
		{name: "every mistake at once", images: Images{Allowed: []string{"", "registry.example.com/", ""}, DefaultImage: "Memcached:1"},
			want: []string{
				`the default image "Memcached:1" is not an image reference, such as ` + DefaultImage,
				"the allowed prefix [0] is empty",
				"the allowed prefix [2] is empty",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.images.Check()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, strings.Join(tt.want, "\n"))
		})
	}
}

// v1beta1Object is a v1beta1 Memcached of image, as an admission decodes
// it.
func v1beta1Object(image string) ObjectV1beta1 {
	return ObjectV1beta1{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cache.example.com/v1beta1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default"},
		Spec:       ReplicasSpec{Replicas: 2, Image: image},
	}
}

func TestImages_Validate(t *testing.T) {
	images := Images{Allowed: []string{"memcached:", "registry.example.com/cache/"}, DefaultImage: DefaultImage}
	tests := []struct {
		name         string
		images       Images
		op           kube.Operation
		image, old   string
		wantErr      string
		wantWarnings []string
	}{
		{name: "an allowed image", op: kube.Create, image: "memcached:1.6"},
		{name: "another allowed prefix", op: kube.Create, image: "registry.example.com/cache/memcached:1.6"},
		{name: "a prefix is not a registry", op: kube.Create, image: "registry.example.com/other/memcached:1.6",
			wantErr: `the image "registry.example.com/other/memcached:1.6" is not allowed: an image must start with one of memcached:, registry.example.com/cache/`},
		{name: "a disallowed image", op: kube.Create, image: "nginx:1.27",
			wantErr: `the image "nginx:1.27" is not allowed: an image must start with one of memcached:, registry.example.com/cache/`},
		{name: "an update to a disallowed image", op: kube.Update, old: "memcached:1.6", image: "nginx:1.27",
			wantErr: `the image "nginx:1.27" is not allowed: an image must start with one of memcached:, registry.example.com/cache/`},
		{name: "an update that keeps an image no longer allowed", op: kube.Update, old: "nginx:1.27", image: "nginx:1.27",
			wantWarnings: []string{`the image "nginx:1.27" is no longer allowed (allowed: memcached:, registry.example.com/cache/): change it`}},
		{name: "every image allowed", images: Images{DefaultImage: DefaultImage}, op: kube.Create, image: "nginx:1.27"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := images
			if tt.images.DefaultImage != "" {
				i = tt.images
			}
			a := kube.Admission[ObjectV1beta1]{Operation: tt.op, Namespace: "default", Name: "cache", Object: v1beta1Object(tt.image)}
			if tt.op == kube.Update {
				a.OldObject = v1beta1Object(tt.old)
			}
			warnings, err := i.Validate(t.Context(), a)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.wantWarnings, warnings)
		})
	}
}

func TestImages_Default(t *testing.T) {
	images := Images{Allowed: []string{"memcached:"}, DefaultImage: "memcached:1.6.29"}
	tests := []struct {
		name, image, want string
	}{
		{name: "no image", image: "", want: "memcached:1.6.29"},
		{name: "an image of its own", image: "memcached:1.6.26", want: "memcached:1.6.26"},
		{name: "a disallowed image is Validate's to deny", image: "nginx:1.27", want: "nginx:1.27"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := v1beta1Object(tt.image)
			a := kube.Admission[ObjectV1beta1]{Operation: kube.Create, Object: m}
			want := m
			want.Spec.Image = tt.want
			warnings, err := images.Default(t.Context(), a, &m)
			require.NoError(t, err)
			require.Empty(t, warnings)
			require.Equal(t, want, m, "the image, and nothing else")
		})
	}
}
