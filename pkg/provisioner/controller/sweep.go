package controller

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// Orphan-sweep defaults (capn-apiserver's --orphan-* flags).
const (
	DefaultOrphanGracePeriod  = 10 * time.Minute
	DefaultOrphanSweepPeriod  = time.Minute
	DefaultOrphanMaxDeletions = 5
)

// SweepConfig governs the orphan sweep: a management namespace whose owner
// UID names no NestedCluster (its finalizer was removed by break-glass, or
// capn's store lost the object) is deleted, carefully.
type SweepConfig struct {
	// GracePeriod is how long the owner must stay absent first: a
	// NestedCluster seen late by a restarting informer is not an orphan.
	GracePeriod time.Duration
	// Period is how often the sweep looks.
	Period time.Duration
	// MaxDeletions per Period is the brake: a bug or a damaged store
	// deletes a few namespaces, not every tenant.
	MaxDeletions int
}

// orphanSweep remembers since when each namespace's owner has been absent.
// Only the sweep's own goroutine touches it.
type orphanSweep struct {
	SweepConfig
	absentSince map[string]time.Time
}

// RunOrphanSweep sweeps every Settings.Sweep.Period until ctx ends. It
// needs the caches WatchManagement set up; call it after Run has synced
// them.
func (c *ClusterController) RunOrphanSweep(ctx context.Context) {
	s := &orphanSweep{SweepConfig: c.cfg.Sweep, absentSince: map[string]time.Time{}}
	logger := klog.FromContext(ctx).WithName("orphan-sweep")
	ctx = klog.NewContext(ctx, logger)
	if c.namespaces == nil || !cache.WaitForNamedCacheSync("capn-orphan-sweep", ctx.Done(), c.synced...) {
		return
	}
	logger.Info("Starting orphan sweep", "gracePeriod", s.GracePeriod, "period", s.Period, "maxDeletions", s.MaxDeletions)
	wait.UntilWithContext(ctx, func(ctx context.Context) { c.sweep(ctx, s) }, s.Period)
}

// sweep makes one pass and returns the namespaces it deleted.
func (c *ClusterController) sweep(ctx context.Context, s *orphanSweep) []string {
	logger := klog.FromContext(ctx)
	ncs, err := c.lister.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing NestedClusters")
		return nil
	}
	// An empty store is what a lost or replaced capn etcd looks like: every
	// namespace would look orphaned. Never start a clock then.
	if len(ncs) == 0 {
		logger.V(2).Info("Not sweeping: capn's store holds no NestedClusters")
		clear(s.absentSince)
		return nil
	}
	owners := make(map[types.UID]bool, len(ncs))
	for _, nc := range ncs {
		owners[nc.UID] = true
	}

	now := c.now()
	seen := map[string]bool{}
	var due []*corev1.Namespace
	managed := 0
	for _, obj := range c.namespaces.List() {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.Labels[provisioner.ManagedByLabel] != provisioner.ManagedByValue {
			continue
		}
		uid := types.UID(ns.Labels[provisioner.OwnerUIDLabel])
		// A namespace without an owner UID predates UID-named namespaces;
		// its owner is matched by name (LegacyOwnedBy), so it is never
		// swept on a UID's absence.
		if uid == "" {
			continue
		}
		managed++
		seen[ns.Name] = true
		if owners[uid] || ns.DeletionTimestamp != nil {
			delete(s.absentSince, ns.Name)
			continue
		}
		since, ok := s.absentSince[ns.Name]
		if !ok {
			s.absentSince[ns.Name] = now
			continue
		}
		if now.Sub(since) >= s.GracePeriod {
			due = append(due, ns)
		}
	}
	for name := range s.absentSince {
		if !seen[name] {
			delete(s.absentSince, name)
		}
	}
	orphansAwaiting.Set(float64(len(s.absentSince)))
	if len(due) == 0 {
		return nil
	}
	// Half the tenants orphaned at once is a damaged store (an old backup
	// restored, a wrong --etcd-servers), not many break-glass removals:
	// hold everything and let a human look.
	if len(due) > s.MaxDeletions && 2*len(due) >= managed {
		logger.Info("Not sweeping: too many management namespaces look orphaned at once; check capn's store", "orphaned", len(due), "managed", managed)
		sweepHeld.Inc()
		return nil
	}
	slices.SortFunc(due, func(a, b *corev1.Namespace) int { return s.absentSince[a.Name].Compare(s.absentSince[b.Name]) })
	var deleted []string
	for _, ns := range due[:min(len(due), s.MaxDeletions)] {
		proto := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.Name, UID: ns.UID}}
		if err := c.mgmt.Delete(ctx, proto); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Deleting orphaned management namespace", "namespace", ns.Name)
			continue
		}
		// The Shared cluster's syncer ClusterRoleBinding is cluster-scoped:
		// it goes with the namespace, or nothing would ever remove it.
		owner := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{UID: types.UID(ns.Labels[provisioner.OwnerUIDLabel])}}
		if err := c.finalizer.deleteSyncerBinding(ctx, owner); err != nil {
			logger.Error(err, "Deleting an orphaned syncer ClusterRoleBinding", "ownerUID", owner.UID)
		}
		absent := now.Sub(s.absentSince[ns.Name]).Round(time.Second)
		delete(s.absentSince, ns.Name)
		deleted = append(deleted, ns.Name)
		orphansDeleted.Inc()
		logger.Info("Deleted orphaned management namespace", "namespace", ns.Name, "ownerUID", ns.Labels[provisioner.OwnerUIDLabel], "absentFor", absent)
		c.recorder.Eventf(ns, corev1.EventTypeWarning, "OrphanDeleted",
			"deleted management namespace %s: no NestedCluster with UID %s has existed for %s", ns.Name, ns.Labels[provisioner.OwnerUIDLabel], absent)
	}
	return deleted
}
