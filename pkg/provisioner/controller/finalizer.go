package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// namespaceGoneRequeue is a safety net while a namespace terminates: its
// removal normally arrives through WatchManagement.
const namespaceGoneRequeue = 15 * time.Second

// finalizer owns the cluster's deletion: the finalizer, the management
// and workload namespaces (dataplane.go), and forgetting what the other
// operations hold in memory for the cluster.
type finalizer struct {
	*env
	pools    *poolMembership
	tenants  *tenantAccess
	activity *activityMonitor
}

// ensureFinalizer adds v1alpha1.ProvisionerFinalizer before anything is
// created, and returns the updated object so later steps write against its
// resourceVersion.
func (c *finalizer) ensureFinalizer(ctx context.Context, nc *v1alpha1.NestedCluster) (*v1alpha1.NestedCluster, error) {
	if slices.Contains(nc.Finalizers, v1alpha1.ProvisionerFinalizer) {
		return nc, nil
	}
	nc.Finalizers = append(nc.Finalizers, v1alpha1.ProvisionerFinalizer)
	out, err := c.capn.CapnV1alpha1().NestedClusters(nc.Namespace).Update(ctx, nc, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Added finalizer")
	c.recorder.Event(out, corev1.EventTypeNormal, "FinalizerAdded", "capn will delete the control plane when this NestedCluster is deleted")
	return out, nil
}

// finalize deletes the management namespace (and so every object in it),
// waits until it is gone, then releases the NestedCluster. It runs whether
// or not the cluster is paused: a paused cluster must still be deletable.
func (c *finalizer) finalize(ctx context.Context, nc *v1alpha1.NestedCluster) (time.Duration, error) {
	if !slices.Contains(nc.Finalizers, v1alpha1.ProvisionerFinalizer) {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	c.activity.forgetActivity(nc.UID)
	// Never delete a namespace another cluster owns (ResolveNamespace):
	// the finalizer stays, for the provider to look at.
	name, err := resolveNamespace(ctx, c.mgmt, nc)
	if err != nil {
		return 0, c.reportFailure(ctx, nc, failed(v1alpha1.ReasonDeleteFailed, fmt.Errorf("resolving the management namespace (refusing to delete it): %w", err)))
	}
	// The workload namespace goes at the same time: the syncer that
	// would recreate host pods goes with the control-plane namespace.
	dataPlaneGone, err := c.deleteDataPlane(ctx, nc)
	if err != nil {
		return 0, c.reportFailure(ctx, nc, failed(v1alpha1.ReasonDeleteFailed, err))
	}
	proto := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	live, err := c.mgmt.Get(ctx, proto)
	switch {
	case apierrors.IsNotFound(err) && !dataPlaneGone:
		return namespaceGoneRequeue, nil
	case apierrors.IsNotFound(err):
		// Gone without capn (deleted by hand): the pool may still hold
		// the cluster's user and keys.
		if err := c.pools.releaseEtcdPool(ctx, nc); err != nil {
			return 0, c.reportFailure(ctx, nc, failed(v1alpha1.ReasonDeleteFailed, err))
		}
		nc.Finalizers = slices.DeleteFunc(nc.Finalizers, func(f string) bool { return f == v1alpha1.ProvisionerFinalizer })
		if _, err := c.capn.CapnV1alpha1().NestedClusters(nc.Namespace).Update(ctx, nc, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return 0, fmt.Errorf("removing finalizer: %w", err)
		}
		c.tenants.forgetBootstrap(nc.UID)
		logger.Info("Control plane deleted, finalizer removed", "namespace", proto.Name)
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("getting namespace %s: %w", proto.Name, err)
	}
	// Resolved above, but re-checked on the object about to be deleted.
	if !provisioner.OwnedBy(live.GetLabels(), nc) && !provisioner.LegacyOwnedBy(live.GetLabels(), nc) {
		return 0, c.reportFailure(ctx, nc, failed(v1alpha1.ReasonDeleteFailed,
			fmt.Errorf("namespace %s (refusing to delete it): %w", proto.Name, provisioner.ErrNotOwned)))
	}
	if nc.Status.Phase != v1alpha1.PhaseDeleting {
		st := nc.Status.DeepCopy()
		st.Phase = v1alpha1.PhaseDeleting
		if _, err := c.writeStatus(ctx, nc, st); err != nil {
			return 0, err
		}
	}
	if live.GetDeletionTimestamp() == nil {
		// Out of the pool before the namespace goes: once the apiserver
		// is gone nothing else knows the cluster's etcd user and keys are
		// there. Once, not on every pass while the namespace terminates.
		if err := c.pools.releaseEtcdPool(ctx, nc); err != nil {
			return 0, c.reportFailure(ctx, nc, failed(v1alpha1.ReasonDeleteFailed, err))
		}
		if err := c.mgmt.Delete(ctx, proto); err != nil && !apierrors.IsNotFound(err) {
			return 0, c.reportFailure(ctx, nc, failed(v1alpha1.ReasonDeleteFailed, fmt.Errorf("deleting namespace %s: %w", proto.Name, err)))
		}
		logger.Info("Deleting control plane", "namespace", proto.Name)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "Deleting", "deleting management namespace %s", proto.Name)
	}
	return namespaceGoneRequeue, nil
}

// reportFailure records a failed step of a sync that derives no full
// status (deletion): Reconciled=False with the step as reason, then, once
// that write succeeded, the same as a Warning Event. It returns err for the
// retry.
func (c *env) reportFailure(ctx context.Context, nc *v1alpha1.NestedCluster, err error) error {
	var se *stepError
	if !errors.As(err, &se) {
		return err
	}
	st := nc.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReconciled, Status: metav1.ConditionFalse,
		Reason: se.reason, Message: truncate(se.err.Error(), maxFailureMessage), ObservedGeneration: nc.Generation})
	if _, werr := c.writeStatus(ctx, nc, st); werr != nil {
		return fmt.Errorf("%w (and %w)", err, werr)
	}
	c.recordStatusEvents(ctx, nc, &observation{}, err)
	return err
}
