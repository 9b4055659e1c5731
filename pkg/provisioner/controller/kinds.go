package controller

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

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

// managed builds a kind's entry from its typed client and its apply
// configuration's extractor; T is inferred from the extractor.
func managed[T builders.Object, AC any](gvr schema.GroupVersionResource, extract func(T, string) (AC, error),
	client func(c kubernetes.Interface, ns string) typedClient[T]) managedKind {
	return managedKind{
		typ: reflect.TypeFor[T](),
		gvr: gvr,
		do: func(ctx context.Context, c kubernetes.Interface, o op, manager string, obj builders.Object) (builders.Object, error) {
			return call(ctx, client(c, obj.GetNamespace()), o, manager, obj.(T))
		},
		owned: func(live builders.Object) (any, error) { return extract(live.(T), FieldManager) },
	}
}

// managedKinds are the kinds the builders render. Namespace comes first:
// the others live in one.
var managedKinds = []managedKind{
	managed(corev1.SchemeGroupVersion.WithResource("namespaces"), corev1ac.ExtractNamespace,
		func(c kubernetes.Interface, _ string) typedClient[*corev1.Namespace] { return c.CoreV1().Namespaces() }),
	managed(corev1.SchemeGroupVersion.WithResource("services"), corev1ac.ExtractService,
		func(c kubernetes.Interface, ns string) typedClient[*corev1.Service] { return c.CoreV1().Services(ns) }),
	managed(corev1.SchemeGroupVersion.WithResource("configmaps"), corev1ac.ExtractConfigMap,
		func(c kubernetes.Interface, ns string) typedClient[*corev1.ConfigMap] {
			return c.CoreV1().ConfigMaps(ns)
		}),
	managed(corev1.SchemeGroupVersion.WithResource("secrets"), corev1ac.ExtractSecret,
		func(c kubernetes.Interface, ns string) typedClient[*corev1.Secret] { return c.CoreV1().Secrets(ns) }),
	managed(corev1.SchemeGroupVersion.WithResource("limitranges"), corev1ac.ExtractLimitRange,
		func(c kubernetes.Interface, ns string) typedClient[*corev1.LimitRange] {
			return c.CoreV1().LimitRanges(ns)
		}),
	managed(corev1.SchemeGroupVersion.WithResource("resourcequotas"), corev1ac.ExtractResourceQuota,
		func(c kubernetes.Interface, ns string) typedClient[*corev1.ResourceQuota] {
			return c.CoreV1().ResourceQuotas(ns)
		}),
	managed(appsv1.SchemeGroupVersion.WithResource("deployments"), appsv1ac.ExtractDeployment,
		func(c kubernetes.Interface, ns string) typedClient[*appsv1.Deployment] {
			return c.AppsV1().Deployments(ns)
		}),
	managed(appsv1.SchemeGroupVersion.WithResource("statefulsets"), appsv1ac.ExtractStatefulSet,
		func(c kubernetes.Interface, ns string) typedClient[*appsv1.StatefulSet] {
			return c.AppsV1().StatefulSets(ns)
		}),
	managed(policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), policyv1ac.ExtractPodDisruptionBudget,
		func(c kubernetes.Interface, ns string) typedClient[*policyv1.PodDisruptionBudget] {
			return c.PolicyV1().PodDisruptionBudgets(ns)
		}),
	managed(networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), networkingv1ac.ExtractNetworkPolicy,
		func(c kubernetes.Interface, ns string) typedClient[*networkingv1.NetworkPolicy] {
			return c.NetworkingV1().NetworkPolicies(ns)
		}),
	managed(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), corev1ac.ExtractServiceAccount,
		func(c kubernetes.Interface, ns string) typedClient[*corev1.ServiceAccount] {
			return c.CoreV1().ServiceAccounts(ns)
		}),
	managed(rbacv1.SchemeGroupVersion.WithResource("rolebindings"), rbacv1ac.ExtractRoleBinding,
		func(c kubernetes.Interface, ns string) typedClient[*rbacv1.RoleBinding] {
			return c.RbacV1().RoleBindings(ns)
		}),
	managed(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), rbacv1ac.ExtractClusterRoleBinding,
		func(c kubernetes.Interface, _ string) typedClient[*rbacv1.ClusterRoleBinding] {
			return c.RbacV1().ClusterRoleBindings()
		}),
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
