package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestFinalizerAddedOnFirstSync(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	if !slices.Contains(f.nc.Finalizers, v1alpha1.ProvisionerFinalizer) {
		t.Fatalf("finalizers %v lack %s", f.nc.Finalizers, v1alpha1.ProvisionerFinalizer)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "FinalizerAdded") {
		t.Errorf("no FinalizerAdded event in:\n%s", ev)
	}
	f.capn.ClearActions()
	f.sync()
	if n := f.capnWrites(); n != 0 {
		t.Errorf("finalizer re-added: %d writes", n)
	}
}

func TestDeletionRemovesNamespaceThenFinalizer(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ns := managementNamespace(f.nc)
	ctx := context.Background()

	f.c.tenants.bootstrapped[f.nc.UID] = &tenantBootstrap{caID: "ca", done: true} // as if its tenant had been bootstrapped
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.DeletionTimestamp = &metav1.Time{Time: testNow} })
	if after := f.sync(); after != namespaceGoneRequeue {
		t.Errorf("while the namespace exists, requeue after %s, want %s", after, namespaceGoneRequeue)
	}
	if _, err := f.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s not deleted: %v", ns, err)
	}
	if !slices.Contains(f.nc.Finalizers, v1alpha1.ProvisionerFinalizer) {
		t.Fatal("finalizer removed before the namespace was confirmed gone")
	}
	if f.nc.Status.Phase != v1alpha1.PhaseDeleting {
		t.Errorf("phase %q while deleting, want %q", f.nc.Status.Phase, v1alpha1.PhaseDeleting)
	}
	// The fake deletes at once; the next pass sees it gone and releases.
	if after := f.sync(); after != 0 {
		t.Errorf("requeue after %s once the namespace is gone", after)
	}
	if slices.Contains(f.nc.Finalizers, v1alpha1.ProvisionerFinalizer) {
		t.Errorf("finalizer not removed: %v", f.nc.Finalizers)
	}
	if _, ok := f.c.tenants.bootstrapped[f.nc.UID]; ok {
		t.Error("the deleted cluster's bootstrap record is kept: the map would grow with every cluster ever created")
	}
}

func TestDeletionWaitsForTerminatingNamespace(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Finalizers = []string{v1alpha1.ProvisionerFinalizer}
		nc.DeletionTimestamp = &metav1.Time{Time: testNow}
	})
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: managementNamespace(nc), DeletionTimestamp: &metav1.Time{Time: testNow},
			Finalizers: []string{"kubernetes"}, Labels: map[string]string{"capn.dev/owner-uid": testUID}},
	}
	f := newFixture(t, nc, ns)
	if after := f.sync(); after != namespaceGoneRequeue {
		t.Errorf("requeue after %s, want %s", after, namespaceGoneRequeue)
	}
	if len(f.mgmt.writes) != 0 {
		t.Errorf("a terminating namespace is deleted again: %v", f.mgmt.writes)
	}
}

func TestDeletionRefusesForeignNamespace(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Finalizers = []string{v1alpha1.ProvisionerFinalizer}
		nc.DeletionTimestamp = &metav1.Time{Time: testNow}
	})
	foreign := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: managementNamespace(nc)}}
	f := newFixture(t, nc, foreign)
	if _, err := f.c.sync(context.Background(), "team-a/demo"); err == nil {
		t.Fatal("deleting an unlabelled namespace: want an error")
	}
	if len(f.mgmt.writes) != 0 {
		t.Errorf("wrote to a namespace capn does not own: %v", f.mgmt.writes)
	}
}

func TestDeletionIgnoresForeignFinalizers(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Finalizers = []string{"example.com/other"}
		nc.DeletionTimestamp = &metav1.Time{Time: testNow}
	})
	f := newFixture(t, nc)
	if after := f.sync(); after != time.Duration(0) || len(f.mgmt.writes)+len(f.mgmt.reads) != 0 {
		t.Errorf("a cluster without capn's finalizer was acted on: after %s, %v %v", after, f.mgmt.reads, f.mgmt.writes)
	}
}
