package kubetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallCRDs creates each CustomResourceDefinition, or updates it if one of
// that name exists, and waits until every one is Established and its
// resources are listed by discovery, so that a client may use them at
// once. It returns an error naming each CRD that was rejected or whose
// names conflict with another's, or ctx's error.
//
// The garbage collector of WithControllerManager notices resources
// installed after it started within GarbageCollectorDiscoveryPeriod, and
// collects their objects within GarbageCollectorCollectionBound of their
// owner's deletion; CRDs of WithCRDs it knows from the start.
func (c *Cluster) InstallCRDs(ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	var errs []error
	for i, crd := range crds {
		if crd == nil {
			errs = append(errs, fmt.Errorf("kubetest: CRD %d: is nil", i))
			continue
		}
		if err := c.applyCRD(ctx, crd); err != nil {
			errs = append(errs, fmt.Errorf("kubetest: CRD %s: %w", crd.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, crd := range crds {
		if err := c.waitForCRD(ctx, crd); err != nil {
			errs = append(errs, fmt.Errorf("kubetest: CRD %s: %w", crd.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) applyCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	crds := c.apiextensions.ApiextensionsV1().CustomResourceDefinitions()
	want := crd.DeepCopy()
	want.ResourceVersion = ""
	_, err := crds.Create(ctx, want, metav1.CreateOptions{FieldManager: "kubetest"})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	current, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	want.ResourceVersion = current.ResourceVersion
	_, err = crds.Update(ctx, want, metav1.UpdateOptions{FieldManager: "kubetest"})
	return err
}

// waitForCRD polls until the CRD is Established and every served version
// is in discovery. A NamesAccepted condition of False fails at once: the
// names clash with another CRD's and will not be accepted by waiting.
func (c *Cluster) waitForCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := c.crdReady(ctx, crd)
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait to be Established: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func (c *Cluster) crdReady(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	got, err := c.apiextensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return false, nil // not yet visible, or the server is busy: poll again
	}
	established := false
	for _, cond := range got.Status.Conditions {
		switch {
		case cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse:
			return false, fmt.Errorf("names not accepted: %s", cond.Message)
		case cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue:
			established = true
		}
	}
	if !established {
		return false, nil
	}
	for _, v := range got.Spec.Versions {
		if !v.Served {
			continue
		}
		list, err := c.admin.Discovery().ServerResourcesForGroupVersion(got.Spec.Group + "/" + v.Name)
		if err != nil {
			return false, nil
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == got.Spec.Names.Plural }) {
			return false, nil
		}
	}
	return true, nil
}
