package clusterapi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
	capnfake "capn.dev/capn/pkg/generated/clientset/versioned/fake"
	capnlisters "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/pki"
)

func testNCP() *controlplanev1alpha1.NestedControlPlane {
	return &controlplanev1alpha1.NestedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "team-a", UID: "ncp-uid", Generation: 3},
		Spec: controlplanev1alpha1.NestedControlPlaneSpec{Version: "1.37.2", Replicas: ptr.To[int32](2),
			NestedCluster: capnv1alpha1.NestedClusterSpec{ControllerManager: capnv1alpha1.ComponentSpec{Replicas: ptr.To[int32](3)}}},
	}
}

func TestNewNestedCluster(t *testing.T) {
	nc := newNestedCluster(testNCP(), "demo")
	assert.Equal(t, "cp", nc.Name)
	assert.Equal(t, "team-a", nc.Namespace, "a NestedControlPlane creates its NestedCluster in its own namespace only")
	assert.Equal(t, "v1.37.2", nc.Spec.Version, "the contract's missing v is added")
	assert.Equal(t, int32(2), *nc.Spec.APIServer.Replicas)
	assert.Equal(t, int32(3), *nc.Spec.ControllerManager.Replicas, "per-component replicas stay available")
	assert.Equal(t, "demo", nc.Labels[ClusterNameLabel])
	ref := metav1.GetControllerOf(nc)
	require.NotNil(t, ref)
	assert.EqualValues(t, "ncp-uid", ref.UID)
	assert.Equal(t, "NestedControlPlane", ref.Kind)
}

// live is what the registry stores for newNestedCluster's object: defaulted,
// with the create-time choices (data-plane mode, provider sleep default).
func live(ncp *controlplanev1alpha1.NestedControlPlane) *capnv1alpha1.NestedCluster {
	nc := newNestedCluster(ncp, "demo")
	nc.UID = "nc-uid"
	nc.Spec.DataPlane.Mode = capnv1alpha1.DataPlaneShared
	nc.Spec.Sleep.AfterInactivity = &metav1.Duration{Duration: time.Hour}
	capnv1alpha1.SetObjectDefaults_NestedCluster(nc)
	return nc
}

func TestSpecUpdate(t *testing.T) {
	ncp := testNCP()
	nc := live(ncp)

	_, changed := specUpdate(ncp, nc)
	assert.False(t, changed, "an unchanged NestedControlPlane writes nothing, defaults and create-time choices included")

	ncp.Spec.Version = "v1.38.0"
	ncp.Spec.Replicas = ptr.To[int32](5)
	_, changed = specUpdate(ncp, nc)
	assert.False(t, changed, "version and replicas go through /upgrade and /scale, not the spec")

	ncp.Spec.NestedCluster.Scheduler.Replicas = ptr.To[int32](2)
	spec, changed := specUpdate(ncp, nc)
	require.True(t, changed)
	assert.Equal(t, int32(2), *spec.Scheduler.Replicas)
	assert.Equal(t, "v1.37.2", spec.Version)
	assert.Equal(t, int32(2), *spec.APIServer.Replicas)
	assert.Equal(t, time.Hour, spec.Sleep.AfterInactivity.Duration, "the provider's default sleep stays")

	ncp.Spec.NestedCluster.Sleep.Asleep = true
	spec, _ = specUpdate(ncp, nc)
	assert.True(t, spec.Sleep.Asleep)
	assert.Nil(t, spec.Sleep.AfterInactivity, "a sleep the user sets replaces the default")
}

func readyNC(ncp *controlplanev1alpha1.NestedControlPlane, apiVersion, kcmVersion string) *capnv1alpha1.NestedCluster {
	nc := live(ncp)
	nc.Status = capnv1alpha1.NestedClusterStatus{
		Selector:          "app=kube-apiserver",
		Endpoint:          "https://10.96.0.20:6443",
		APIServer:         capnv1alpha1.ComponentStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, Version: apiVersion},
		ControllerManager: capnv1alpha1.ComponentStatus{Replicas: 1, ReadyReplicas: 1, Version: kcmVersion},
		Scheduler:         capnv1alpha1.ComponentStatus{Replicas: 1, ReadyReplicas: 1, Version: kcmVersion},
		Conditions: []metav1.Condition{
			{Type: capnv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: capnv1alpha1.ReasonAllComponentsAvailable},
			{Type: capnv1alpha1.ConditionAPIServerAvailable, Status: metav1.ConditionTrue, Reason: capnv1alpha1.ReasonReplicasReady},
		},
	}
	return nc
}

func TestDeriveStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC))
	ncp := testNCP()

	st := deriveStatus(ncp, observation{waiting: clusterWaitMessage(ncp)}, now)
	assert.Nil(t, st.Initialization.ControlPlaneInitialized)
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(st.Conditions, ConditionAvailable).Status)
	assert.Equal(t, ReasonWaitingForCluster, meta.FindStatusCondition(st.Conditions, ConditionReconciled).Reason)

	// Mid-upgrade: the apiserver is on the new version, the others not yet.
	st = deriveStatus(ncp, observation{nc: readyNC(ncp, "v1.37.2", "v1.36.3")}, now)
	assert.True(t, *st.Initialization.ControlPlaneInitialized)
	assert.Equal(t, "v1.36.3", st.Version, "Cluster API must not see the upgrade done before every component is")
	assert.Equal(t, []controlplanev1alpha1.StatusVersion{{Version: "v1.36.3"}, {Version: "v1.37.2", Replicas: 2}}, st.Versions)
	assert.Equal(t, int32(2), *st.ReadyReplicas)
	assert.Equal(t, int32(1), *st.UpToDateReplicas)
	assert.Equal(t, "app=kube-apiserver", st.Selector)
	assert.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(st.Conditions, ConditionAvailable).Status)
	assert.Equal(t, int64(3), st.ObservedGeneration)

	// Initialization never goes back, and a failure is on Reconciled.
	ncp.Status = st
	down := readyNC(ncp, "v1.37.2", "v1.37.2")
	down.Status.APIServer.ReadyReplicas = 0
	down.Status.Conditions[0] = metav1.Condition{Type: capnv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: capnv1alpha1.ReasonComponentsNotReady, Message: "kube-apiserver 0/2 ready"}
	later := metav1.NewTime(now.Add(time.Minute))
	st = deriveStatus(ncp, observation{nc: down, failed: &failure{reason: ReasonUpgradeRefused, message: "skew"}}, later)
	assert.True(t, *st.Initialization.ControlPlaneInitialized)
	avail := meta.FindStatusCondition(st.Conditions, ConditionAvailable)
	assert.Equal(t, metav1.ConditionFalse, avail.Status)
	assert.Contains(t, avail.Message, "kube-apiserver 0/2 ready")
	assert.Equal(t, later, avail.LastTransitionTime)
	rec := meta.FindStatusCondition(st.Conditions, ConditionReconciled)
	assert.Equal(t, ReasonUpgradeRefused, rec.Reason)
	assert.Equal(t, "v1.37.2", st.Version)

	st = deriveStatus(ncp, observation{nc: down, paused: true}, later)
	assert.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(st.Conditions, ConditionPaused).Status)
}

func TestRenewAt(t *testing.T) {
	cas, err := pki.GenerateCAs(time.Now(), "team-a/cp")
	require.NoError(t, err)
	notBefore := time.Now().Truncate(time.Second)
	data, err := pki.TenantKubeconfig("https://10.96.0.20:6443", cas.Cluster, KubeconfigUser, []string{"g"}, KubeconfigTTL, notBefore)
	require.NoError(t, err)
	at, err := renewAt(data, "https://10.96.0.20:6443")
	require.NoError(t, err)
	// The issuer back-dates NotBefore a little for clock skew; two thirds of
	// the life is still well before expiry.
	assert.WithinDuration(t, notBefore.Add(40*time.Minute), at, 6*time.Minute)
	assert.True(t, at.Before(notBefore.Add(KubeconfigTTL)))

	_, err = renewAt([]byte("not a kubeconfig"), "https://10.96.0.20:6443")
	assert.Error(t, err)
	// A kubeconfig someone else wrote into the Secret is replaced at once.
	_, err = renewAt(data, "https://10.96.0.21:6443")
	assert.ErrorContains(t, err, "points at")
	other, err := pki.TenantKubeconfig("https://10.96.0.20:6443", cas.Cluster, "mallory", []string{"g"}, 100*KubeconfigTTL, notBefore)
	require.NoError(t, err)
	_, err = renewAt(other, "https://10.96.0.20:6443")
	assert.ErrorContains(t, err, "mallory")
}

func TestEndpoint(t *testing.T) {
	ep, err := endpoint("https://10.96.0.20:6443")
	require.NoError(t, err)
	assert.Equal(t, controlplanev1alpha1.APIEndpoint{Host: "10.96.0.20", Port: 6443}, ep)
	_, err = endpoint("https://10.96.0.20")
	assert.Error(t, err)
}

func TestKeys(t *testing.T) {
	ncp := testNCP()
	nc := newNestedCluster(ncp, "demo")
	assert.Equal(t, []string{"team-a/cp"}, ownerKeys(nc))
	nc.OwnerReferences[0].APIVersion = "example.com/v1"
	assert.Empty(t, ownerKeys(nc), "only capn's own kind maps back")

	cluster := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "demo", "namespace": "team-a"},
		"spec": map[string]any{"controlPlaneRef": map[string]any{
			"apiGroup": controlplanev1alpha1.GroupName, "kind": "NestedControlPlane", "name": "cp"}}}}
	assert.Equal(t, []string{"team-a/cp"}, controlPlaneKeys(cluster))
	_ = unstructured.SetNestedField(cluster.Object, "KubeadmControlPlane", "spec", "controlPlaneRef", "kind")
	assert.Empty(t, controlPlaneKeys(cluster))
}

