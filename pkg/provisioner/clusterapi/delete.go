package clusterapi

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
)

// reconcileDelete deletes ncp's NestedCluster and holds ncp until it is
// gone: the NestedCluster's own finalizer removes its control plane, its
// namespaces and its tenant's pods, and Cluster API waits on ncp, so the
// Cluster's deletion waits for all of it. The kubeconfig Secret follows ncp
// through its owner reference.
func (c *Controller) reconcileDelete(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane) error {
	if !slices.Contains(ncp.Finalizers, Finalizer) {
		return nil
	}
	nc, err := c.nestedClusters.NestedClusters(ncp.Namespace).Get(ncp.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case controlledBy(nc, ncp):
		if nc.DeletionTimestamp == nil {
			err := c.capn.CapnV1alpha1().NestedClusters(ncp.Namespace).Delete(ctx, nc.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(nc.UID)}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		// Its deletion event brings ncp back here.
		return nil
	}
	return c.setFinalizer(ctx, ncp, false)
}
