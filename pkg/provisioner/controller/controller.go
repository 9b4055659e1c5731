package controller

import (
	"context"
	"errors"
	"fmt"
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

// Options are the loops' collaborators; Settings travel with them as is.
type Options struct {
	// Settings, completed (Settings.Complete).
	Settings Settings
	// Capn reads and writes NestedClusters (finalizer, status).
	Capn       versioned.Interface
	Informer   informers.NestedClusterInformer
	Management Management
	// Recorder records Events on the NestedCluster.
	Recorder record.EventRecorder
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
	// Network is what control-plane pods may reach (builders.Network).
	Network builders.Network
	// PoolInformer serves the NestedEtcdPools clusters name in
	// spec.etcd.pool; nil refuses such clusters (ReasonEtcdPoolFailed).
	PoolInformer informers.NestedEtcdPoolInformer
	// BackupInformer serves NestedClusterBackups and spec.restoreFrom;
	// nil leaves backups Pending and restores failing.
	BackupInformer informers.NestedClusterBackupInformer
	// BackupStore keeps the backups' data; nil fails every backup.
	BackupStore backup.Store
	// Waker tells where capn's waker listens; nil: no wake on request (a
	// sleeping cluster refuses connections).
	Waker WakerEndpoints
}

// Shared is what more than one loop uses, built once by NewShared and
// handed to each loop's constructor. Nothing in it is owned by a loop.
type Shared struct {
	env *env
	// clusters is the clusters loop's queue: the pools loop, the tenant
	// bootstraps and the activity reads enqueue clusters there.
	clusters workqueue.TypedRateLimitingInterface[string]
	// seen are the clusters synced before: the clusters queue's first lane.
	seen     *keySet
	etcd     *etcdAccess
	activity *activityMonitor
	// tenantClient reaches tenant apiservers (bootstraps, activity reads).
	tenantClient TenantClientFunc
}

// NewShared builds the clients, the clusters queue, the etcd access and the
// activity monitor the loops share.
func NewShared(o Options) *Shared {
	registerMetrics()
	e := &env{capn: o.Capn, mgmt: countWrites{o.Management}, recorder: o.Recorder, now: o.Now, cfg: o.Settings}
	if e.now == nil {
		e.now = time.Now
	}
	tenantClient := o.TenantClient
	if tenantClient == nil {
		tenantClient = access.BootstrapClient
	}
	seen := &keySet{}
	queue := newClustersQueue("capn-provisioner", seen.has)
	etcd := &etcdAccess{env: e}
	if o.PoolInformer != nil {
		etcd.pools = o.PoolInformer.Lister()
	}
	return &Shared{env: e, clusters: queue, seen: seen, etcd: etcd, activity: newActivityMonitor(e, tenantClient, queue), tenantClient: tenantClient}
}

// ClusterController is the clusters loop: it reconciles NestedClusters
// into management-cluster objects, one operation type per step.
type ClusterController struct {
	*env
	lister listers.NestedClusterLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	seen   *keySet
	health *Health
	// namespaces indexes capn's management namespaces (WatchManagement).
	namespaces cache.Indexer

	workloads   *workloads
	credentials *credentials
	pools       *poolMembership
	upgrades    *upgrader
	tenants     *tenantAccess
	activity    *activityMonitor
	sleeper     *sleeper
	wakers      *wakerPorts
	restorer    *restorer
	finalizer   *finalizer
}

// newClusterSteps wires the sync's operation types to one another.
func newClusterSteps(sh *Shared, lister listers.NestedClusterLister,
	o Options, backups listers.NestedClusterBackupLister) *ClusterController {
	e := sh.env
	c := &ClusterController{
		env: e, lister: lister, queue: sh.clusters, seen: sh.seen,
		workloads:   &workloads{env: e, placement: o.Placement, dataPlane: o.DataPlane, network: o.Network},
		credentials: &credentials{env: e},
		pools:       &poolMembership{env: e, etcdAccess: sh.etcd, poolGrants: map[types.UID]string{}},
		upgrades:    &upgrader{env: e},
		tenants:     newTenantAccess(e, sh.tenantClient, sh.clusters),
		activity:    sh.activity,
		sleeper:     &sleeper{env: e},
		wakers:      newWakerPorts(o.Waker),
		restorer:    &restorer{env: e, etcdAccess: sh.etcd, backups: backups, store: o.BackupStore},
	}
	c.finalizer = &finalizer{env: e, pools: c.pools, tenants: c.tenants, activity: c.activity}
	return c
}

// NewClusterController wires the clusters loop to its informer; call Run
// to start it.
func NewClusterController(o Options, sh *Shared) (*ClusterController, error) {
	var backups listers.NestedClusterBackupLister
	if o.BackupInformer != nil {
		backups = o.BackupInformer.Lister()
	}
	c := newClusterSteps(sh, o.Informer.Lister(), o, backups)
	c.health = o.Health
	c.synced = []cache.InformerSynced{o.Informer.Informer().HasSynced}
	// A sync reads pools and backups too.
	if o.PoolInformer != nil {
		c.synced = append(c.synced, o.PoolInformer.Informer().HasSynced)
	}
	if o.BackupInformer != nil {
		c.synced = append(c.synced, o.BackupInformer.Informer().HasSynced)
	}
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
	return c, nil
}

// Synced are the HasSynced of every cache a sync reads; the other loops
// wait for them too, as they read the same caches.
func (c *ClusterController) Synced() []cache.InformerSynced { return c.synced }

// Run processes the clusters queue with workers goroutines until ctx ends.
func (c *ClusterController) Run(ctx context.Context, workers int) {
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
	<-ctx.Done()
}

func (c *ClusterController) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *ClusterController) next(ctx context.Context) bool {
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
func (c *ClusterController) sync(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.lister.NestedClusters(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.seen.remove(key)
		return 0, nil // gone; the finalizer already cleaned up
	}
	if err != nil {
		return 0, err
	}
	// From now on its syncs are observations, ahead of creations.
	defer c.seen.add(key)
	nc := cached.DeepCopy() // never mutate the informer's cache
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("nestedcluster", key))

	if nc.DeletionTimestamp != nil {
		c.wakers.release(nc.UID) // its namespace, waker slice included, goes
		return c.finalizer.finalize(ctx, nc)
	}
	if nc, err = c.finalizer.ensureFinalizer(ctx, nc); err != nil {
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
func (c *ClusterController) reconcile(ctx context.Context, nc *v1alpha1.NestedCluster, o *observation) error {
	p, err := c.workloads.ensureNamespace(ctx, nc)
	if err != nil {
		return failed(v1alpha1.ReasonNamespaceFailed, err)
	}
	// The one read of the workloads this sync makes (observation).
	if err := c.workloads.observeWorkloads(ctx, nc, p, o); err != nil {
		return failed(v1alpha1.ReasonObserveFailed, err)
	}
	o.sleep = decideSleep(nc, o, c.now())
	o.restore = planRestore(nc)
	if o.sleep.asked || o.sleep.woke != "" {
		// Asleep nobody uses it; awake again, its idle time starts over.
		c.activity.forgetActivity(nc.UID)
	}
	// Before the Services: every render of a pooled cluster needs its pool.
	pool, poolHash, err := c.pools.ensureEtcdPool(ctx, nc, p)
	if err != nil {
		return failed(v1alpha1.ReasonEtcdPoolFailed, err)
	}
	p.EtcdPool = pool
	p, err = c.workloads.ensureServices(ctx, nc, p)
	if err != nil {
		return failed(v1alpha1.ReasonServicesFailed, err)
	}
	p.Asleep = o.sleep.asleep
	p.Waker = c.wakers.wakerFor(nc, p.Namespace, o)
	o.endpoint = provisioner.APIServerEndpoint(nc, p.Addresses())
	certs, err := c.credentials.ensurePKI(ctx, nc, p, o)
	if err != nil {
		return failed(v1alpha1.ReasonPKIFailed, err)
	}
	p.CertsHash = pki.CertsHash(certs)
	external, err := c.credentials.ensureExternalEtcd(ctx, nc, p)
	if err != nil {
		return failed(v1alpha1.ReasonExternalEtcdFailed, err)
	}
	if external != "" {
		p.CertsHash += "-" + external[:16]
	}
	if poolHash != "" {
		p.CertsHash += "-" + poolHash
	}
	// Keep the etcd that runs: a capn upgrade must not roll it (see Params).
	p.EtcdImage = o.etcdImage()
	// An ordered upgrade holds some kube-* components back (upgrade.go).
	if o.upgrade, err = c.upgrades.planUpgrade(ctx, nc, p, o); err != nil {
		return failed(v1alpha1.ReasonUpgradePlanFailed, err)
	}
	p.Versions = o.upgrade.versions
	if nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared {
		if err := c.workloads.checkWorkloadNamespace(ctx, nc); err != nil {
			return failed(v1alpha1.ReasonNamespaceFailed, err)
		}
	}
	p.Restoring = o.restore.pending
	if err := c.workloads.ensureWorkloads(ctx, nc, p, o); err != nil {
		return failed(v1alpha1.ReasonApplyFailed, err)
	}
	if o.restore.pending {
		if err := c.restorer.ensureRestore(ctx, nc, p, o); err != nil {
			return failed(v1alpha1.ReasonRestoreFailed, err)
		}
		return nil // the components start once Restored is recorded
	}
	comps := o.components(nc)
	if o.sleep.asleep {
		if o.sleep.lingering, err = c.sleeper.lingeringPods(ctx, nc, p); err != nil {
			return failed(v1alpha1.ReasonObserveFailed, err)
		}
		if o.sleep.hostPods, err = c.sleeper.stopHostPods(ctx, nc, comps); err != nil {
			return failed(v1alpha1.ReasonApplyFailed, err)
		}
		return nil // no apiserver to bootstrap
	}
	// Pods are listed only while a component is not rolled out: that is
	// when an image can be missing (create, scale, upgrade).
	if !rolledOut(comps) {
		images, err := c.workloads.imagesCondition(ctx, nc, p)
		if err != nil {
			return failed(v1alpha1.ReasonObserveFailed, err)
		}
		o.images = &images
	}
	if !comps[v1alpha1.ComponentAPIServer].available {
		return nil // nothing to bootstrap against yet
	}
	if err := c.tenants.ensureTenantAccess(ctx, nc, p, certs[provisioner.SecretCA], o); err != nil {
		return err
	}
	if o.tenant.done {
		c.activity.observeActivity(ctx, nc, p, certs[provisioner.SecretCA], o)
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
func (c *env) recordStatusEvents(ctx context.Context, nc *v1alpha1.NestedCluster, o *observation, stepErr error) {
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
