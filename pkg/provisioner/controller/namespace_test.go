package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func TestNamespaceEnsured(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ns, err := f.kube.CoreV1().Namespaces().Get(context.Background(), managementNamespace(f.nc), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"capn.dev/cluster": "demo", "capn.dev/cluster-namespace": "team-a",
		"app.kubernetes.io/managed-by": "capn", "pod-security.kubernetes.io/enforce": "baseline",
	} {
		if ns.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, ns.Labels[k], v)
		}
	}
	if ns.Annotations[SpecHashAnnotation] == "" {
		t.Error("no spec hash annotation")
	}
}

func TestNamespaceLabelsRestored(t *testing.T) {
	// capn's own namespace with its labels edited is brought back to form.
	f := newFixture(t, testCluster())
	f.sync()
	ctx := context.Background()
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, managementNamespace(f.nc), metav1.GetOptions{})
	require.NoError(t, err)
	delete(ns.Labels, "capn.dev/cluster")
	delete(ns.Annotations, SpecHashAnnotation)
	_, err = f.kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.sync()
	ns, err = f.kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "demo", ns.Labels["capn.dev/cluster"], "owner labels not applied")
}

// A namespace at the cluster's name that does not carry its UID (made by
// hand, or by another owner) is never adopted: nothing is written into it,
// and the sync fails with ErrNotOwned.
func TestNamespaceOfAnotherOwnerRefused(t *testing.T) {
	for name, labels := range map[string]map[string]string{
		"unlabelled": nil,
		"other uid": {provisioner.OwnerUIDLabel: "0000", v1alpha1.ClusterLabel: "demo",
			provisioner.ClusterNamespaceLabel: "team-a", provisioner.ManagedByLabel: provisioner.ManagedByValue},
	} {
		t.Run(name, func(t *testing.T) {
			foreign := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
				ObjectMeta: metav1.ObjectMeta{Name: managementNamespace(testCluster()), Labels: labels}}
			f := newFixture(t, testCluster(), foreign)
			_, err := f.c.sync(context.Background(), "team-a/demo")
			require.ErrorIs(t, err, provisioner.ErrNotOwned)
			assert.Empty(t, f.mgmt.writes, "wrote into a namespace capn does not own")
		})
	}
}

// A cluster made by an older capn keeps its legacy namespace: capn finds it
// by its owner labels, stamps the UID on it, and renders everything into
// it, so nothing the running control plane depends on changes name.
func TestLegacyNamespaceKept(t *testing.T) {
	nc := testCluster()
	legacyName := provisioner.LegacyNamespace(nc)
	legacy := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: legacyName, Labels: map[string]string{v1alpha1.ClusterLabel: "demo",
			provisioner.ClusterNamespaceLabel: "team-a", provisioner.ManagedByLabel: provisioner.ManagedByValue}}}
	f := newFixture(t, nc, legacy)
	f.sync()
	ctx := context.Background()
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, legacyName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, testUID, ns.Labels[provisioner.OwnerUIDLabel], "legacy namespace not claimed by UID")
	_, err = f.kube.CoreV1().Namespaces().Get(ctx, managementNamespace(nc), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a second, UID-named namespace was created: %v", err)
	_, err = f.kube.AppsV1().Deployments(legacyName).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
	require.NoError(t, err, "the control plane is not rendered into the legacy namespace")

	// Deletion finds and removes the legacy namespace too.
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.DeletionTimestamp = &metav1.Time{Time: testNow} })
	f.sync()
	_, err = f.kube.CoreV1().Namespaces().Get(ctx, legacyName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "legacy namespace not deleted: %v", err)
}

// The collision of the security finding: an attacker's cluster whose
// legacy name equals a victim's namespace must not touch it. It gets its
// own UID-named namespace instead.
func TestLegacyNamespaceOfAnotherClusterNotAdopted(t *testing.T) {
	nc := testCluster()
	victim := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: provisioner.LegacyNamespace(nc), Labels: map[string]string{v1alpha1.ClusterLabel: "victim",
			provisioner.ClusterNamespaceLabel: "team-v", provisioner.ManagedByLabel: provisioner.ManagedByValue}}}
	f := newFixture(t, nc, victim)
	f.sync()
	ctx := context.Background()
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, victim.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, victim.Labels, ns.Labels, "the victim's namespace was relabelled")
	_, err = f.kube.CoreV1().Namespaces().Get(ctx, managementNamespace(nc), metav1.GetOptions{})
	require.NoError(t, err, "the attacker's cluster did not get its own namespace")
	secrets, err := f.kube.CoreV1().Secrets(victim.Name).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, secrets.Items, "PKI written into the victim's namespace")
}

func TestNamespaceTerminatingFails(t *testing.T) {
	nc := testCluster()
	f := newFixture(t, nc)
	f.sync()
	ctx := context.Background()
	ns, _ := f.kube.CoreV1().Namespaces().Get(ctx, managementNamespace(nc), metav1.GetOptions{})
	ns.DeletionTimestamp = &metav1.Time{Time: testNow}
	ns.Finalizers = []string{"kubernetes"}
	if _, err := f.kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.sync(ctx, "team-a/demo"); err == nil {
		t.Error("sync into a terminating namespace: want an error")
	}
}
