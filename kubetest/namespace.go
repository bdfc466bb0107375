package kubetest

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLabel is the label Namespace puts on each namespace it creates; its
// value is the test's name, cut to fit a label value.
const TestLabel = "kubetest.loam.dev/test"

// Namespace creates a namespace for the test t and deletes it when t ends.
// Its name is the test's name, lower-cased and cut to fit, followed by a
// random suffix, so tests sharing a cluster never collide. Like the
// ServiceAccount controller of a real cluster would, it also creates the
// namespace's "default" ServiceAccount, which Pods need to be admitted.
//
// No namespace controller runs, so the deleted namespace stays Terminating
// and keeps its objects; nothing can be created in it any more. Namespace
// fails t if the namespace cannot be created, and reports an error if it
// cannot be deleted.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	base := namespaceBase(t.Name())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   base + "-" + randomSuffix(),
		Labels: map[string]string{TestLabel: base},
	}}
	created, err := c.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: create namespace %s: %v", ns.Name, err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		stopped := c.stopped
		c.mu.Unlock()
		if stopped {
			return // the cluster, and the namespace with it, is gone
		}
		err := c.admin.CoreV1().Namespaces().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("kubetest: delete namespace %s: %v", created.Name, err)
		}
	})
	// With WithWorkloadControllers, the serviceaccount controller may
	// have made it first.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := c.admin.CoreV1().ServiceAccounts(created.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubetest: create ServiceAccount %s/default: %v", created.Name, err)
	}
	return created.Name
}

// namespaceBase turns a test name into the start of a DNS-1123 label: lower
// case letters, digits and dashes, starting with a letter, at most 50
// characters so that a suffix still fits in 63.
func namespaceBase(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9' && b.Len() > 0:
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 50 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	if s == "" {
		s = "test"
	}
	return s
}

// randomSuffix returns six random lower-case letters and digits.
func randomSuffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails: see crypto/rand.Read
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
