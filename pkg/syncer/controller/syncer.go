package controller

import (
	"context"
	"crypto/x509"
	"fmt"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/syncer/translate"
)

// Options configure a syncer.
type Options struct {
	// Tenant is the tenant apiserver; Host the management cluster, where
	// the syncer may touch only WorkloadNamespace (and read Nodes).
	Tenant, Host kubernetes.Interface
	// TenantWatch and HostWatch, if set, are what the informers list and
	// watch with: clients without the requests' client-side timeout, which
	// would cut every watch at that age and make the informers re-open it.
	TenantWatch, HostWatch kubernetes.Interface
	// TenantAggregator writes the metrics addon's APIService; nil leaves
	// it out (tests of other kinds).
	TenantAggregator  aggregatorclient.Interface
	WorkloadNamespace string
	// HostNodeSelector picks the host nodes that get a virtual Node; the
	// host pods carry it too, so the host scheduler agrees.
	HostNodeSelector labels.Selector
	// HostTolerations go on every host pod: the provider's, never the
	// tenant's (those only steer the tenant's scheduler).
	HostTolerations []corev1.Toleration
	// Pod is the translation context (workload namespace, tenant apiserver
	// address, DNS, Pod Security level...). Services is filled per pod.
	Pod translate.Context
	// MaxCopiedBytes bounds the bytes of the ConfigMaps and Secrets copied
	// to the workload namespace; zero is names.MaxCopiedBytes.
	MaxCopiedBytes resource.Quantity
	// Workers per queue.
	Workers int
	// ResyncPeriod of the informers; 0 means none (level-triggered by
	// events, with requeues for time-driven work such as tokens).
	ResyncPeriod time.Duration
	// Now is the clock (tokens, heartbeats); nil means time.Now.
	Now func() time.Time
	// Synced, if set, is called once the caches have synced.
	Synced func()
	// Webhook, if set, serves the tenant's Service admission (ClusterIPs
	// allocated on the host) and registers it in the tenant.
	Webhook WebhookOptions
	// DNS is the tenant's cluster DNS addon.
	DNS DNSOptions
	// Kubelet is where the virtual Nodes' kubelet API is advertised.
	Kubelet KubeletOptions
	// Metrics is the tenant's metrics addon and the resource metrics the
	// virtual Nodes serve it.
	Metrics MetricsOptions
	// StorageClasses are the host StorageClasses tenant claims may name;
	// empty: the host's default class.
	StorageClasses []string
}

// Syncer is one tenant's syncer: what its kinds share (options, clock,
// informer factories, listers, the tenant Event recorder) and the
// registrar that runs them.
type Syncer struct {
	o      Options
	now    func() time.Time
	tenant informers.SharedInformerFactory
	// tenantHook watches the one webhook configuration that is the
	// syncer's (webhookKind).
	tenantHook informers.SharedInformerFactory
	host       informers.SharedInformerFactory
	hostNode   informers.SharedInformerFactory
	// hostCluster watches the host's cluster-scoped objects that are
	// everyone's to read (StorageClasses).
	hostCluster informers.SharedInformerFactory
	// addons watches the addon objects the syncer keeps in the tenant's
	// kube-system (addonDeployments).
	addons   informers.SharedInformerFactory
	recorder record.EventRecorder

	tenantPods       corelisters.PodLister
	tenantConfigMaps corelisters.ConfigMapLister
	tenantSecrets    corelisters.SecretLister
	tenantServices   corelisters.ServiceLister
	tenantNodes      corelisters.NodeLister
	tenantNamespaces corelisters.NamespaceLister
	tenantPolicies   networkinglisters.NetworkPolicyLister
	hostPolicies     networkinglisters.NetworkPolicyLister
	hostPods         corelisters.PodLister
	hostConfigMaps   corelisters.ConfigMapLister
	hostSecrets      corelisters.SecretLister
	hostServices     corelisters.ServiceLister
	hostNodes        corelisters.NodeLister
	tenantWebhooks   admissionlisters.MutatingWebhookConfigurationLister

	tenantClaims         corelisters.PersistentVolumeClaimLister
	hostClaims           corelisters.PersistentVolumeClaimLister
	tenantVolumes        corelisters.PersistentVolumeLister
	tenantVolumeIndex    cache.Indexer
	tenantStorageClasses storagelisters.StorageClassLister
	hostStorageClasses   storagelisters.StorageClassLister
	// webhookCA is the Service webhook's CA certificate (PEM).
	webhookCA []byte

	// justUsed are the host copies and pod Secrets that pod creates have
	// just relied on, which the collector leaves alone (gcKind).
	justUsed recentUses

	// synced are the shared listers' caches.
	synced []cache.InformerSynced
	reg    *registrar
}

