package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// checkWorkloadNamespace refuses to apply into a workload namespace that
// exists without nc's UID: its name carries the UID, which a tenant that
// may create namespaces can read and race capn to; applying would adopt a
// namespace (and the RoleBindings) someone else made. Never adopted.
func (c *workloads) checkWorkloadNamespace(ctx context.Context, nc *v1alpha1.NestedCluster) error {
	name := provisioner.WorkloadNamespace(nc)
	live, err := c.mgmt.Get(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("getting workload namespace %s: %w", name, err)
	case !provisioner.OwnedBy(live.GetLabels(), nc):
		return fmt.Errorf("workload namespace %s: %w", name, provisioner.ErrNotOwned)
	case live.GetDeletionTimestamp() != nil:
		return fmt.Errorf("workload namespace %s is terminating", name)
	}
	return nil
}

// deleteDataPlane deletes nc's workload namespace (and so every tenant pod
// and copy in it) and the syncer's ClusterRoleBinding, each only if it
// carries nc's UID, and reports whether the namespace is gone. It runs for
// every mode: a cluster's mode cannot change, but this costs two lookups
// once, at deletion.
func (c *finalizer) deleteDataPlane(ctx context.Context, nc *v1alpha1.NestedCluster) (bool, error) {
	if err := c.deleteSyncerBinding(ctx, nc); err != nil {
		return false, err
	}
	proto := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.WorkloadNamespace(nc)}}
	live, err := c.mgmt.Get(ctx, proto)
	switch {
	case apierrors.IsNotFound(err):
		return c.volumesGone(ctx, proto.Name)
	case err != nil:
		return false, fmt.Errorf("getting workload namespace %s: %w", proto.Name, err)
	case !provisioner.OwnedBy(live.GetLabels(), nc):
		return true, nil // not ours: nothing of nc's is in it
	case live.GetDeletionTimestamp() != nil:
		return false, nil
	}
	proto.UID = live.GetUID()
	if err := c.mgmt.Delete(ctx, proto); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting workload namespace %s: %w", proto.Name, err)
	}
	klog.FromContext(ctx).Info("Deleting workload namespace", "namespace", proto.Name)
	c.recorder.Eventf(nc, corev1.EventTypeNormal, "Deleting", "deleting workload namespace %s", proto.Name)
	return false, nil
}

// volumesGone reports whether the volumes of the workload namespace's
// claims are gone: the claims went with the namespace, and the
// provisioner deletes their volumes (and the data on disk) after. A
// volume whose class retains it is the provider's to keep, and is not
// waited for.
func (c *finalizer) volumesGone(ctx context.Context, namespace string) (bool, error) {
	n, err := c.mgmt.DeletingVolumes(ctx, namespace)
	if err != nil {
		return false, fmt.Errorf("listing the volumes of workload namespace %s: %w", namespace, err)
	}
	if n > 0 {
		klog.FromContext(ctx).V(2).Info("Waiting for the tenant's volumes to be deleted", "namespace", namespace, "volumes", n)
	}
	return n == 0, nil
}

// deleteSyncerBinding deletes the syncer's ClusterRoleBinding of the
// cluster with nc's UID (the only field it reads), if it carries that UID:
// it is cluster-scoped, so deleting the cluster's namespaces leaves it.
func (c *finalizer) deleteSyncerBinding(ctx context.Context, nc *v1alpha1.NestedCluster) error {
	crb := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.SyncerClusterRoleBinding(nc)}}
	live, err := c.mgmt.Get(ctx, crb)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("getting ClusterRoleBinding %s: %w", crb.Name, err)
	case !provisioner.OwnedBy(live.GetLabels(), nc):
		return nil
	}
	crb.UID = live.GetUID()
	if err := c.mgmt.Delete(ctx, crb); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ClusterRoleBinding %s: %w", crb.Name, err)
	}
	return nil
}
