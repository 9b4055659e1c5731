package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestPauseTouchesNothing(t *testing.T) {
	f := newFixture(t, testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Paused = true }))
	f.sync()
	if f.nc.Status.Phase != v1alpha1.PhasePaused {
		t.Errorf("phase %q, want Paused", f.nc.Status.Phase)
	}
	if !meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionPaused) {
		t.Errorf("no Paused condition: %v", f.nc.Status.Conditions)
	}
	if len(f.mgmt.reads)+len(f.mgmt.writes) != 0 {
		t.Errorf("paused cluster touched the management cluster: %v %v", f.mgmt.reads, f.mgmt.writes)
	}
	f.capn.ClearActions()
	f.sync()
	if n := f.capnWrites(); n != 0 {
		t.Errorf("second paused sync wrote %d times", n)
	}
}

func TestUnpauseResumes(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Paused = true })
	f.sync()
	f.mgmt.reset()
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Paused = false })
	f.sync()
	if meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionPaused) != nil {
		t.Error("Paused condition kept after unpausing")
	}
	if f.nc.Status.Phase == v1alpha1.PhasePaused {
		t.Error("phase still Paused")
	}
	if len(f.mgmt.reads) == 0 {
		t.Error("unpaused cluster not reconciled")
	}
}
