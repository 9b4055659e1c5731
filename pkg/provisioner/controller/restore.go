package controller

import (
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/builders"
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/backup"
)

// restoreTimeout bounds one attempt at writing a backup into a tenant's
// etcd; a failed attempt is retried from the start (Puts overwrite).
const restoreTimeout = 5 * time.Minute

// restoreState is spec.restoreFrom's progress in one sync.
type restoreState struct {
	// pending: the backup is not known to be in etcd yet, so everything but
	// etcd is held at zero replicas (Params.Restoring).
	pending bool
	// done is what this sync wrote; the Restored condition records it.
	done *backup.Summary
}

// planRestore: a cluster created from a backup waits for it until its
// Restored condition says it is written. The condition is the record: it
// is written in the same status update that ends the wait, and until it
// is, a restart of capn writes the backup again into an etcd no apiserver
// has used.
func planRestore(nc *v1alpha1.NestedCluster) restoreState {
	return restoreState{pending: nc.Spec.RestoreFrom != nil && !meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionRestored)}
}

// restorer writes a backup into a new cluster's etcd before its
// components start.
type restorer struct {
	*env
	*etcdAccess
	backups listers.NestedClusterBackupLister
	store   backup.Store
}

// ensureRestore writes the backup into the cluster's etcd once that etcd
// serves (a pool serves from the start). The backup is read twice: once
// whole to verify it, so nothing is written from a corrupt one.
func (c *restorer) ensureRestore(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, o *observation) error {
	ns := p.Namespace
	if !o.restore.pending {
		return nil
	}
	if nc.Spec.Etcd.Managed != nil && !o.components(nc)[v1alpha1.ComponentEtcd].available {
		return nil // the next sync, when the etcd StatefulSet changes
	}
	if c.backups == nil || c.store == nil {
		return fmt.Errorf("this capn keeps no backups")
	}
	name := nc.Spec.RestoreFrom.Backup
	b, err := c.backups.NestedClusterBackups(nc.Namespace).Get(name)
	if err != nil {
		return fmt.Errorf("NestedClusterBackup %s: %w", name, err)
	}
	if b.Status.Phase != v1alpha1.BackupCompleted {
		return fmt.Errorf("NestedClusterBackup %s is %s, not Completed", name, b.Status.Phase)
	}
	ctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	key := backup.Key(b.Namespace, string(b.UID))
	verify, err := c.store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("NestedClusterBackup %s: opening its data: %w", name, err)
	}
	_, err = backup.Verify(verify)
	_ = verify.Close()
	if err != nil {
		return fmt.Errorf("NestedClusterBackup %s: %w", name, err)
	}
	cli, prefix, err := c.tenantEtcd(ctx, nc, ns)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	r, err := c.store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("NestedClusterBackup %s: opening its data: %w", name, err)
	}
	defer func() { _ = r.Close() }()
	s, err := backup.Restore(ctx, cli, prefix, r)
	if err != nil {
		return fmt.Errorf("writing NestedClusterBackup %s: %w", name, err)
	}
	o.restore.done = &s
	klog.FromContext(ctx).Info("Restored the cluster's etcd from a backup", "backup", name, "keys", s.Keys, "revision", s.Revision)
	return nil
}

// restoredCondition is the Restored condition a sync leaves; ok is false
// for a cluster not created from a backup.
func restoredCondition(nc *v1alpha1.NestedCluster, r restoreState) (metav1.Condition, bool) {
	if nc.Spec.RestoreFrom == nil {
		return metav1.Condition{}, false
	}
	c := metav1.Condition{Type: v1alpha1.ConditionRestored, ObservedGeneration: nc.Generation}
	switch {
	case r.done != nil:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonRestoreSucceeded
		c.Message = fmt.Sprintf("%d keys from NestedClusterBackup %s (etcd revision %d of the backed-up cluster)", r.done.Keys, nc.Spec.RestoreFrom.Backup, r.done.Revision)
	case r.pending:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRestoring
		c.Message = "kube-apiserver and the other components start once NestedClusterBackup " + nc.Spec.RestoreFrom.Backup + " is written into etcd"
	default:
		return metav1.Condition{}, false // True already: leave it as it is
	}
	return c, true
}
