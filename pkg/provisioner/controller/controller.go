package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/backup"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	informers "capn.dev/capn/pkg/generated/informers/externalversions/capn/v1alpha1"
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/pki"
)

// notReadyRequeue is a safety net for a cluster that is still coming up:
// workload changes arrive through WatchManagement, but a tenant apiserver
// that is ready before its RBAC bootstrap succeeds changes nothing we watch.
const notReadyRequeue = 30 * time.Second

// Options are the controller's collaborators.
type Options struct {
	// Capn reads and writes NestedClusters (finalizer, status).
	Capn       versioned.Interface
	Informer   informers.NestedClusterInformer
	Management Management
	// Recorder records Events on the NestedCluster.
	Recorder record.EventRecorder
	// Settings, completed (Settings.Complete).
	Settings Settings
	// Now is the clock for certificates; nil means time.Now.
	Now func() time.Time
	// TenantClient reaches a tenant apiserver for its RBAC bootstrap; nil
	// means access.BootstrapClient.
	TenantClient TenantClientFunc
	// Placement schedules every control-plane pod (provider-owned).
	Placement builders.Placement
	// Health, if set, is told of cache sync and of every finished sync.
	Health *Health
	// DataPlane is the provider's side of Shared data planes.
	DataPlane builders.DataPlane
	// PoolInformer serves the NestedEtcdPools clusters name in
	// spec.etcd.pool; nil refuses such clusters (ReasonEtcdPoolFailed).
	PoolInformer informers.NestedEtcdPoolInformer
	// BackupInformer serves NestedClusterBackups and spec.restoreFrom;
	// nil leaves backups Pending and restores failing.
	BackupInformer informers.NestedClusterBackupInformer
	// BackupStore keeps the backups' data; nil fails every backup.
	BackupStore backup.Store
}

// Controller reconciles NestedClusters into management-cluster objects.
type Controller struct {
	capn     versioned.Interface
	lister   listers.NestedClusterLister
	synced   []cache.InformerSynced
	mgmt     Management
	recorder record.EventRecorder
	cfg      Settings
	now      func() time.Time
	queue    workqueue.TypedRateLimitingInterface[string]

	tenantClient TenantClientFunc
	mu           sync.Mutex
	// bootstrapped maps a NestedCluster's UID to its tenant bootstrap
	// (ensureTenantAccess); finalize forgets it.
	bootstrapped map[types.UID]*tenantBootstrap
	// tenantSlots bounds the bootstraps in flight; tenantWG counts them;
	// tenantWaiting holds the clusters that found no free slot.
	tenantSlots   chan struct{}
	tenantWaiting map[string]struct{}
	tenantWG      sync.WaitGroup
	// namespaces indexes capn's management namespaces (WatchManagement).
	namespaces cache.Indexer
	placement  builders.Placement
	health     *Health
	dataPlane  builders.DataPlane
	// activity maps a NestedCluster's UID to its use (activity.go);
	// activitySlots bounds the reads in flight, activityWG counts them.
	activity       map[types.UID]*activity
	tenantRequests func(ctx context.Context, server string, ca *pki.CA) (int64, error)
	activitySlots  chan struct{}
	activityWG     sync.WaitGroup
	// pools lists NestedEtcdPools (nil: none served); poolGrants maps a
	// pooled cluster's UID to the pool credentials it was granted with
	// (etcdpool.go); poolQueue drives the pools' own status (pools.go).
	pools      listers.NestedEtcdPoolLister
	poolGrants map[types.UID]string
	poolQueue  workqueue.TypedRateLimitingInterface[string]
	// backups lists NestedClusterBackups (nil: none served); backupQueue
	// takes and finalizes them (backups.go); store keeps their data.
	backups     listers.NestedClusterBackupLister
	backupQueue workqueue.TypedRateLimitingInterface[string]
	store       backup.Store
}

