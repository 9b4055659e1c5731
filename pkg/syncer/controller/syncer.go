// Package controller is the syncer: it runs a tenant's pods on the
// management ("host") cluster. It publishes one virtual Node in the tenant
// per host node that may run tenant pods, lets the tenant's own scheduler
// bind pods to them, creates each bound pod in the tenant's workload
// namespace on the host (pinned to that node), and writes the host pod's
// status back to the tenant pod. ConfigMaps, Secrets and service-account
// tokens the pods need, and the tenant's ClusterIP Services, follow; the
// host's Events about a host pod are mirrored onto its tenant pod.
//
// Every loop but the Event mirror (events.go) is level-triggered:
// informers on both sides, a workqueue and a sync(key) that reads caches,
// computes what the host or tenant should hold, and writes only a
// difference. The syncer can stop at any point and converge when it
// starts again: host objects are found by their deterministic names
// (names.Host) and checked against the tenant UID they record, so a
// restart neither duplicates nor orphans anything.
package controller

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
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
	WorkloadNamespace      string
	// HostNodeSelector picks the host nodes that get a virtual Node; the
	// host pods carry it too, so the host scheduler agrees.
	HostNodeSelector labels.Selector
	// HostTolerations go on every host pod: the provider's, never the
	// tenant's (those only steer the tenant's scheduler).
	HostTolerations []corev1.Toleration
	// Pod is the translation context (workload namespace, tenant apiserver
	// address, DNS, Pod Security level...). Services is filled per pod.
	Pod translate.Context
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
}

// Syncer is one tenant's syncer.
type Syncer struct {
	o      Options
	now    func() time.Time
	tenant informers.SharedInformerFactory
	// tenantHook watches the one webhook configuration that is the syncer's.
	tenantHook informers.SharedInformerFactory
	host       informers.SharedInformerFactory
	hostNode   informers.SharedInformerFactory
	// hostEvents is started only after the other caches have synced
	// (startEventMirror) and is not waited for: Events are best-effort.
	hostEvents informers.SharedInformerFactory
	mirrored   *mirrorLog
	recorder   record.EventRecorder

	tenantPods       corelisters.PodLister
	tenantConfigMaps corelisters.ConfigMapLister
	tenantSecrets    corelisters.SecretLister
	tenantServices   corelisters.ServiceLister
	tenantNodes      corelisters.NodeLister
	hostPods         corelisters.PodLister
	hostConfigMaps   corelisters.ConfigMapLister
	hostSecrets      corelisters.SecretLister
	hostServices     corelisters.ServiceLister
	hostNodes        corelisters.NodeLister
	tenantWebhooks   admissionlisters.MutatingWebhookConfigurationLister
	// webhookCA is the Service webhook's CA certificate (PEM).
	webhookCA []byte
	dns       *dnsState

	pods workqueue.TypedRateLimitingInterface[string]
	// podStatus holds the keys of tenant pods whose host pod changed: status
	// up-sync on its own workers, so that a burst of host-pod creations on
	// pods does not hold back Ready for pods already running.
	podStatus workqueue.TypedRateLimitingInterface[string]
	nodes     workqueue.TypedRateLimitingInterface[string]
	services  workqueue.TypedRateLimitingInterface[string]
	// objects holds "configmap/<ns>/<name>" and "secret/<ns>/<name>" keys
	// of tenant objects whose host copies may need an update, gcKey,
	// webhookKey and dnsKey.
	objects workqueue.TypedRateLimitingInterface[string]

	synced []cache.InformerSynced
}

