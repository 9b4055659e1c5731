package clusterapi

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
)

// upgrade asks nestedclusters/upgrade for spec.version when it differs:
// the subresource checks the skew policy and the provisioner then runs the
// ordered upgrade (or the rollback, when spec.version goes back).
func (c *Controller) upgrade(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, nc *capnv1alpha1.NestedCluster) (*capnv1alpha1.NestedCluster, *failure) {
	want := normalizeVersion(ncp.Spec.Version)
	if want == nc.Spec.Version {
		return nc, nil
	}
	body := &capnv1alpha1.NestedClusterUpgrade{Version: want}
	upgraded, err := c.capn.CapnV1alpha1().NestedClusters(nc.Namespace).Upgrade(ctx, nc.Name, body, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nc, refused(ReasonUpgradeRefused, "upgrading NestedCluster to "+want, err)
	}
	return upgraded, nil
}