// New wires the controller to its informer; call Run to start it.
func New(o Options) (*Controller, error) {
	registerMetrics()
	c := &Controller{
		capn:     o.Capn,
		lister:   o.Informer.Lister(),
		synced:   []cache.InformerSynced{o.Informer.Informer().HasSynced},
		mgmt:     countWrites{o.Management},
		recorder: o.Recorder,
		cfg:      o.Settings,
		now:      o.Now,

		tenantClient:  o.TenantClient,
		bootstrapped:  map[types.UID]*tenantBootstrap{},
		tenantWaiting: map[string]struct{}{},
		tenantSlots:   make(chan struct{}, DefaultTenantConcurrency),
		activity:      map[types.UID]*activity{},
		activitySlots: make(chan struct{}, activityConcurrency),
		poolGrants:    map[types.UID]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "capn-provisioner"}),
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.tenantClient == nil {
		c.tenantClient = access.BootstrapClient
	}
	c.placement = o.Placement
	c.health = o.Health
	c.dataPlane = o.DataPlane
	c.tenantRequests = c.tenantRequestsOf
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		c.queue.Add(key)
	}
	_, err := o.Informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		// Deletion is driven by the finalizer (an update that sets
		// deletionTimestamp); the final delete needs no work.
	})
	if err != nil {
		return nil, fmt.Errorf("adding event handler: %w", err)
	}
	if o.PoolInformer != nil {
		c.poolQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "capn-pools"})
		if err := c.watchPools(o.PoolInformer, o.Informer.Informer()); err != nil {
			return nil, err
		}
	}
	c.store = o.BackupStore
	if o.BackupInformer != nil {
		c.backupQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "capn-backups"})
		if err := c.watchBackups(o.BackupInformer); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes the queue with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting provisioner controller")
	defer logger.Info("Shutting down provisioner controller")
	if !cache.WaitForNamedCacheSync("capn-provisioner", ctx.Done(), c.synced...) {
		return
	}
	cachesSynced.Set(1)
	defer cachesSynced.Set(0)
	c.health.cachesSynced(c.queue.Len)
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	if c.poolQueue != nil {
		defer c.poolQueue.ShutDown()
		go wait.UntilWithContext(ctx, c.poolWorker, time.Second)
	}
	if c.backupQueue != nil {
		defer c.backupQueue.ShutDown()
		go wait.UntilWithContext(ctx, c.backupWorker, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	after, err := c.sync(ctx, key)
	c.health.syncDone()
	result := "success"
	if err != nil {
		result = "error"
	}
	syncs.WithLabelValues(result).Inc()
	switch {
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing NestedCluster", "key", key)
		c.queue.AddRateLimited(key)
	case after > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.queue.Forget(key)
	}
	return true
}

// sync drives one NestedCluster one step closer to its spec. It returns a
// delay after which to look again even without an event.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.lister.NestedClusters(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil // gone; the finalizer already cleaned up
	}
	if err != nil {
		return 0, err
	}
	nc := cached.DeepCopy() // never mutate the informer's cache
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("nestedcluster", key))

	if nc.DeletionTimestamp != nil {
		return c.finalize(ctx, nc)
	}
	if nc, err = c.ensureFinalizer(ctx, nc); err != nil {
		return 0, err
	}
	// Paused is checked after the finalizer (deletion must still clean up)
	// and before anything touches the management cluster.
	if nc.Spec.Paused {
		return 0, c.pause(ctx, nc)
	}
	o := &observation{}
	stepErr := c.reconcile(ctx, nc, o)
	st, ready := deriveStatus(nc, o, stepErr)
	_, werr := c.writeStatus(ctx, nc, st)
	if werr == nil {
		c.recordStatusEvents(ctx, nc, o, stepErr)
	}
	switch {
	case werr != nil && stepErr != nil:
		return 0, fmt.Errorf("%w (and %w)", stepErr, werr)
	case werr != nil:
		return 0, werr
	case stepErr != nil:
		var se *stepError
		if errors.As(stepErr, &se) && se.retryAfter > 0 {
			// Its own backoff (the tenant bootstrap), not the queue's.
			return se.retryAfter, nil
		}
		return 0, stepErr
	case !ready:
		return notReadyRequeue, nil
	}
	return o.sleep.recheck, nil
}