// gcKey on the objects queue removes host ConfigMaps and Secrets no host
// pod references any more.
const gcKey = "gc"

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
	s.hostEvents = newHostEventInformers(o)
	s.mirrored = newMirrorLog(mirroredEventsSize)

	rl := func(name string) workqueue.TypedRateLimitingInterface[string] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	}
	s.pods, s.podStatus, s.nodes, s.services, s.objects = rl("pods"), rl("podStatus"), rl("nodes"), rl("services"), rl("objects")

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
	s.tenantPods, s.tenantConfigMaps, s.tenantSecrets, s.tenantServices, s.tenantNodes = tp.Lister(), tcm.Lister(), ts.Lister(), tsvc.Lister(), tn.Lister()
	s.hostPods, s.hostConfigMaps, s.hostSecrets, s.hostServices, s.hostNodes = hp.Lister(), hcm.Lister(), hs.Lister(), hsvc.Lister(), hn.Lister()
	for _, i := range []cache.SharedIndexInformer{tp.Informer(), tcm.Informer(), ts.Informer(), tsvc.Informer(), tn.Informer(),
		hp.Informer(), hcm.Informer(), hs.Informer(), hsvc.Informer(), hn.Informer()} {
		s.synced = append(s.synced, i.HasSynced)
	}

	handle(tp.Informer(), func(obj any) { s.pods.Add(key(obj)) })
	handle(hp.Informer(), func(obj any) {
		if id, ok := identity(obj); ok {
			s.podStatus.Add(id.Namespace + "/" + id.Name)
		}
	})
	handle(tcm.Informer(), func(obj any) {
		s.objects.Add("configmap/" + key(obj))
		if isDNSObject(obj) {
			s.objects.Add(dnsKey)
		}
	})
	handle(ts.Informer(), func(obj any) { s.objects.Add("secret/" + key(obj)) })
	handle(hcm.Informer(), func(obj any) {
		if id, ok := identity(obj); ok {
			s.objects.Add("configmap/" + id.Namespace + "/" + id.Name)
		}
	})
	handle(hs.Informer(), func(obj any) {
		if id, ok := identity(obj); ok {
			s.objects.Add("secret/" + id.Namespace + "/" + id.Name)
		}
	})
	handle(tsvc.Informer(), func(obj any) {
		s.services.Add(key(obj))
		if isDNSObject(obj) {
			s.objects.Add(dnsKey)
		}
	})
	s.dns = s.newDNSState()
	// By namespace and name, not identity(): a host Service the webhook
	// made has no tenant UID until syncService adopts it.
	handle(hsvc.Informer(), func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			ns, name := m.GetLabels()[names.TenantNamespaceLabel], m.GetAnnotations()[names.TenantNameAnnotation]
			if ns != "" && name != "" {
				s.services.Add(ns + "/" + name)
			}
		}
	})
	if o.Webhook.enabled() {
		s.tenantHook = informers.NewSharedInformerFactoryWithOptions(o.TenantWatch, o.ResyncPeriod,
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", WebhookConfigurationName).String()
			}))
		hooks := s.tenantHook.Admissionregistration().V1().MutatingWebhookConfigurations()
		s.tenantWebhooks = hooks.Lister()
		s.synced = append(s.synced, hooks.Informer().HasSynced)
		handle(hooks.Informer(), func(any) {
			s.objects.Add(webhookKey)
			s.objects.Add(dnsKey)
		})
	}
	handle(hn.Informer(), func(obj any) { s.nodes.Add(key(obj)) })
	handle(tn.Informer(), func(obj any) { s.nodes.Add(key(obj)) })

	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.Tenant.CoreV1().Events("")})
	s.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "capn-syncer"})
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
		for _, q := range []workqueue.TypedRateLimitingInterface[string]{s.pods, s.podStatus, s.nodes, s.services, s.objects} {
			q.ShutDown()
		}
	}()
	if s.o.Kubelet.endpoint() != nil {
		if err := s.serveKubelet(ctx); err != nil {
			return err
		}
	}
	if s.o.Webhook.enabled() {
		if err := s.serveWebhook(ctx); err != nil {
			return err
		}
		s.tenantHook.Start(ctx.Done())
		s.objects.Add(webhookKey)
	}
	s.tenant.Start(ctx.Done())
	s.dns.factory.Start(ctx.Done())
	s.objects.Add(dnsKey)
	s.host.Start(ctx.Done())
	s.hostNode.Start(ctx.Done())
	if !cache.WaitForNamedCacheSync("capn-syncer", ctx.Done(), s.synced...) {
		return fmt.Errorf("caches did not sync")
	}
	logger.Info("caches synced", "workloadNamespace", s.o.WorkloadNamespace)
	if err := s.startEventMirror(ctx); err != nil {
		return fmt.Errorf("mirroring host events: %w", err)
	}
	if s.o.Synced != nil {
		s.o.Synced()
	}
	var wg sync.WaitGroup
	run := func(q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
		for i := 0; i < s.o.Workers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wait.UntilWithContext(ctx, func(ctx context.Context) { work(ctx, q, sync) }, time.Second)
			}()
		}
	}
	run(s.nodes, s.syncNode)
	run(s.pods, s.syncPod)
	run(s.podStatus, s.syncPodStatus)
	run(s.services, s.syncService)
	run(s.objects, s.syncObject)
	// Heartbeats keep the tenant's node lifecycle controller from evicting
	// the tenant's pods: a virtual Node has no kubelet to renew its Lease.
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, s.heartbeat, heartbeatPeriod)
	}()
	<-ctx.Done()
	wg.Wait()
	return nil
}

func work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		k, quit := q.Get()
		if quit {
			return
		}
		err := sync(ctx, k)
		if err != nil {
			// The first failures are routine (a conflict, a cache behind);
			// one that persists is what an operator needs to see.
			if q.NumRequeues(k) < 3 {
				klog.FromContext(ctx).V(2).Info("Sync failed, retrying", "key", k, "err", err)
			} else {
				klog.FromContext(ctx).Error(err, "Sync failed, retrying", "key", k, "retries", q.NumRequeues(k))
			}
			q.AddRateLimited(k)
		} else {
			q.Forget(k)
		}
		q.Done(k)
	}
}

// handle enqueues on add, update and delete (tombstones unwrapped).
func handle(i cache.SharedIndexInformer, f func(obj any)) {
	_, _ = i.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, obj any) { f(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			f(obj)
		},
	})
}

func key(obj any) string {
	k, _ := cache.MetaNamespaceKeyFunc(obj)
	return k
}

// identity reads the tenant identity a host object records.
func identity(obj any) (names.Identity, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return names.Identity{}, false
	}
	return names.IdentityOf(m.GetLabels(), m.GetAnnotations())
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

func (k KubeletOptions) endpoint() *KubeletEndpoint {
	if k.AdvertiseIP == "" {
		return nil
	}
	return &KubeletEndpoint{IP: k.AdvertiseIP, Port: k.Port}
}
