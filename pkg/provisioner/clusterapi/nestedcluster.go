package clusterapi

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
)

// normalizeVersion adds the "v" the contract lets a user leave out.
func normalizeVersion(v string) string {
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// controllerRef is the NestedControlPlane as its objects' controller; the
// UID in it, not the name, says what belongs to which control plane.
func controllerRef(ncp *controlplanev1alpha1.NestedControlPlane) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: controlplanev1alpha1.SchemeGroupVersion.String(), Kind: "NestedControlPlane",
		Name: ncp.Name, UID: ncp.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// controlledBy reports whether obj's controller is ncp (by UID).
func controlledBy(obj metav1.Object, ncp *controlplanev1alpha1.NestedControlPlane) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == ncp.UID
}

// newNestedCluster is the NestedCluster a NestedControlPlane creates: its
// name and namespace, ncp as controller, the Cluster's name as a label, and
// spec.nestedCluster with spec.version and spec.replicas.
func newNestedCluster(ncp *controlplanev1alpha1.NestedControlPlane, cluster string) *capnv1alpha1.NestedCluster {
	nc := &capnv1alpha1.NestedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: ncp.Name, Namespace: ncp.Namespace,
			Labels:          map[string]string{ClusterNameLabel: cluster},
			OwnerReferences: []metav1.OwnerReference{controllerRef(ncp)}},
		Spec: *ncp.Spec.NestedCluster.DeepCopy(),
	}
	nc.Spec.Version = normalizeVersion(ncp.Spec.Version)
	nc.Spec.APIServer.Replicas = ncp.Spec.Replicas
	return nc
}

// specUpdate is live's spec as ncp wants it, for what only a spec update
// changes: version and apiServer.replicas stay live's (/upgrade and /scale
// change them, with their checks), restoreFrom is immutable, and what the
// registry fills in on create only (the data-plane mode, the Shared service
// range, the provider's default sleep) stays when ncp leaves it empty.
// Defaults are applied, so an unchanged ncp gives exactly live's spec; ok
// is false then.
func specUpdate(ncp *controlplanev1alpha1.NestedControlPlane, live *capnv1alpha1.NestedCluster) (spec capnv1alpha1.NestedClusterSpec, ok bool) {
	want := capnv1alpha1.NestedCluster{Spec: *ncp.Spec.NestedCluster.DeepCopy()}
	s := &want.Spec
	s.Version = live.Spec.Version
	s.APIServer.Replicas = live.Spec.APIServer.Replicas
	s.RestoreFrom = live.Spec.RestoreFrom.DeepCopy()
	if s.DataPlane.Mode == "" {
		s.DataPlane.Mode = live.Spec.DataPlane.Mode
	}
	if s.ClusterNetwork.ServiceCIDR == "" {
		s.ClusterNetwork.ServiceCIDR = live.Spec.ClusterNetwork.ServiceCIDR
	}
	if reflect.DeepEqual(s.Sleep, capnv1alpha1.SleepSpec{}) {
		s.Sleep = *live.Spec.Sleep.DeepCopy()
	}
	capnv1alpha1.SetObjectDefaults_NestedCluster(&want)
	return want.Spec, !equality.Semantic.DeepEqual(want.Spec, live.Spec)
}

// ensureNestedCluster creates ncp's NestedCluster, or brings the live one's
// spec to ncp's. A NestedCluster of that name that ncp does not control is
// never adopted or changed.
func (c *Controller) ensureNestedCluster(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, cluster string) (*capnv1alpha1.NestedCluster, *failure) {
	live, err := c.nestedClusters.NestedClusters(ncp.Namespace).Get(ncp.Name)
	if apierrors.IsNotFound(err) {
		created, err := c.capn.CapnV1alpha1().NestedClusters(ncp.Namespace).Create(ctx, newNestedCluster(ncp, cluster),
			metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, refused(ReasonRefused, "creating NestedCluster", err)
		}
		return created, nil
	}
	if err != nil {
		return nil, retry(err)
	}
	if !controlledBy(live, ncp) {
		return nil, &failure{reason: ReasonNameInUse, terminal: true,
			message: fmt.Sprintf("a NestedCluster %s exists in namespace %s that this NestedControlPlane does not own; capn never adopts one", ncp.Name, ncp.Namespace)}
	}
	spec, changed := specUpdate(ncp, live)
	if !changed {
		return live, nil
	}
	update := live.DeepCopy()
	update.Spec = spec
	updated, err := c.capn.CapnV1alpha1().NestedClusters(ncp.Namespace).Update(ctx, update, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return live, refused(ReasonRefused, "updating NestedCluster", err)
	}
	return updated, nil
}