// reconcile runs the sync's steps in order and stops at the first that
// fails, returning it as a *stepError. It fills o as it goes; deriveStatus
// turns o and the error into status.
func (c *Controller) reconcile(ctx context.Context, nc *v1alpha1.NestedCluster, o *observation) error {
	ns, err := c.ensureNamespace(ctx, nc)
	if err != nil {
		return failed(v1alpha1.ReasonNamespaceFailed, err)
	}
	// The one read of the workloads this sync makes (observation).
	if err := c.observeWorkloads(ctx, nc, ns, o); err != nil {
		return failed(v1alpha1.ReasonObserveFailed, err)
	}
	o.sleep = decideSleep(nc, o, c.now())
	o.restore = planRestore(nc)
	if o.sleep.asked || o.sleep.woke != "" {
		// Asleep nobody uses it; awake again, its idle time starts over.
		c.forgetActivity(nc.UID)
	}
	// Before the Services: every render of a pooled cluster needs its pool.
	pool, poolHash, err := c.ensureEtcdPool(ctx, nc, ns)
	if err != nil {
		return failed(v1alpha1.ReasonEtcdPoolFailed, err)
	}
	params, err := c.ensureServices(ctx, nc, ns, pool)
	if err != nil {
		return failed(v1alpha1.ReasonServicesFailed, err)
	}
	params.Asleep = o.sleep.asleep
	o.endpoint = provisioner.APIServerEndpoint(nc, params.Addresses())
	certs, err := c.ensurePKI(ctx, nc, params)
	if err != nil {
		return failed(v1alpha1.ReasonPKIFailed, err)
	}
	params.CertsHash = pki.CertsHash(certs)
	external, err := c.ensureExternalEtcd(ctx, nc, ns)
	if err != nil {
		return failed(v1alpha1.ReasonExternalEtcdFailed, err)
	}
	if external != "" {
		params.CertsHash += "-" + external[:16]
	}
	if poolHash != "" {
		params.CertsHash += "-" + poolHash
	}
	// Keep the etcd that runs: a capn upgrade must not roll it (see Params).
	params.EtcdImage = o.etcdImage()
	// An ordered upgrade holds some kube-* components back (upgrade.go).
	if o.upgrade, err = c.planUpgrade(ctx, nc, ns, o); err != nil {
		return failed(v1alpha1.ReasonUpgradePlanFailed, err)
	}
	params.Versions = o.upgrade.versions
	if nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared {
		if err := c.checkWorkloadNamespace(ctx, nc); err != nil {
			return failed(v1alpha1.ReasonNamespaceFailed, err)
		}
	}
	params.Restoring = o.restore.pending
	if err := c.ensureWorkloads(ctx, nc, params, o); err != nil {
		return failed(v1alpha1.ReasonApplyFailed, err)
	}
	if o.restore.pending {
		if err := c.ensureRestore(ctx, nc, ns, o); err != nil {
			return failed(v1alpha1.ReasonRestoreFailed, err)
		}
		return nil // the components start once Restored is recorded
	}
	comps := o.components(nc)
	if o.sleep.asleep {
		if o.sleep.lingering, err = c.lingeringPods(ctx, nc, ns); err != nil {
			return failed(v1alpha1.ReasonObserveFailed, err)
		}
		if o.sleep.hostPods, err = c.stopHostPods(ctx, nc, comps); err != nil {
			return failed(v1alpha1.ReasonApplyFailed, err)
		}
		return nil // no apiserver to bootstrap
	}
	// Pods are listed only while a component is not rolled out: that is
	// when an image can be missing (create, scale, upgrade).
	if !rolledOut(comps) {
		images, err := c.imagesCondition(ctx, nc, ns)
		if err != nil {
			return failed(v1alpha1.ReasonObserveFailed, err)
		}
		o.images = &images
	}
	if !comps[v1alpha1.ComponentAPIServer].available {
		return nil // nothing to bootstrap against yet
	}
	if err := c.ensureTenantAccess(ctx, nc, params, certs[provisioner.SecretCA], o); err != nil {
		return err
	}
	if o.tenant.done {
		c.observeActivity(ctx, nc, params, certs[provisioner.SecretCA], o)
	}
	return nil
}

// stepError is a failed sync step: reason is Reconciled's reason (one of
// the v1alpha1 step reasons). retryAfter, when set, replaces the queue's
// rate limit with the step's own backoff; quiet: its Warning Event was
// recorded already (a tenant bootstrap failure is reported once per
// attempt, not once per sync).
type stepError struct {
	reason     string
	err        error
	retryAfter time.Duration
	quiet      bool
}

func (e *stepError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func failed(reason string, err error) error { return &stepError{reason: reason, err: err} }

// recordStatusEvents records the Events that describe the status just
// written: the upgrade's steps, the tenant bootstrap, a failed step. They
// come after the write so that no Event tells of a state status does not
// show. Events about management writes (Applied, CertificatesIssued...)
// are recorded where the write happens: it happened, whatever status says.
func (c *Controller) recordStatusEvents(ctx context.Context, nc *v1alpha1.NestedCluster, o *observation, stepErr error) {
	if o.upgrade != nil {
		for _, e := range o.upgrade.events {
			c.recorder.Event(nc, e.typ, e.reason, e.message)
		}
	}
	if o.tenant.recorded {
		klog.FromContext(ctx).V(2).Info("Tenant access bootstrapped", "group", access.TenantAdminsGroup)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "TenantBootstrapped",
			"bound group %s to cluster-admin in the tenant; kubeconfigs from nestedclusters/kubeconfig now work", access.TenantAdminsGroup)
	}
	var se *stepError
	if errors.As(stepErr, &se) && !se.quiet {
		c.recorder.Event(nc, corev1.EventTypeWarning, se.reason, truncate(se.err.Error(), maxFailureMessage))
	}
}