// testController is a Controller over fake clients and hand-filled caches,
// for one lifecycle function at a time.
func testController(t *testing.T, objs ...runtime.Object) (*Controller, *capnfake.Clientset, *kubefake.Clientset) {
	t.Helper()
	ncIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	secretIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	capn, kube := capnfake.NewSimpleClientset(), kubefake.NewSimpleClientset()
	for _, o := range objs {
		switch o := o.(type) {
		case *capnv1alpha1.NestedCluster:
			require.NoError(t, ncIndex.Add(o))
		case *corev1.Secret:
			require.NoError(t, secretIndex.Add(o))
		}
	}
	return &Controller{capn: capn, kube: kube, nestedClusters: capnlisters.NewNestedClusterLister(ncIndex),
		secrets: corelisters.NewSecretLister(secretIndex), now: time.Now}, capn, kube
}

func TestEnsureNestedClusterNeverAdopts(t *testing.T) {
	ncp := testNCP()
	foreign := live(ncp)
	foreign.OwnerReferences = nil
	c, capn, _ := testController(t, foreign)
	_, f := c.ensureNestedCluster(context.Background(), ncp, "demo")
	require.NotNil(t, f)
	assert.Equal(t, ReasonNameInUse, f.reason)
	assert.True(t, f.terminal)
	assert.Empty(t, capn.Actions(), "a NestedCluster another owner holds is not written")

	// Same name, another NestedControlPlane's UID: still not ours.
	foreign.OwnerReferences = []metav1.OwnerReference{controllerRef(testNCP())}
	foreign.OwnerReferences[0].UID = "other-uid"
	c, capn, _ = testController(t, foreign)
	_, f = c.ensureNestedCluster(context.Background(), ncp, "demo")
	require.NotNil(t, f)
	assert.Equal(t, ReasonNameInUse, f.reason)
	assert.Empty(t, capn.Actions())
}

func TestEnsureNestedClusterCreatesThenUpdatesOnlyOnChange(t *testing.T) {
	ncp := testNCP()
	c, capn, _ := testController(t)
	nc, f := c.ensureNestedCluster(context.Background(), ncp, "demo")
	require.Nil(t, f)
	assert.Equal(t, "team-a", nc.Namespace)
	require.Len(t, capn.Actions(), 1)
	assert.Equal(t, "create", capn.Actions()[0].GetVerb())

	c, capn, _ = testController(t, live(ncp))
	_, f = c.ensureNestedCluster(context.Background(), ncp, "demo")
	require.Nil(t, f)
	assert.Empty(t, capn.Actions(), "an unchanged control plane writes nothing")
}

func TestEnsureKubeconfigLeavesForeignSecret(t *testing.T) {
	ncp := testNCP()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-kubeconfig", Namespace: "team-a",
		Labels: map[string]string{ClusterNameLabel: "demo"}}}
	c, _, kube := testController(t, foreign)
	_, f := c.ensureKubeconfig(context.Background(), ncp, "demo", readyNC(ncp, "v1.37.2", "v1.37.2"))
	require.NotNil(t, f)
	assert.Equal(t, ReasonSecretInUse, f.reason)
	assert.Empty(t, kube.Actions())
}

// TestOwnerClusterNeedsBothDirections: capn acts for a Cluster only when it
// owns the control plane by UID and its controlPlaneRef names it, so a
// Cluster cannot claim a control plane another Cluster owns.
func TestOwnerClusterNeedsBothDirections(t *testing.T) {
	cluster := func(name, uid, cp string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"name": name, "namespace": "team-a", "uid": uid},
			"spec": map[string]any{"controlPlaneRef": map[string]any{
				"apiGroup": controlplanev1alpha1.GroupName, "kind": "NestedControlPlane", "name": cp}}}}
		return u
	}
	ncp := testNCP()
	ncp.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "demo", UID: "cluster-uid"}}
	for name, tc := range map[string]struct {
		cluster *unstructured.Unstructured
		want    bool
	}{
		"owner naming it":                {cluster("demo", "cluster-uid", "cp"), true},
		"owner naming another":           {cluster("demo", "cluster-uid", "other"), false},
		"same name, another UID":         {cluster("demo", "impostor-uid", "cp"), false},
		"a Cluster that does not own it": {cluster("thief", "thief-uid", "cp"), false},
	} {
		t.Run(name, func(t *testing.T) {
			// Never run: its indexer is filled by hand.
			inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
			require.NoError(t, inf.GetIndexer().Add(tc.cluster))
			c := &Controller{clusterInformer: inf}
			assert.Equal(t, tc.want, c.ownerCluster(ncp) != nil)
		})
	}
}
