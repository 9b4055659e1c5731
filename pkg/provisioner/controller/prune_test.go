package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

func TestScaleToOnePrunesPDB(t *testing.T) {
	f := newFixture(t, testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.ControllerManager.Replicas = ptr.To[int32](2) }))
	f.sync()
	ctx, ns := context.Background(), managementNamespace(f.nc)
	pdbs := f.kube.PolicyV1().PodDisruptionBudgets(ns)
	if _, err := pdbs.Get(ctx, provisioner.ControllerManagerName, metav1.GetOptions{}); err != nil {
		t.Fatalf("no PDB with 2 kcm replicas: %v", err)
	}
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.ControllerManager.Replicas = ptr.To[int32](1) })
	f.events()
	f.sync()
	if _, err := pdbs.Get(ctx, provisioner.ControllerManagerName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("PDB kept after scaling kcm to 1: %v", err)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "Pruned") {
		t.Errorf("no Pruned event in:\n%s", ev)
	}
	// The quota still fits the two replicas the live Deployment had; it
	// shrinks on the next sync, and after that nothing is written.
	f.mgmt.reset()
	f.sync()
	if want := []string{"apply ResourceQuota/" + builders.ResourceQuotaName}; !slices.Equal(f.mgmt.writes, want) {
		t.Errorf("the resync after pruning wrote %v, want %v", f.mgmt.writes, want)
	}
	f.mgmt.reset()
	f.sync()
	if len(f.mgmt.writes) != 0 {
		t.Errorf("a resync after pruning wrote %v", f.mgmt.writes)
	}
}
