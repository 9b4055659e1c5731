package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"

	"capn.dev/capn/pkg/syncer/translate"
)

// apiEndpointsKey is the kind's one key: one Service, default/kubernetes.
const apiEndpointsKey = "default/kubernetes"

// apiEndpointsKind keeps the tenant's default/kubernetes Endpoints and
// EndpointSlice (translate.APIServerEndpoints): made, and restored when
// edited or deleted. It watches only those two objects.
type apiEndpointsKind struct {
	*Syncer
	endpoints corelisters.EndpointsLister
	slices    discoverylisters.EndpointSliceLister
}

func (k *apiEndpointsKind) name() string { return kindAPIEndpoints }

func (k *apiEndpointsKind) register(r *registrar) {
	if ep, _ := translate.APIServerEndpoints(k.o.Pod.APIServerHost, k.o.Pod.APIServerPort); ep == nil {
		return
	}
	q := r.queue(kindAPIEndpoints)
	f := informers.NewSharedInformerFactoryWithOptions(k.o.TenantWatch, k.o.ResyncPeriod,
		informers.WithNamespace(translate.APIServerServiceNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", translate.APIServerServiceName).String()
		}))
	eps, slices := f.Core().V1().Endpoints(), f.Discovery().V1().EndpointSlices()
	k.endpoints, k.slices = eps.Lister(), slices.Lister()
	enqueue := func(any) { q.Add(apiEndpointsKey) }
	handle(eps.Informer(), enqueue)
	handle(slices.Informer(), enqueue)
	r.waitFor(eps.Informer().HasSynced, slices.Informer().HasSynced)
	r.beforeSync(func(ctx context.Context) error {
		f.Start(ctx.Done())
		return nil
	})
	r.afterSync(func(context.Context) error {
		q.Add(apiEndpointsKey)
		return nil
	})
}

func (k *apiEndpointsKind) sync(ctx context.Context, _ string) error {
	wantEP, wantSlice := translate.APIServerEndpoints(k.o.Pod.APIServerHost, k.o.Pod.APIServerPort)
	ns, name := translate.APIServerServiceNamespace, translate.APIServerServiceName
	curEP, err := cached(k.endpoints.Endpoints(ns).Get(name))
	if err != nil {
		return err
	}
	if _, _, err := applyIfChanged(ctx, k.o.Tenant.CoreV1().Endpoints(ns), curEP, wantEP, endpointsFields); err != nil {
		return err
	}
	curSlice, err := cached(k.slices.EndpointSlices(ns).Get(name))
	if err != nil {
		return err
	}
	_, _, err = applyIfChanged(ctx, k.o.Tenant.DiscoveryV1().EndpointSlices(ns), curSlice, wantSlice, sliceFields)
	return err
}

// endpointsFields: the subsets and the syncer's labels.
var endpointsFields = owned[*corev1.Endpoints]{
	equal: func(cur, want *corev1.Endpoints) bool {
		return equality.Semantic.DeepEqual(cur.Subsets, want.Subsets) && subset(want.Labels, cur.Labels)
	},
	merge: func(cur, want *corev1.Endpoints) *corev1.Endpoints {
		upd := cur.DeepCopy()
		upd.Subsets = want.Subsets
		upd.Labels = withEntries(upd.Labels, want.Labels)
		return upd
	},
}

// sliceFields: the endpoints, ports and labels (the address type cannot
// change, and the tenant apiserver's address family never does).
var sliceFields = owned[*discoveryv1.EndpointSlice]{
	equal: func(cur, want *discoveryv1.EndpointSlice) bool {
		return equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(cur.Ports, want.Ports) &&
			subset(want.Labels, cur.Labels)
	},
	merge: func(cur, want *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
		upd := cur.DeepCopy()
		upd.Endpoints, upd.Ports = want.Endpoints, want.Ports
		upd.Labels = withEntries(upd.Labels, want.Labels)
		return upd
	},
}
