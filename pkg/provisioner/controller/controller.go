package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
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
	// RenewalThreshold is passed to pki.Reconcile.
	RenewalThreshold time.Duration
	// Now is the clock for certificates; nil means time.Now.
	Now func() time.Time
	// TenantClient reaches a tenant apiserver for its RBAC bootstrap; nil
	// means access.BootstrapClient.
	TenantClient TenantClientFunc
	// UpgradeStepTimeout is how long one component may take to roll out
	// during an upgrade before it halts as Degraded; 0 means
	// DefaultUpgradeStepTimeout.
	UpgradeStepTimeout time.Duration
	// Placement schedules every control-plane pod (provider-owned).
	Placement builders.Placement
}

// Controller reconciles NestedClusters into management-cluster objects.
type Controller struct {
	capn      versioned.Interface
	lister    listers.NestedClusterLister
	synced    []cache.InformerSynced
	mgmt      Management
	recorder  record.EventRecorder
	threshold time.Duration
	now       func() time.Time
	queue     workqueue.TypedRateLimitingInterface[string]

	tenantClient TenantClientFunc
	mu           sync.Mutex
	// bootstrapped maps a NestedCluster's UID to its tenant bootstrap
	// (ensureTenantAccess); finalize forgets it.
	bootstrapped map[types.UID]*tenantBootstrap
	// tenantSlots bounds the bootstraps in flight; tenantWG counts them.
	tenantSlots chan struct{}
	tenantWG    sync.WaitGroup
	// stepTimeout: see Options.UpgradeStepTimeout (upgrade.go).
	stepTimeout time.Duration
	// namespaces indexes capn's management namespaces (WatchManagement).
	namespaces cache.Indexer
	placement  builders.Placement
}

// New wires the controller to its informer; call Run to start it.
func New(o Options) (*Controller, error) {
	registerMetrics()
	c := &Controller{
		capn:      o.Capn,
		lister:    o.Informer.Lister(),
		synced:    []cache.InformerSynced{o.Informer.Informer().HasSynced},
		mgmt:      countWrites{o.Management},
		recorder:  o.Recorder,
		threshold: o.RenewalThreshold,
		now:       o.Now,

		tenantClient: o.TenantClient,
		bootstrapped: map[types.UID]*tenantBootstrap{},
		tenantSlots:  make(chan struct{}, DefaultTenantConcurrency),
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
	c.stepTimeout = o.UpgradeStepTimeout
	c.placement = o.Placement
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
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
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
	in := nc // served objects arrive defaulted (the API server defaults on decode, also from storage)
	ns, err := c.ensureNamespace(ctx, nc, in)
	if err != nil {
		return 0, c.fail(ctx, nc, "NamespaceFailed", err)
	}
	params, err := c.ensureServices(ctx, nc, in, ns)
	if err != nil {
		return 0, c.fail(ctx, nc, "ServicesFailed", err)
	}
	certs, err := c.ensurePKI(ctx, nc, in, params)
	if err != nil {
		return 0, c.fail(ctx, nc, "PKIFailed", err)
	}
	params.CertsHash = pki.CertsHash(certs)
	external, err := c.ensureExternalEtcd(ctx, nc, in, ns)
	if err != nil {
		return 0, c.fail(ctx, nc, "ExternalEtcdFailed", err)
	}
	if external != "" {
		params.CertsHash += "-" + external[:16]
	}
	// Keep the etcd that runs: a capn upgrade must not roll it (see Params).
	live, err := c.liveWorkloads(ctx, in, ns)
	if err != nil {
		return 0, c.fail(ctx, nc, "ObserveFailed", err)
	}
	params.EtcdImage = runningEtcdImage(live)
	// An ordered upgrade holds some kube-* components back (upgrade.go).
	up, err := c.planUpgrade(ctx, nc, in, ns)
	if err != nil {
		return 0, fmt.Errorf("planning upgrade: %w", err)
	}
	params.Versions = up.versions
	if err := c.ensureWorkloads(ctx, nc, in, params, live); err != nil {
		return 0, c.fail(ctx, nc, "ApplyFailed", err)
	}
	ready, err := c.updateStatus(ctx, nc, in, params, up, certs[provisioner.SecretCA])
	if err != nil {
		return 0, err
	}
	if !ready {
		return notReadyRequeue, nil
	}
	return 0, nil
}

// maxFailureMessage bounds the error text a condition carries.
const maxFailureMessage = 1024

// fail records a failed step: Reconciled=False with the step as reason in
// status, then (once that write succeeded, so the Event never describes a
// state status does not show) a Warning Event; it returns err for the
// retry.
func (c *Controller) fail(ctx context.Context, nc *v1alpha1.NestedCluster, reason string, err error) error {
	msg := err.Error()
	if len(msg) > maxFailureMessage {
		msg = msg[:maxFailureMessage] + "..."
	}
	st := nc.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReconciled, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: nc.Generation})
	if _, werr := c.writeStatus(ctx, nc, st); werr != nil {
		return fmt.Errorf("%s: %w (and %w)", reason, err, werr)
	}
	c.recorder.Event(nc, "Warning", reason, msg)
	return fmt.Errorf("%s: %w", reason, err)
}