// The kinds' names: their queues', in logs and metrics, and how one
// kind enqueues onto another's queue (registrar.queue).
const (
	kindNodes      = "nodes"
	kindPods       = "pods"
	kindPodStatus  = "podStatus"
	kindServices   = "services"
	kindConfigMaps = "configmaps"
	kindSecrets    = "secrets"
	kindGC         = "gc"
	kindWebhook    = "webhook"
	kindDNS        = "dns"
	kindEvents     = "events"

	kindNetworkPolicies = "networkpolicies"
	kindClaims          = "persistentvolumeclaims"
	kindStorageClasses  = "storageclasses"
	kindAPIEndpoints    = "apiserverendpoints"
)

// kinds are the syncer's kinds, one line each: a kind is added here.
func (s *Syncer) kinds() []kindSyncer {
	return []kindSyncer{
		&nodeKind{Syncer: s},
		&podKind{Syncer: s},
		&podStatusKind{Syncer: s},
		&serviceKind{Syncer: s},
		&configMapKind{Syncer: s},
		&secretKind{Syncer: s},
		&gcKind{Syncer: s},
		&webhookKind{Syncer: s},
		&dnsKind{Syncer: s},
		&eventKind{Syncer: s},
		&networkPolicyKind{Syncer: s},
		&claimKind{Syncer: s},
		&storageClassKind{Syncer: s},
		&apiEndpointsKind{Syncer: s},
		&metricsKind{Syncer: s},
		&endpointSliceKind{Syncer: s},
	}
}

// New wires the informers; Run starts them.
func New(o Options) *Syncer {
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.HostNodeSelector == nil {
		o.HostNodeSelector = labels.Everything()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TenantWatch == nil {
		o.TenantWatch = o.Tenant
	}
	if o.HostWatch == nil {
		o.HostWatch = o.Host
	}
	o.Pod.WorkloadNamespace = o.WorkloadNamespace
	s := &Syncer{o: o, now: o.Now}
	s.tenant = informers.NewSharedInformerFactory(o.TenantWatch, o.ResyncPeriod)
	// Only the syncer's own objects in its own namespace: its RBAC allows
	// no more, and nothing else there is its to touch.
	s.host = informers.NewSharedInformerFactoryWithOptions(o.HostWatch, o.ResyncPeriod,
		informers.WithNamespace(o.WorkloadNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = managedBySelector
		}))
	s.hostNode = informers.NewSharedInformerFactoryWithOptions(o.HostWatch, o.ResyncPeriod,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.HostNodeSelector.String() }))

	tp := s.tenant.Core().V1().Pods()
	tcm := s.tenant.Core().V1().ConfigMaps()
	ts := s.tenant.Core().V1().Secrets()
	tsvc := s.tenant.Core().V1().Services()
	tn := s.tenant.Core().V1().Nodes()
	hp := s.host.Core().V1().Pods()
	hcm := s.host.Core().V1().ConfigMaps()
	hs := s.host.Core().V1().Secrets()
	hsvc := s.host.Core().V1().Services()
	hn := s.hostNode.Core().V1().Nodes()
	tns := s.tenant.Core().V1().Namespaces()
	tnp := s.tenant.Networking().V1().NetworkPolicies()
	hnp := s.host.Networking().V1().NetworkPolicies()
	s.tenantNamespaces, s.tenantPolicies, s.hostPolicies = tns.Lister(), tnp.Lister(), hnp.Lister()
	s.tenantPods, s.tenantConfigMaps, s.tenantSecrets, s.tenantServices, s.tenantNodes = tp.Lister(), tcm.Lister(), ts.Lister(), tsvc.Lister(), tn.Lister()
	s.hostPods, s.hostConfigMaps, s.hostSecrets, s.hostServices, s.hostNodes = hp.Lister(), hcm.Lister(), hs.Lister(), hsvc.Lister(), hn.Lister()
	s.hostCluster = informers.NewSharedInformerFactory(o.HostWatch, o.ResyncPeriod)
	tpvc, hpvc, tpv := s.tenant.Core().V1().PersistentVolumeClaims(), s.host.Core().V1().PersistentVolumeClaims(), s.tenant.Core().V1().PersistentVolumes()
	tsc, hsc := s.tenant.Storage().V1().StorageClasses(), s.hostCluster.Storage().V1().StorageClasses()
	if err := tpv.Informer().AddIndexers(cache.Indexers{claimIndex: claimOf}); err != nil {
		panic(fmt.Sprintf("syncer: PV index: %v", err)) // only before the informer starts
	}
	s.tenantClaims, s.hostClaims, s.tenantVolumes, s.tenantVolumeIndex = tpvc.Lister(), hpvc.Lister(), tpv.Lister(), tpv.Informer().GetIndexer()
	s.tenantStorageClasses, s.hostStorageClasses = tsc.Lister(), hsc.Lister()
	for _, i := range []cache.SharedIndexInformer{tp.Informer(), tcm.Informer(), ts.Informer(), tsvc.Informer(), tn.Informer(),
		hp.Informer(), hcm.Informer(), hs.Informer(), hsvc.Informer(), hn.Informer(), tns.Informer(), tnp.Informer(), hnp.Informer(),
		tpvc.Informer(), hpvc.Informer(), tpv.Informer(), tsc.Informer(), hsc.Informer()} {
		s.synced = append(s.synced, i.HasSynced)
	}

	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.Tenant.CoreV1().Events("")})
	s.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "capn-syncer"})
	s.reg = newRegistrar(s.kinds())
	return s
}

