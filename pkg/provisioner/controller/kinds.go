package controller

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1client "k8s.io/client-go/kubernetes/typed/discovery/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"

	"capn.dev/capn/pkg/provisioner/builders"
)

// managedKind is everything capn needs to handle one kind it writes in the
// management cluster: how to reach it live (kubeManagement), which informer
// caches it (cachedManagement) and how to extract the fields capn owns
// (drift). Keeping the three together means a kind the builders start to
// render is supported everywhere or nowhere.
type managedKind struct {
	typ reflect.Type
	gvr schema.GroupVersionResource
	// do runs one live call against the kind's typed client.
	do func(ctx context.Context, c kubernetes.Interface, o op, manager string, obj builders.Object) (builders.Object, error)
	// owned is ownedFields for this kind.
	owned func(live builders.Object) (any, error)
}

// managed builds a kind's entry from its apply configuration's extractor,
// its client group and its typed client; T is inferred from the extractor,
// C from the client.
func managed[T builders.Object, AC any, G any, C typedClient[T]](gvr schema.GroupVersionResource,
	extract func(T, string) (AC, error), group func(kubernetes.Interface) G, client func(G, string) C) managedKind {
	return managedKind{
		typ: reflect.TypeFor[T](),
		gvr: gvr,
		do: func(ctx context.Context, c kubernetes.Interface, o op, manager string, obj builders.Object) (builders.Object, error) {
			return call[T](ctx, client(group(c), obj.GetNamespace()), o, manager, obj.(T))
		},
		owned: func(live builders.Object) (any, error) { return extract(live.(T), FieldManager) },
	}
}

// clusterScoped adapts a cluster-scoped kind's client to managed's.
func clusterScoped[G, C any](client func(G) C) func(G, string) C {
	return func(g G, _ string) C { return client(g) }
}

var (
	core       = corev1.SchemeGroupVersion.WithResource
	apps       = appsv1.SchemeGroupVersion.WithResource
	policy     = policyv1.SchemeGroupVersion.WithResource
	networking = networkingv1.SchemeGroupVersion.WithResource
	rbac       = rbacv1.SchemeGroupVersion.WithResource
	discovery  = discoveryv1.SchemeGroupVersion.WithResource
)

// managedKinds are the kinds the builders render. Namespace comes first:
// the others live in one.
var managedKinds = []managedKind{
	managed(core("namespaces"), corev1ac.ExtractNamespace, kubernetes.Interface.CoreV1, clusterScoped(corev1client.CoreV1Interface.Namespaces)),
	managed(core("services"), corev1ac.ExtractService, kubernetes.Interface.CoreV1, corev1client.CoreV1Interface.Services),
	managed(core("configmaps"), corev1ac.ExtractConfigMap, kubernetes.Interface.CoreV1, corev1client.CoreV1Interface.ConfigMaps),
	managed(core("secrets"), corev1ac.ExtractSecret, kubernetes.Interface.CoreV1, corev1client.CoreV1Interface.Secrets),
	managed(core("limitranges"), corev1ac.ExtractLimitRange, kubernetes.Interface.CoreV1, corev1client.CoreV1Interface.LimitRanges),
	managed(core("resourcequotas"), corev1ac.ExtractResourceQuota, kubernetes.Interface.CoreV1, corev1client.CoreV1Interface.ResourceQuotas),
	managed(core("serviceaccounts"), corev1ac.ExtractServiceAccount, kubernetes.Interface.CoreV1, corev1client.CoreV1Interface.ServiceAccounts),
	managed(apps("deployments"), appsv1ac.ExtractDeployment, kubernetes.Interface.AppsV1, appsv1client.AppsV1Interface.Deployments),
	managed(apps("statefulsets"), appsv1ac.ExtractStatefulSet, kubernetes.Interface.AppsV1, appsv1client.AppsV1Interface.StatefulSets),
	managed(policy("poddisruptionbudgets"), policyv1ac.ExtractPodDisruptionBudget, kubernetes.Interface.PolicyV1,
		policyv1client.PolicyV1Interface.PodDisruptionBudgets),
	managed(networking("networkpolicies"), networkingv1ac.ExtractNetworkPolicy, kubernetes.Interface.NetworkingV1,
		networkingv1client.NetworkingV1Interface.NetworkPolicies),
	// The waker's EndpointSlice (builders.WakerEndpointSlice). The
	// EndpointSlice controller's slices of capn's Services are cached too
	// (they carry the Services' labels): a sync reads none of them.
	managed(discovery("endpointslices"), discoveryv1ac.ExtractEndpointSlice, kubernetes.Interface.DiscoveryV1,
		discoveryv1client.DiscoveryV1Interface.EndpointSlices),
	managed(rbac("rolebindings"), rbacv1ac.ExtractRoleBinding, kubernetes.Interface.RbacV1, rbacv1client.RbacV1Interface.RoleBindings),
	managed(rbac("clusterrolebindings"), rbacv1ac.ExtractClusterRoleBinding, kubernetes.Interface.RbacV1,
		clusterScoped(rbacv1client.RbacV1Interface.ClusterRoleBindings)),
}

var managedByType = func() map[reflect.Type]*managedKind {
	m := make(map[reflect.Type]*managedKind, len(managedKinds))
	for i := range managedKinds {
		m[managedKinds[i].typ] = &managedKinds[i]
	}
	return m
}()

// managedKindOf returns obj's entry; a kind the builders render but the
// table lacks fails loudly rather than being silently skipped.
func managedKindOf(obj builders.Object) (*managedKind, error) {
	k, ok := managedByType[reflect.TypeOf(obj)]
	if !ok {
		return nil, fmt.Errorf("unsupported object type %T", obj)
	}
	return k, nil
}
