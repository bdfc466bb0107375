package memcached

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// imagePatterns returns the pattern of spec.image of each version of
// deploy/crd.yaml's CRD, by version.
func imagePatterns(t *testing.T) map[string]*regexp.Regexp {
	t.Helper()
	crd, err := MemcachedV1beta1.CRD()
	require.NoError(t, err)
	out := map[string]*regexp.Regexp{}
	for _, v := range crd.Spec.Versions {
		p := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["image"].Pattern
		require.NotEmpty(t, p, "%s's image has a pattern", v.Name)
		out[v.Name] = regexp.MustCompile(p)
	}
	require.Len(t, out, 2)
	return out
}

// Every image v1alpha1's schema admits, v1beta1's admits too: the API
// server stores a v1alpha1 Memcached as v1beta1, whose schema refuses a
// malformed image whatever the webhooks say, and serves it as v1beta1.
// v1alpha1 admitted "memcached:", an image with no tag, which the
// explorer found writing one spec in both versions (issue #47): v1beta1
// refused it, and v1alpha1 stored it, for a Deployment of pods that can
// never pull it.
func TestImage_v1alpha1_admits_only_images_v1beta1_admits(t *testing.T) {
	patterns := imagePatterns(t)
	alpha, beta := patterns["v1alpha1"], patterns["v1beta1"]
	for _, image := range []string{DefaultImage, "memcached:1.6", "memcached:latest", "memcached:1.6.29-alpine", "memcached:_x"} {
		require.True(t, alpha.MatchString(image), "v1alpha1 admits %q", image)
		require.True(t, beta.MatchString(image), "v1beta1 admits %q", image)
	}
	for _, image := range []string{"memcached:", "memcached:1.6 ", "memcached:-1", "memcached:.1", "memcached:a b", "memcached:1@sha256:0"} {
		require.False(t, alpha.MatchString(image), "v1alpha1 refuses %q", image)
	}
	// Suffixes of memcached: drawn from the characters an image has,
	// and a few it mustn't.
	const chars = "abcXYZ019_.-:/@ "
	rng := rand.New(rand.NewPCG(47, 47))
	for range 20000 {
		b := []byte("memcached:")
		for range rng.IntN(8) {
			b = append(b, chars[rng.IntN(len(chars))])
		}
		if image := string(b); alpha.MatchString(image) {
			require.True(t, beta.MatchString(image), "v1alpha1 admits %q, which v1beta1 refuses", image)
		}
	}
}
