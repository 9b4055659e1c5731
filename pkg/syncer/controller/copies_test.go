package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/pod-security-admission/api"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// copiesSyncer is a podKind whose workload namespace already holds a
// 40-byte copy (another pod's), with the tenant pod shop/web-0 that
// references the tenant ConfigMap "config" of configSize bytes, under a
// 100-byte bound.
func copiesSyncer(t *testing.T, configSize int) (k *podKind, tenant *corev1.Pod, tenantClient, hostClient *fake.Clientset) {
	t.Helper()
	index := func(objs ...any) cache.Indexer {
		i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		for _, o := range objs {
			require.NoError(t, i.Add(o))
		}
		return i
	}
	tenant = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", UID: "tenant-uid"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:v1",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "config"}}}}}}},
	}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "config"},
		Data: map[string]string{"k": strings.Repeat("x", configSize-1)}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testWorkloads, Name: names.Host("shop", "other"),
		Labels: map[string]string{managedByLabel: names.ManagedByValue}}, Data: map[string]string{"k": strings.Repeat("y", 39)}}
	tenantClient, hostClient = fake.NewClientset(tenant, config), fake.NewClientset(other)
	k = &podKind{Syncer: &Syncer{now: time.Now,
		o: Options{WorkloadNamespace: testWorkloads, Tenant: tenantClient, Host: hostClient,
			MaxCopiedBytes: resource.MustParse("100"),
			Pod: translate.Context{WorkloadNamespace: testWorkloads, APIServerHost: "10.96.12.34", APIServerPort: 6443,
				Nameserver: "10.96.0.10", DNSDomain: "cluster.local", Level: api.LevelBaseline}},
		recorder:         record.NewFakeRecorder(10),
		tenantConfigMaps: corelisters.NewConfigMapLister(index(config)),
		tenantSecrets:    corelisters.NewSecretLister(index()),
		tenantServices:   corelisters.NewServiceLister(index()),
		hostConfigMaps:   corelisters.NewConfigMapLister(index(other)),
		hostSecrets:      corelisters.NewSecretLister(index()),
		tenantNamespaces: corelisters.NewNamespaceLister(index(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})),
		tenantPolicies:   networkinglisters.NewNetworkPolicyLister(index()),
	}}
	tenantClient.ClearActions()
	hostClient.ClearActions()
	return k, tenant, tenantClient, hostClient
}

func TestCreateHostPodRefusesPastTheCopiedBytesBound(t *testing.T) {
	k, tenant, tenantClient, hostClient := copiesSyncer(t, 61)
	_, ctx := ktesting.NewTestContext(t)
	require.NoError(t, k.createHostPod(ctx, tenant))

	assert.Empty(t, hostClient.Actions(), "nothing is copied or created on the host")
	got, err := tenantClient.CoreV1().Pods("shop").Get(ctx, "web-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodFailed, got.Status.Phase)
	assert.Equal(t, ReasonSyncRefused, got.Status.Reason)
	assert.Equal(t, "spec: Forbidden: the ConfigMaps and Secrets the pod references would take this cluster's copies on the management cluster to a total of 101, over the provider's bound of 100 (bytes of keys and values)", got.Status.Message)
	assert.NotContains(t, got.Status.Message, "other", "no other copy is named")
}

func TestCreateHostPodWithinTheCopiedBytesBound(t *testing.T) {
	k, tenant, _, hostClient := copiesSyncer(t, 60)
	_, ctx := ktesting.NewTestContext(t)
	require.NoError(t, k.createHostPod(ctx, tenant))

	var created []string
	for _, a := range hostClient.Actions() {
		if c, ok := a.(clienttesting.CreateActionImpl); ok {
			created = append(created, c.GetResource().Resource)
		}
	}
	assert.Equal(t, []string{"configmaps", "pods"}, created)
}

// A copy the tenant grows past the bound keeps its old content, and the
// sync does not fail (nothing a retry could fix).
func TestCopyUpdatePastTheBoundKeepsTheOldCopy(t *testing.T) {
	k, _, _, hostClient := copiesSyncer(t, 60)
	_, ctx := ktesting.NewTestContext(t)
	grown := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "other"}, Data: map[string]string{"k": strings.Repeat("z", 101)}}
	require.NoError(t, k.copyConfigMap(ctx, grown))
	assert.Empty(t, hostClient.Actions())

	shrunk := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "other"}, Data: map[string]string{"k": "small"}}
	require.NoError(t, k.copyConfigMap(ctx, shrunk))
	require.Len(t, hostClient.Actions(), 1, "an update within the bound is made")
	assert.Equal(t, "update", hostClient.Actions()[0].GetVerb())
}