// Run syncs until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	defer utilruntime.HandleCrash()
	// Workers block in Get until their queue shuts down, so the queues go
	// first when ctx ends, then Run waits for the workers.
	go func() {
		<-ctx.Done()
		s.reg.shutDown()
	}()
	if s.o.Kubelet.endpoint() != nil {
		if err := s.serveKubelet(ctx); err != nil {
			return err
		}
		if s.o.Metrics.Enabled {
			if err := s.serveMetrics(ctx); err != nil {
				return err
			}
		}
	}
	for _, f := range s.reg.before {
		if err := f(ctx); err != nil {
			return err
		}
	}
	s.tenant.Start(ctx.Done())
	s.host.Start(ctx.Done())
	s.hostNode.Start(ctx.Done())
	s.hostCluster.Start(ctx.Done())
	if !cache.WaitForNamedCacheSync("capn-syncer", ctx.Done(), append(s.synced, s.reg.synced...)...) {
		return fmt.Errorf("caches did not sync")
	}
	logger.Info("caches synced", "workloadNamespace", s.o.WorkloadNamespace)
	for _, f := range s.reg.after {
		if err := f(ctx); err != nil {
			return err
		}
	}
	if s.o.Synced != nil {
		s.o.Synced()
	}
	s.reg.runWorkers(ctx, s.o.Workers)
	return nil
}

// KubeletOptions serve the kubelet API of the virtual Nodes (logs, exec,
// attach, port-forward), from the leader, which replays each call to the
// management apiserver (pkg/syncer/kubelet).
type KubeletOptions struct {
	// AdvertiseIP and Port are the virtual Nodes' InternalIP and kubelet
	// port: where the tenant apiserver reaches this syncer. Empty
	// AdvertiseIP: the virtual Nodes keep the host nodes' addresses and
	// nothing is served.
	AdvertiseIP string
	Port        int32
	// BindAddress is the host:port the HTTPS server listens on.
	BindAddress string
	// ClientCAs verify the tenant apiserver's kubelet client certificate,
	// whose common name must be one of ClientCommonNames.
	ClientCAs         *x509.CertPool
	ClientCommonNames []string
	// Management is the syncer's own management configuration, which
	// every replayed call authenticates with.
	Management *rest.Config
}

// MetricsOptions configure the tenant's metrics-server addon and the
// virtual Nodes' /metrics/resource it scrapes.
type MetricsOptions struct {
	// Enabled keeps metrics-server in the tenant's kube-system and serves
	// resource metrics on BindAddress; disabled, the syncer removes the
	// addon it made and serves none.
	Enabled bool
	// Image is metrics-server's image.
	Image string
	// BindAddress is the host:port of the metrics listener; its port is
	// the one metrics-server is told to scrape (--kubelet-port).
	BindAddress string
}

func (k KubeletOptions) endpoint() *KubeletEndpoint {
	if k.AdvertiseIP == "" {
		return nil
	}
	return &KubeletEndpoint{IP: k.AdvertiseIP, Port: k.Port}
}
