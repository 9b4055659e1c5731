package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/backup"
	informers "capn.dev/capn/pkg/generated/informers/externalversions/capn/v1alpha1"
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
)

const (
	// backupTimeout bounds one attempt at taking a backup.
	backupTimeout = 5 * time.Minute
	// backupWait is how soon a backup waiting for its cluster's etcd
	// looks again.
	backupWait = 10 * time.Second
	// backupAttempts: a backup compacted away under it (the tenant
	// apiserver compacts every few minutes) is taken again this often.
	backupAttempts = 3
)

// BackupController is the backups loop: it takes NestedClusterBackups from
// their clusters' etcd and deletes a deleted backup's data.
type BackupController struct {
	*env
	*etcdAccess
	lister      listers.NestedClusterLister
	backups     listers.NestedClusterBackupLister
	backupQueue workqueue.TypedRateLimitingInterface[string]
	store       backup.Store
}

// NewBackupController wires the backups loop to its informer; call Run to
// start it.
func NewBackupController(o Options, sh *Shared) (*BackupController, error) {
	c := &BackupController{env: sh.env, etcdAccess: sh.etcd, lister: o.Informer.Lister(), store: o.BackupStore,
		backupQueue: newQueue("capn-backups")}
	if err := c.watchBackups(o.BackupInformer); err != nil {
		return nil, err
	}
	return c, nil
}

// Run takes backups once synced say the caches are, until ctx ends.
func (c *BackupController) Run(ctx context.Context, synced ...cache.InformerSynced) {
	runQueue(ctx, "capn-backups", c.backupQueue, c.backupWorker, synced)
}

// watchBackups queues every backup change.
func (c *BackupController) watchBackups(backups informers.NestedClusterBackupInformer) error {
	c.backups = backups.Lister()
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.backupQueue.Add(key)
		}
	}
	_, err := backups.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return err
}

func (c *BackupController) backupWorker(ctx context.Context) {
	for {
		key, quit := c.backupQueue.Get()
		if quit {
			return
		}
		after, err := c.syncBackup(ctx, key)
		switch {
		case err != nil:
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing NestedClusterBackup", "key", key)
			c.backupQueue.AddRateLimited(key)
		case after > 0:
			c.backupQueue.Forget(key)
			c.backupQueue.AddAfter(key, after)
		default:
			c.backupQueue.Forget(key)
		}
		c.backupQueue.Done(key)
	}
}

// syncBackup takes a Pending backup once, and deletes a deleted backup's
// data before letting its object go.
func (c *BackupController) syncBackup(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.backups.NestedClusterBackups(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	b := cached.DeepCopy()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("nestedclusterbackup", key))
	if b.DeletionTimestamp != nil {
		return 0, c.finalizeBackup(ctx, b)
	}
	if b.Status.Phase == v1alpha1.BackupCompleted || b.Status.Phase == v1alpha1.BackupFailed {
		return 0, nil
	}
	st, wait := c.takeBackup(ctx, b)
	if st.Phase == v1alpha1.BackupPending && b.Status.Phase == v1alpha1.BackupPending && st.Message == b.Status.Message {
		return wait, nil
	}
	b.Status = st
	if _, err := c.capn.CapnV1alpha1().NestedClusterBackups(namespace).UpdateStatus(ctx, b, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return 0, fmt.Errorf("updating the backup's status: %w", err)
	}
	return wait, nil
}

