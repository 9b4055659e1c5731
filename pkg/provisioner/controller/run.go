package controller

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/generated/clientset/versioned"
	capnscheme "capn.dev/capn/pkg/generated/clientset/versioned/scheme"
	"capn.dev/capn/pkg/generated/informers/externalversions"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/provisioner/clusterapi"
)

// eventScheme knows every kind the provisioner records Events on:
// NestedClusters and, for the orphan sweep, Namespaces. A kind it did not
// know would have its Events dropped.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(capnscheme.AddToScheme(s))
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	return s
}()

// LeaseName is the Lease that elects one provisioning capn-apiserver.
const LeaseName = "capn-provisioner"

// Start runs the controller until ctx ends, under leader election when
// configured. All replicas serve the API; only the leader provisions.
func Start(ctx context.Context, cfg Settings, deps Deps) error {
	cfg = cfg.Complete()
	logger := klog.FromContext(ctx).WithName("provisioner")
	ctx = klog.NewContext(ctx, logger)
	capnClient, err := versioned.NewForConfig(rest.AddUserAgent(rest.CopyConfig(deps.Capn), LeaseName))
	if err != nil {
		return fmt.Errorf("capn client: %w", err)
	}
	mgmtConfig := rest.AddUserAgent(rest.CopyConfig(deps.Management), LeaseName)
	mgmtConfig.Wrap(countRequests)
	mgmt, err := kubernetes.NewForConfig(mgmtConfig)
	if err != nil {
		return fmt.Errorf("management client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(mgmtConfig)
	if err != nil {
		return fmt.Errorf("management client: %w", err)
	}
	events := mgmt
	if deps.Events != nil {
		if events, err = kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(deps.Events), LeaseName)); err != nil {
			return fmt.Errorf("events client: %w", err)
		}
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(eventScheme, corev1.EventSource{Component: LeaseName})

	run := func(ctx context.Context) {
		// Registered first: component-base metrics drop values set before.
		registerMetrics()
		leader.Set(1)
		defer leader.Set(0)
		deps.Health.startLeading()
		defer deps.Health.stopLeading()
		// A fresh factory per term: a lost lease stops its informers too.
		factory := externalversions.NewSharedInformerFactory(capnClient, 10*time.Minute)
		defer factory.Shutdown()
		// Only what capn created: the label selector keeps the caches (and
		// the RBAC the watch needs) to the provisioner's own objects.
		owned := kubeinformers.NewSharedInformerFactoryWithOptions(mgmt, 0,
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ManagedSelector() }))
		defer owned.Shutdown()
		management, caches, err := NewCachedManagement(mgmt, owned)
		if err != nil {
			logger.Error(err, "Building provisioner controller")
			return
		}
		// capn-apiserver's own endpoints: every replica runs the waker.
		own := kubeinformers.NewSharedInformerFactoryWithOptions(mgmt, 0, kubeinformers.WithNamespace(cfg.LeaderElectNamespace),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.LabelSelector = discoveryv1.LabelServiceName + "=" + builders.CapnAPIServerName
			}))
		defer own.Shutdown()
		capnEndpoints := own.Discovery().V1().EndpointSlices().Informer()
		ownedSlices := owned.Discovery().V1().EndpointSlices().Informer()
		waker := informerWaker{capn: capnEndpoints.GetIndexer(), owned: ownedSlices.GetIndexer()}
		o := Options{
			Settings:       cfg,
			Capn:           capnClient,
			Informer:       factory.Capn().V1alpha1().NestedClusters(),
			PoolInformer:   factory.Capn().V1alpha1().NestedEtcdPools(),
			BackupInformer: factory.Capn().V1alpha1().NestedClusterBackups(),
			BackupStore:    deps.BackupStore,
			Management:     management,
			Recorder:       recorder,
			Placement:      deps.Placement,
			DataPlane:      deps.DataPlane,
			Network:        deps.Network,
			Health:         deps.Health,
			Waker:          waker,
		}
		clusters, pools, backups, err := newLoops(o, caches)
		if err != nil {
			logger.Error(err, "Building provisioner controller")
			return
		}
		if err := clusters.WatchWaker(capnEndpoints, ownedSlices.GetIndexer()); err != nil {
			logger.Error(err, "Building provisioner controller")
			return
		}
		// The Cluster API provider starts once its CRDs are served, and
		// shares the NestedCluster cache.
		go clusterapi.Start(ctx, clusterapi.Deps{Dynamic: dyn, Kube: mgmt, Capn: capnClient,
			Issuer: &access.Issuer{Management: mgmt}, NestedClusters: factory.Capn().V1alpha1().NestedClusters()}, cfg.Workers)
		factory.Start(ctx.Done())
		owned.Start(ctx.Done())
		own.Start(ctx.Done())
		// The other loops read the clusters loop's caches: they start with it.
		go pools.Run(ctx, clusters.Synced()...)
		go backups.Run(ctx, clusters.Synced()...)
		if cfg.OrphanSweep {
			go clusters.RunOrphanSweep(ctx)
		}
		clusters.Run(ctx, cfg.Workers)
	}
	if !cfg.LeaderElect {
		run(ctx)
		return nil
	}
	host, _ := os.Hostname()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.LeaderElectNamespace, Name: LeaseName},
		Client:     mgmt.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
	}
	// Losing the lease ends the term, not the server: campaign again.
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			Name:            LeaseName,
			LeaseDuration:   15 * time.Second,
			RenewDeadline:   10 * time.Second,
			RetryPeriod:     2 * time.Second,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: run,
				OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", lock.Identity()) },
			},
		})
	}
	return nil
}

// newLoops builds the clusters, pools and backups loops over the state they
// share (Shared).
func newLoops(o Options, caches ManagementCaches) (*ClusterController, *PoolController, *BackupController, error) {
	sh := NewShared(o)
	clusters, err := NewClusterController(o, sh)
	if err != nil {
		return nil, nil, nil, err
	}
	// Every cached kind, so a hand edit of any object capn owns (drift) is
	// repaired when it happens, not at the next resync.
	if err := clusters.WatchManagement(caches.Namespaces, caches.Watched...); err != nil {
		return nil, nil, nil, err
	}
	clusters.WaitFor(caches.All...)
	pools, err := NewPoolController(o, sh)
	if err != nil {
		return nil, nil, nil, err
	}
	backups, err := NewBackupController(o, sh)
	if err != nil {
		return nil, nil, nil, err
	}
	return clusters, pools, backups, nil
}
