package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// startCached runs a cached Management over kube and waits for its caches.
func startCached(t *testing.T, kube *kubefake.Clientset) Management {
	t.Helper()
	f := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ManagedSelector() }))
	m, caches, err := NewCachedManagement(kube, f)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	synced := make([]cache.InformerSynced, 0, len(caches.All))
	for _, inf := range caches.All {
		synced = append(synced, inf.HasSynced)
	}
	require.True(t, cache.WaitForCacheSync(ctx.Done(), synced...))
	return m
}

// waitCaught polls until the cache holds every object the fake has: the
// informers deliver asynchronously.
func waitCaught(t *testing.T, m Management, kube *kubefake.Clientset, ns string) {
	t.Helper()
	want, err := kube.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := m.ListSecrets(context.Background(), ns)
		return err == nil && len(got) == len(want.Items)
	}, 10*time.Second, 10*time.Millisecond)
}

// TestSteadySyncSendsNoReads: with the caches, a resync of a Ready cluster
// reads nothing from the management apiserver (the live Management GETs
// every object it renders: about 25 requests).
func TestSteadySyncSendsNoReads(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.markReady()
	f.syncTenant()
	require.Equal(t, v1alpha1.PhaseReady, f.nc.Status.Phase)

	cached := startCached(t, f.kube)
	waitCaught(t, cached, f.kube, managementNamespace(f.nc))
	f.mgmt.Management = cached
	f.kube.ClearActions()
	f.mgmt.reset()
	f.sync()

	assert.Empty(t, f.mgmt.writes, "a resync of a Ready cluster wrote")
	assert.NotEmpty(t, f.mgmt.reads, "the sync read nothing: it cannot have checked for drift")
	var sent []string
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "watch" {
			sent = append(sent, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	assert.Empty(t, sent, "requests a steady sync sent to the management apiserver")
}

func secret(ns, name, rv string, data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: map[string]string{"app.kubernetes.io/managed-by": "capn"}},
		Data:       map[string][]byte{"k": []byte(data)},
	}
}

// TestCachedReadsSeeOwnWrites: a write is visible to the next read before
// the informer delivers it, and gives way once the informer has that
// version or a newer one. Without it, a sync right after creating the CA
// Secret would find none in the cache and mint another.
func TestCachedReadsSeeOwnWrites(t *testing.T) {
	kube := kubefake.NewClientset()
	// Never started: the cache only changes when the test says so.
	f := kubeinformers.NewSharedInformerFactory(kube, 0)
	mi, caches, err := NewCachedManagement(kube, f)
	require.NoError(t, err)
	m := mi.(*cachedManagement)
	secrets := f.Core().V1().Secrets().Informer().GetIndexer()
	require.NotEmpty(t, caches.All)

	m.remember(secret("ns", "ca", "10", "written"))
	got, err := m.Get(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ca"}})
	require.NoError(t, err)
	assert.Equal(t, "written", string(got.(*corev1.Secret).Data["k"]))
	list, err := m.ListSecrets(context.Background(), "ns")
	require.NoError(t, err)
	require.Len(t, list, 1)

	// The informer delivers an older version: the write still wins.
	require.NoError(t, secrets.Add(secret("ns", "ca", "9", "stale")))
	got, err = m.Get(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ca"}})
	require.NoError(t, err)
	assert.Equal(t, "written", string(got.(*corev1.Secret).Data["k"]))
	list, err = m.ListSecrets(context.Background(), "ns")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "written", string(list[0].Data["k"]))

	// Then a newer one (someone else's edit): the cache wins from now on.
	require.NoError(t, secrets.Update(secret("ns", "ca", "11", "edited")))
	got, err = m.Get(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ca"}})
	require.NoError(t, err)
	assert.Equal(t, "edited", string(got.(*corev1.Secret).Data["k"]))
	assert.Empty(t, m.written, "a write the cache caught up with is kept")

	// What a caller does to what it read never reaches the cache.
	got.(*corev1.Secret).Data["k"] = []byte("mutated")
	again, err := m.Get(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ca"}})
	require.NoError(t, err)
	assert.Equal(t, "edited", string(again.(*corev1.Secret).Data["k"]))

	_, err = m.Get(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "absent"}})
	assert.True(t, apierrors.IsNotFound(err), "want NotFound, got %v", err)
	assert.Empty(t, kube.Actions(), "cached reads sent requests")
}

// TestUnlabelledNamespaceIsSeen: a namespace capn did not label is not in
// the cache, but a cache miss must not read as "free to create": the live
// read finds it, so ResolveNamespace can refuse it.
func TestUnlabelledNamespaceIsSeen(t *testing.T) {
	nc := testCluster()
	squatter := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managementNamespace(nc), Labels: map[string]string{"team": "x"}}}
	kube := kubefake.NewClientset(squatter)
	m := startCached(t, kube)
	got, err := m.Get(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: squatter.Name}})
	require.NoError(t, err)
	assert.Equal(t, "x", got.GetLabels()["team"])

	// And other kinds miss without a request.
	kube.ClearActions()
	pods, err := m.ListPods(context.Background(), squatter.Name, labels.Everything())
	require.NoError(t, err)
	assert.Empty(t, pods)
	assert.Empty(t, kube.Actions())
}

// The caches keep only capn's own managed-fields entry, and what capn
// owns (drift detection's input) is the same with or without the others.
func TestSlimOwnedKeepsWhatDriftReads(t *testing.T) {
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: v1alpha1.ComponentControllerManager, ManagedFields: []metav1.ManagedFieldsEntry{
			entry("kube-controller-manager", `{"f:status":{"f:replicas":{}}}`),
			entry(FieldManager, `{"f:spec":{"f:replicas":{}}}`),
			entry("kubectl-edit", `{"f:metadata":{"f:labels":{"f:x":{}}}}`),
		}, Labels: map[string]string{"x": "y"}},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{Replicas: 2},
	}
	before, err := ownedFields(d)
	require.NoError(t, err)
	out, err := slimOwned(d.DeepCopy())
	require.NoError(t, err)
	slim := out.(*appsv1.Deployment)
	require.Len(t, slim.ManagedFields, 1)
	assert.Equal(t, FieldManager, slim.ManagedFields[0].Manager)
	after, err := ownedFields(slim)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	assert.Equal(t, d.Status, slim.Status, "status is read, not dropped")
}

// A cached pod keeps what capn reads (labels, annotations, UID, deletion,
// status) and drops its spec and managed fields.
func TestSlimPodKeepsWhatCapnReads(t *testing.T) {
	now := metav1.Now()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-0", UID: "u", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			DeletionTimestamp: &now, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Args: []string{"--name=etcd-0"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", Ready: true}}},
	}
	out, err := slimPod(p.DeepCopy())
	require.NoError(t, err)
	slim := out.(*corev1.Pod)
	assert.Equal(t, p.Status, slim.Status)
	assert.Equal(t, p.Labels, slim.Labels)
	assert.Equal(t, p.Annotations, slim.Annotations)
	assert.Equal(t, p.UID, slim.UID)
	assert.NotNil(t, slim.DeletionTimestamp)
	assert.Empty(t, slim.Spec.Containers)
	assert.Nil(t, slim.ManagedFields)
}