// takeBackup returns the backup's new status, and when to look again if it
// is still Pending. Messages are capn's own: a tenant reads them, and the
// store's and etcd's errors (paths, addresses) go to the log.
func (c *BackupController) takeBackup(ctx context.Context, b *v1alpha1.NestedClusterBackup) (v1alpha1.NestedClusterBackupStatus, time.Duration) {
	logger := klog.FromContext(ctx)
	pending := func(msg string) (v1alpha1.NestedClusterBackupStatus, time.Duration) {
		return v1alpha1.NestedClusterBackupStatus{Phase: v1alpha1.BackupPending, Message: msg}, backupWait
	}
	fail := func(msg string) (v1alpha1.NestedClusterBackupStatus, time.Duration) {
		return v1alpha1.NestedClusterBackupStatus{Phase: v1alpha1.BackupFailed, Message: msg}, 0
	}
	if c.store == nil {
		return fail("this capn-apiserver has no backup store (--backup-dir)")
	}
	nc, err := c.lister.NestedClusters(b.Namespace).Get(b.Spec.ClusterName)
	switch {
	case apierrors.IsNotFound(err):
		return fail("NestedCluster " + b.Spec.ClusterName + " does not exist")
	case err != nil:
		return pending("reading NestedCluster " + b.Spec.ClusterName)
	case nc.DeletionTimestamp != nil:
		return fail("NestedCluster " + b.Spec.ClusterName + " is being deleted")
	case nc.Spec.Etcd.External != nil:
		return fail("NestedCluster " + b.Spec.ClusterName + " keeps its state in an external etcd: back it up where it runs")
	case nc.Spec.RestoreFrom != nil && !meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionRestored):
		return pending("NestedCluster " + b.Spec.ClusterName + " is still being restored")
	case nc.Spec.Etcd.Managed != nil && !meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionEtcdReady):
		return pending("waiting for the etcd of NestedCluster " + b.Spec.ClusterName + " to be ready")
	}
	ns, err := resolveNamespace(ctx, c.mgmt, nc)
	if err != nil {
		logger.Error(err, "Resolving the cluster's management namespace")
		return pending("waiting for the control plane of NestedCluster " + b.Spec.ClusterName)
	}
	var s backup.Summary
	for attempt := 1; ; attempt++ {
		s, err = c.snapshot(ctx, nc, ns, backup.Key(b.Namespace, string(b.UID)))
		if err == nil || !errors.Is(err, rpctypes.ErrCompacted) || attempt == backupAttempts {
			break
		}
	}
	if err != nil {
		logger.Error(err, "Taking a backup")
		return pending("could not read the cluster's etcd or write the backup store; capn keeps trying")
	}
	logger.Info("Took a backup", "cluster", nc.Name, "keys", s.Keys, "bytes", s.Bytes, "revision", s.Revision)
	now := metav1.NewTime(c.now())
	return v1alpha1.NestedClusterBackupStatus{
		Phase: v1alpha1.BackupCompleted, ClusterUID: nc.UID, Revision: s.Revision, Keys: s.Keys, SizeBytes: s.Bytes, CompletionTime: &now,
	}, 0
}

// snapshot writes the cluster's keys to the store under key: visible
// there only once whole.
func (c *BackupController) snapshot(ctx context.Context, nc *v1alpha1.NestedCluster, ns, key string) (backup.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	cli, prefix, err := c.tenantEtcd(ctx, nc, ns)
	if err != nil {
		return backup.Summary{}, err
	}
	defer func() { _ = cli.Close() }()
	w, err := c.store.Create(ctx, key)
	if err != nil {
		return backup.Summary{}, fmt.Errorf("creating %s in the store: %w", key, err)
	}
	s, err := backup.Snapshot(ctx, cli, prefix, w)
	if err != nil {
		w.Abort()
		return backup.Summary{}, err
	}
	if err := w.Close(); err != nil {
		return backup.Summary{}, fmt.Errorf("storing %s: %w", key, err)
	}
	return s, nil
}

// finalizeBackup deletes the backup's data, then lets the object go.
func (c *BackupController) finalizeBackup(ctx context.Context, b *v1alpha1.NestedClusterBackup) error {
	if !slices.Contains(b.Finalizers, v1alpha1.BackupFinalizer) {
		return nil
	}
	if c.store == nil {
		return fmt.Errorf("no backup store to delete %s/%s from", b.Namespace, b.Name)
	}
	if err := c.store.Delete(ctx, backup.Key(b.Namespace, string(b.UID))); err != nil {
		return fmt.Errorf("deleting the backup's data: %w", err)
	}
	b.Finalizers = slices.DeleteFunc(b.Finalizers, func(f string) bool { return f == v1alpha1.BackupFinalizer })
	if _, err := c.capn.CapnV1alpha1().NestedClusterBackups(b.Namespace).Update(ctx, b, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the backup's finalizer: %w", err)
	}
	klog.FromContext(ctx).Info("Deleted a backup's data")
	return nil
}
