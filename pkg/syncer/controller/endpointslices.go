package controller

import (
	"context"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

const kindEndpointSlices = "endpointslices"

// ReasonEndpointsDropped is the Warning on a tenant EndpointSlice some of
// whose addresses are not the tenant's own pods'.
const ReasonEndpointsDropped = "EndpointsDropped"

// hostPodIPIndex indexes the host pods by their IPs.
const hostPodIPIndex = "podIP"

// tenantSliceSelector leaves out the slices the tenant's endpointslice
// controller computes from a Service's selector: the host computes those
// itself. What is left is hand-made (or mirrored from hand-made
// Endpoints), and few.
var tenantSliceSelector = labels.NewSelector().Add(mustRequirement(discoveryv1.LabelManagedBy, selection.NotEquals, "endpointslice-controller.k8s.io"))

func mustRequirement(key string, op selection.Operator, vals ...string) labels.Requirement {
	r, err := labels.NewRequirement(key, op, vals)
	if err != nil {
		panic(err) // constant input
	}
	return *r
}

// endpointSliceKind serves the tenant's hand-made EndpointSlices of
// selectorless Services on the host, where kube-proxy routes the host
// Service by them: only the addresses that are the tenant's own pods'.
type endpointSliceKind struct {
	*Syncer
	q           queue
	tenantIndex cache.Indexer
	tenantLists discoverylisters.EndpointSliceLister
	hostSlices  discoverylisters.EndpointSliceLister
	hostPodIPs  cache.Indexer
}

func (k *endpointSliceKind) name() string { return kindEndpointSlices }

func (k *endpointSliceKind) register(r *registrar) {
	k.q = r.queue(kindEndpointSlices)
	f := informers.NewSharedInformerFactoryWithOptions(k.o.TenantWatch, k.o.ResyncPeriod,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = tenantSliceSelector.String() }))
	ts := f.Discovery().V1().EndpointSlices()
	k.tenantLists, k.tenantIndex = ts.Lister(), ts.Informer().GetIndexer()
	hs := k.host.Discovery().V1().EndpointSlices()
	k.hostSlices = hs.Lister()
	hp := k.host.Core().V1().Pods().Informer()
	if err := hp.AddIndexers(cache.Indexers{hostPodIPIndex: podIPs}); err != nil {
		panic(err) // only before the informer starts
	}
	k.hostPodIPs = hp.GetIndexer()
	r.waitFor(ts.Informer().HasSynced, hs.Informer().HasSynced)
	handle(ts.Informer(), func(obj any) { k.q.Add(key(obj)) })
	handle(hs.Informer(), func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			ns, name := m.GetLabels()[names.TenantNamespaceLabel], m.GetAnnotations()[names.TenantNameAnnotation]
			if ns != "" && name != "" {
				k.q.Add(ns + "/" + name)
			}
		}
	})
	// A Service that gains or loses its selector, or goes.
	handle(k.tenant.Core().V1().Services().Informer(), func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			k.enqueueSlices(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: m.GetName()}), m.GetNamespace())
		}
	})
	// A pod that gets or gives up an address changes what is the
	// tenant's own, in any of its namespaces.
	_, _ = hp.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { k.enqueueSlices(labels.Everything(), "") },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Pod)
			c, ok2 := cur.(*corev1.Pod)
			if ok1 && ok2 && slices.Equal(podIPsOf(o), podIPsOf(c)) {
				return
			}
			k.enqueueSlices(labels.Everything(), "")
		},
		DeleteFunc: func(any) { k.enqueueSlices(labels.Everything(), "") },
	})
	r.beforeSync(func(ctx context.Context) error {
		f.Start(ctx.Done())
		return nil
	})
}

// enqueueSlices enqueues the tenant slices sel selects, in ns ("" for
// every namespace).
func (k *endpointSliceKind) enqueueSlices(sel labels.Selector, ns string) {
	var list []*discoveryv1.EndpointSlice
	if ns == "" {
		list, _ = k.tenantLists.List(sel)
	} else {
		list, _ = k.tenantLists.EndpointSlices(ns).List(sel)
	}
	for _, s := range list {
		k.q.Add(s.Namespace + "/" + s.Name)
	}
}

func podIPs(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	return podIPsOf(p), nil
}

func podIPsOf(p *corev1.Pod) []string {
	var out []string
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			out = append(out, a.Unmap().String())
		}
	}
	return out
}

// ownAddress reports whether ip is the address of one of the tenant's
// running host pods (the host informer sees only the syncer's own).
func (k *endpointSliceKind) ownAddress(ip netip.Addr) bool {
	pods, err := k.hostPodIPs.ByIndex(hostPodIPIndex, ip.String())
	if err != nil {
		return false
	}
	for _, o := range pods {
		if p, ok := o.(*corev1.Pod); ok && p.Namespace == k.o.WorkloadNamespace && p.DeletionTimestamp == nil &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}

// endpointSliceFields: the endpoints, ports and labels; the host adds
// nothing to a slice.
var endpointSliceFields = owned[*discoveryv1.EndpointSlice]{
	equal: func(cur, want *discoveryv1.EndpointSlice) bool {
		return equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(cur.Ports, want.Ports) &&
			equality.Semantic.DeepEqual(cur.Labels, want.Labels)
	},
	merge: func(cur, want *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
		upd := cur.DeepCopy()
		upd.Endpoints, upd.Ports, upd.Labels = want.Endpoints, want.Ports, want.Labels
		return upd
	},
}

// sync serves the tenant slice key on the host, or removes its host copy
// once the slice, its Service, or the Service's lack of a selector is
// gone.
func (k *endpointSliceKind) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	client := k.o.Host.DiscoveryV1().EndpointSlices(k.o.WorkloadNamespace)
	cur, err := cached(k.hostSlices.EndpointSlices(k.o.WorkloadNamespace).Get(names.Host(ns, name)))
	if err != nil {
		return err
	}
	tenant, err := cached(k.tenantLists.EndpointSlices(ns).Get(name))
	if err != nil {
		return err
	}
	var want *discoveryv1.EndpointSlice
	dropped := 0
	if tenant != nil && tenant.DeletionTimestamp == nil {
		svcName := tenant.Labels[discoveryv1.LabelServiceName]
		svc, err := cached(k.tenantServices.Services(ns).Get(svcName))
		if err != nil {
			return err
		}
		if svc != nil && translate.SyncsEndpoints(svc) {
			want, dropped = translate.HostEndpointSlice(tenant, names.Host(ns, svcName), k.o.WorkloadNamespace, k.ownAddress)
		}
	}
	if cur != nil && (want == nil || cur.Labels[names.TenantUIDLabel] != string(tenant.UID) || cur.AddressType != want.AddressType) {
		// Gone, replaced, or of another family (immutable).
		return deleteUID(ctx, client.Delete, cur)
	}
	if want == nil {
		return nil
	}
	_, did, err := applyIfChanged(ctx, client, cur, want, endpointSliceFields)
	if err == nil && did != unchanged && dropped > 0 {
		k.recorder.Eventf(tenant, corev1.EventTypeWarning, ReasonEndpointsDropped,
			"%d addresses are not this cluster's pods and are not served", dropped)
	}
	return err
}
