package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// A tenant's label edit reaches the host pod's downward annotation, which
// its labels volume reads, and nothing the host's controllers annotated
// is lost. (The conformance spec "Downward API volume should update labels
// on modification".)
func TestSyncLabelsCarriesTenantEditsToDownwardVolumes(t *testing.T) {
	tenant := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid", Labels: map[string]string{"app": "web", "v": "1"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1"}}, Volumes: []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
		}}}}},
	}
	created, errs := translate.Pod(tenant.DeepCopy(), translate.Context{WorkloadNamespace: testWorkloads})
	require.Empty(t, errs)
	host := created.Pod
	host.Annotations["seen-by"] = "a host controller"

	tenant.Labels["v"] = "2"
	client := fake.NewClientset(host.DeepCopy())
	k := &podKind{Syncer: &Syncer{
		o:                Options{WorkloadNamespace: testWorkloads, Host: client},
		tenantServices:   corelisters.NewServiceLister(indexOf(t)),
		hostServices:     corelisters.NewServiceLister(indexOf(t)),
		tenantNamespaces: corelisters.NewNamespaceLister(indexOf(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})),
		tenantPolicies:   networkinglisters.NewNetworkPolicyLister(indexOf(t)),
	}, q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	t.Cleanup(k.q.ShutDown)
	_, err := k.syncLabels(context.Background(), "shop/web-0", tenant, host)
	require.NoError(t, err)

	got, err := client.CoreV1().Pods(testWorkloads).Get(context.Background(), host.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "app=\"web\"\nv=\"2\"", got.Annotations[translate.DownwardAnnotationPrefix+"labels"])
	assert.Equal(t, "a host controller", got.Annotations["seen-by"])
	assert.Equal(t, "web-0", got.Annotations[names.TenantNameAnnotation])
	assert.Equal(t, "2", got.Labels[names.TenantLabelKey("v")])
}

// Labels and annotations grown past the bound keep the values the pod
// already sees: the host write would fail, and with it the pod's status
// up-sync.
func TestSyncLabelsKeepsDownwardValuesPastTheBound(t *testing.T) {
	tenant := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid", Annotations: map[string]string{"note": "small"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1"}}, Volumes: []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "a", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}},
		}}}}},
	}
	created, errs := translate.Pod(tenant.DeepCopy(), translate.Context{WorkloadNamespace: testWorkloads})
	require.Empty(t, errs)
	host := created.Pod

	tenant.Annotations["note"] = strings.Repeat("x", translate.MaxDownwardBytes)
	client := fake.NewClientset(host.DeepCopy())
	events := record.NewFakeRecorder(1)
	k := &podKind{Syncer: &Syncer{
		o:                Options{WorkloadNamespace: testWorkloads, Host: client},
		recorder:         events,
		tenantServices:   corelisters.NewServiceLister(indexOf(t)),
		hostServices:     corelisters.NewServiceLister(indexOf(t)),
		tenantNamespaces: corelisters.NewNamespaceLister(indexOf(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})),
		tenantPolicies:   networkinglisters.NewNetworkPolicyLister(indexOf(t)),
	}, q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	t.Cleanup(k.q.ShutDown)
	_, err := k.syncLabels(context.Background(), "shop/web-0", tenant, host)
	require.NoError(t, err)

	got, err := client.CoreV1().Pods(testWorkloads).Get(context.Background(), host.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, `note="small"`, got.Annotations[translate.DownwardAnnotationPrefix+"annotations"])
	require.Len(t, events.Events, 1)
	assert.Contains(t, <-events.Events, ReasonUpdateRefused)
}
