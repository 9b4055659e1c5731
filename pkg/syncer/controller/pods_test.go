package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// statusSyncer is the pod status kind with what it reads and writes: the
// tenant pod shop/web-0 (if tenantUID is set) in a fake tenant apiserver
// and its listers, and a host pod labelled for hostUID.
func statusSyncer(t *testing.T, tenantUID, hostUID string) (*podStatusKind, *fake.Clientset) {
	t.Helper()
	tenants := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	hosts := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	client := fake.NewClientset()
	if tenantUID != "" {
		tenant := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: types.UID("tenant-" + tenantUID)},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
		require.NoError(t, tenants.Add(tenant))
		client = fake.NewClientset(tenant)
	}
	host := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testWorkloads, Name: names.Host("shop", "web-0"),
			Labels:      translate.HostLabels("shop", "tenant-"+hostUID),
			Annotations: map[string]string{names.TenantNameAnnotation: "web-0"},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.7", HostIP: "192.0.2.2"},
	}
	require.NoError(t, hosts.Add(host))
	s := &podStatusKind{Syncer: &Syncer{
		o:          Options{WorkloadNamespace: testWorkloads, Tenant: client},
		tenantPods: corelisters.NewPodLister(tenants), hostPods: corelisters.NewPodLister(hosts),
	}, pods: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	t.Cleanup(s.pods.ShutDown)
	client.ClearActions()
	return s, client
}

func TestSyncPodStatusUpSyncsARunningPod(t *testing.T) {
	s, client := statusSyncer(t, "a", "a")
	require.NoError(t, s.sync(context.Background(), "shop/web-0"))
	got, err := client.CoreV1().Pods("shop").Get(context.Background(), "web-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, got.Status.Phase)
	assert.Equal(t, "10.244.0.7", got.Status.PodIP)
	assert.Zero(t, s.pods.Len(), "an up-sync is the status queue's own work")
}

// Anything but an up-sync (creating, failing or deleting) stays podKind's,
// so the two queues never both create or delete.
func TestSyncPodStatusHandsTheRestToSyncPod(t *testing.T) {
	for name, uids := range map[string][2]string{
		"host pod of an earlier tenant pod": {"b", "a"},
		"tenant pod gone":                   {"", "a"},
	} {
		t.Run(name, func(t *testing.T) {
			s, client := statusSyncer(t, uids[0], uids[1])
			require.NoError(t, s.sync(context.Background(), "shop/web-0"))
			assert.Empty(t, client.Actions(), "no tenant write")
			require.Equal(t, 1, s.pods.Len())
			k, _ := s.pods.Get()
			assert.Equal(t, "shop/web-0", k)
		})
	}
}

// A tenant deletes its pod with a grace period far over the bound on
// terminationGracePeriodSeconds; the host pod is deleted with the bound.
func TestFinishDeletionCapsTheHostGracePeriod(t *testing.T) {
	host := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: names.Host("shop", "web-0"), UID: "host-uid"}}
	client := fake.NewClientset(host)
	k := &podKind{Syncer: &Syncer{o: Options{WorkloadNamespace: testWorkloads, Host: client}}}
	now := metav1.Now()
	tenant := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid",
		DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](100000)}}

	require.NoError(t, k.finishDeletion(context.Background(), tenant, host))

	var deletes []clienttesting.DeleteActionImpl
	for _, a := range client.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			deletes = append(deletes, d)
		}
	}
	require.Len(t, deletes, 1)
	assert.Equal(t, host.Name, deletes[0].Name)
	require.NotNil(t, deletes[0].DeleteOptions.GracePeriodSeconds)
	assert.Equal(t, int64(names.MaxGracePeriodSeconds), *deletes[0].DeleteOptions.GracePeriodSeconds)
}
