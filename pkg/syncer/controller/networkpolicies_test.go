package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

func indexOf(t *testing.T, objs ...runtime.Object) cache.Indexer {
	t.Helper()
	i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, i.Add(o))
	}
	return i
}

func denyAll(uid string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deny", UID: types.UID(uid)},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
}

func policySyncer(t *testing.T, tenant []runtime.Object, host []runtime.Object) (*networkPolicyKind, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(host...)
	var hostPolicies, hostPods []runtime.Object
	for _, o := range host {
		switch o.(type) {
		case *networkingv1.NetworkPolicy:
			hostPolicies = append(hostPolicies, o)
		case *corev1.Pod:
			hostPods = append(hostPods, o)
		}
	}
	k := &networkPolicyKind{Syncer: &Syncer{
		o:              Options{WorkloadNamespace: testWorkloads, Host: client},
		recorder:       record.NewFakeRecorder(10),
		tenantPolicies: networkinglisters.NewNetworkPolicyLister(indexOf(t, tenant...)),
		hostPolicies:   networkinglisters.NewNetworkPolicyLister(indexOf(t, hostPolicies...)),
		hostPods:       corelisters.NewPodLister(indexOf(t, hostPods...)),
	}}
	client.ClearActions()
	return k, client
}

func TestNetworkPolicyKindCreatesTheHostPolicy(t *testing.T) {
	k, client := policySyncer(t, []runtime.Object{denyAll("np-1")}, nil)
	require.NoError(t, k.sync(context.Background(), "shop/deny"))
	got, err := client.NetworkingV1().NetworkPolicies(testWorkloads).Get(context.Background(), names.Host("shop", "deny"), metav1.GetOptions{})
	require.NoError(t, err)
	want, _ := translate.NetworkPolicy(denyAll("np-1"), translate.PolicyContext{WorkloadNamespace: testWorkloads})
	assert.Equal(t, want.Spec, got.Spec)
	assert.Equal(t, "np-1", got.Labels[names.TenantUIDLabel])
}

func TestNetworkPolicyKindIdleWritesNothing(t *testing.T) {
	host, _ := translate.NetworkPolicy(denyAll("np-1"), translate.PolicyContext{WorkloadNamespace: testWorkloads})
	k, client := policySyncer(t, []runtime.Object{denyAll("np-1")}, []runtime.Object{host})
	require.NoError(t, k.sync(context.Background(), "shop/deny"))
	assert.Empty(t, client.Actions())
}

// A host policy outlives its tenant policy only until the next sync, and
// one made for an earlier policy of the same name (another UID) is
// replaced, never adopted.
func TestNetworkPolicyKindDeletesByUID(t *testing.T) {
	host, _ := translate.NetworkPolicy(denyAll("np-old"), translate.PolicyContext{WorkloadNamespace: testWorkloads})
	host.UID = "host-uid"
	for name, tenant := range map[string][]runtime.Object{"tenant policy gone": nil, "replaced": {denyAll("np-new")}} {
		t.Run(name, func(t *testing.T) {
			k, client := policySyncer(t, tenant, []runtime.Object{host.DeepCopy()})
			err := k.sync(context.Background(), "shop/deny")
			if tenant != nil {
				require.Error(t, err, "recreated on the retry, from a cache that has seen the delete")
			} else {
				require.NoError(t, err)
			}
			require.Len(t, client.Actions(), 1)
			d, ok := client.Actions()[0].(clienttesting.DeleteActionImpl)
			require.True(t, ok, "%v", client.Actions()[0])
			assert.Equal(t, host.Name, d.Name)
			require.NotNil(t, d.DeleteOptions.Preconditions)
			assert.Equal(t, host.UID, *d.DeleteOptions.Preconditions.UID)
		})
	}
}

// syncLabels: a host pod from before finding 8's fix keeps its tenant
// keys as they were while a host Service still selects by them, so no
// Service loses its endpoints mid-migration; then they go. The pod also
// gets the isolation marker of the tenant policy that selects it.
func TestSyncLabelsMigratesWithoutDroppingEndpoints(t *testing.T) {
	tenant := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid", Labels: map[string]string{"app": "web"}}}
	oldLabels := translate.HostLabels("shop", "tenant-uid")
	oldLabels["app"] = "web"
	host := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: names.Host("shop", "web-0"), Labels: oldLabels}}
	legacy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: "svc"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web", names.TenantNamespaceLabel: "shop"}}}
	migrated := legacy.DeepCopy()
	migrated.Spec.Selector = translate.ServiceSelector("shop", map[string]string{"app": "web"})

	for name, tc := range map[string]struct {
		svc     *corev1.Service
		keepOld bool
	}{"a Service selects the old keys": {legacy, true}, "every Service migrated": {migrated, false}} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(host.DeepCopy())
			k := &podKind{Syncer: &Syncer{
				o:                Options{WorkloadNamespace: testWorkloads, Host: client},
				tenantServices:   corelisters.NewServiceLister(indexOf(t)),
				hostServices:     corelisters.NewServiceLister(indexOf(t, tc.svc)),
				tenantNamespaces: corelisters.NewNamespaceLister(indexOf(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "a"}}})),
				tenantPolicies:   networkinglisters.NewNetworkPolicyLister(indexOf(t, denyAll("np-1"))),
			}, q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
			t.Cleanup(k.q.ShutDown)
			_, err := k.syncLabels(context.Background(), "shop/web-0", tenant, host)
			require.NoError(t, err)

			got, err := client.CoreV1().Pods(testWorkloads).Get(context.Background(), host.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "web", got.Labels[names.TenantLabelKey("app")])
			assert.Equal(t, "a", got.Labels[names.NamespaceLabelKey("team")])
			assert.Equal(t, "true", got.Labels[names.IngressIsolatedLabel])
			assert.NotContains(t, got.Labels, names.EgressIsolatedLabel)
			if tc.keepOld {
				assert.Equal(t, "web", got.Labels["app"])
			} else {
				assert.NotContains(t, got.Labels, "app")
			}
		})
	}
}
