package kubelet

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/tenant/names"
)

const (
	workloadNS = "tenant-a-workloads"
	tenantUID  = "0b7c1d0e-3f5a-4c1e-9d7b-8a6f2e1c0d9a"
)

func tenantPod(ns, name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: corev1.PodSpec{
			NodeName:       node,
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers:     []corev1.Container{{Name: "app"}, {Name: "sidecar"}},
		},
	}
}

// hostPod is the host pod the syncer makes for tenant pod ns/name of uid.
func hostPod(ns, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: workloadNS, Name: names.Host(ns, name),
		Labels: map[string]string{
			"app.kubernetes.io/managed-by": names.ManagedByValue,
			names.TenantNamespaceLabel:     ns,
			names.TenantUIDLabel:           uid,
		},
		Annotations: map[string]string{names.TenantNameAnnotation: name},
	}}
}

func lister(t *testing.T, pods ...*corev1.Pod) PodGetter {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		require.NoError(t, idx.Add(p))
	}
	return ListerGetter(corelisters.NewPodLister(idx))
}

// resolver holds tenant pod shop/web (bound, with its host pod) unless
// pods are given.
func resolver(t *testing.T, tenant []*corev1.Pod, host []*corev1.Pod) Resolver {
	if tenant == nil {
		tenant = []*corev1.Pod{tenantPod("shop", "web", tenantUID, "vnode-1")}
	}
	if host == nil {
		host = []*corev1.Pod{hostPod("shop", "web", tenantUID)}
	}
	return Resolver{WorkloadNamespace: workloadNS, Tenant: lister(t, tenant...), Host: lister(t, host...)}
}
