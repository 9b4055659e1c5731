package clusterapi

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
)

// scale sets the apiserver's replicas through nestedclusters/scale, as
// `kubectl scale nestedcluster` does, when spec.replicas differs. Unset
// spec.replicas leaves the NestedCluster's own.
func (c *Controller) scale(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, nc *capnv1alpha1.NestedCluster) *failure {
	if ncp.Spec.Replicas == nil || ptr.Deref(nc.Spec.APIServer.Replicas, 1) == *ncp.Spec.Replicas {
		return nil
	}
	clusters := c.capn.CapnV1alpha1().NestedClusters(nc.Namespace)
	s, err := clusters.GetScale(ctx, nc.Name, metav1.GetOptions{})
	if err != nil {
		return retry(err)
	}
	s.Spec.Replicas = *ncp.Spec.Replicas
	if _, err := clusters.UpdateScale(ctx, nc.Name, s, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return refused(ReasonScaleRefused, "scaling NestedCluster", err)
	}
	return nil
}
