package controller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// TestUpgradeStalledStepRecovers: a stalled component that does roll out
// in the end (the image became pullable) is a finished step; the upgrade
// goes on and Degraded turns False.
func TestUpgradeStalledStepRecovers(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	f.step()
	f.rollout(provisioner.APIServerName, false)
	f.clock = f.clock.Add(DefaultUpgradeStepTimeout)
	f.step()
	if !meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionDegraded) {
		t.Fatal("setup: not Degraded")
	}
	f.rollout(provisioner.APIServerName, true)
	f.mgmt.reset()
	f.step()
	f.writesOnly(provisioner.ControllerManagerName)
	st := f.nc.Status
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v, want False once the step finished", c)
	}
	if st.Phase != v1alpha1.PhaseUpgrading || st.Upgrade.Component != provisioner.ControllerManagerName {
		t.Errorf("phase %q component %q, want Upgrading kube-controller-manager", st.Phase, st.Upgrade.Component)
	}
}

// TestUpgradeLostStatusWrite: the sync that started the apiserver applied
// it but could not record it. The next sync rebuilds status.upgrade from
// the live Deployments: from is still the old version, the apiserver's step
// is open, and nothing else moves early.
func TestUpgradeLostStatusWrite(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	fail := true
	f.capn.PrependReactor("update", "nestedclusters", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && fail {
			fail = false
			return true, nil, errors.New("conflict")
		}
		return false, nil, nil
	})
	if _, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name); err == nil {
		t.Fatal("sync succeeded despite the failed status write")
	}
	if f.version(provisioner.APIServerName) != newVersion {
		t.Fatal("setup: the apiserver was not applied")
	}
	f.rollout(provisioner.APIServerName, false)
	f.mgmt.reset()
	f.step()
	u := f.nc.Status.Upgrade
	if u == nil || u.From != oldVersion || u.To != newVersion || u.Component != provisioner.APIServerName {
		t.Fatalf("upgrade %+v, want %s to %s on kube-apiserver", u, oldVersion, newVersion)
	}
	if got := stepsOf(u); !slices.Equal(got, []string{"kube-apiserver@" + newVersion}) {
		t.Errorf("steps %v", got)
	}
	if len(f.mgmt.writes) != 0 {
		t.Errorf("wrote %v while the apiserver rolls out", f.mgmt.writes)
	}
}

// TestUpgradeForwardAgainDuringRollback: validation lets spec.version go
// back to status.upgrade.from during a rollback too, which is forward
// again, in forward order.
func TestUpgradeForwardAgainDuringRollback(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	f.step()
	f.rollout(provisioner.APIServerName, true)
	f.step() // controller-manager at newVersion
	f.setVersion(oldVersion)
	f.step() // controller-manager back to oldVersion
	if v := f.versions(); !slices.Equal(v, []string{newVersion, oldVersion, oldVersion}) {
		t.Fatalf("setup: versions %v", v)
	}
	f.events()
	f.setVersion(f.nc.Status.Upgrade.From)
	f.mgmt.reset()
	f.step()
	f.writesOnly(provisioner.ControllerManagerName)
	u := f.nc.Status.Upgrade
	if u.From != oldVersion || u.To != newVersion || u.Component != provisioner.ControllerManagerName {
		t.Errorf("upgrade %+v, want %s to %s on kube-controller-manager", u, oldVersion, newVersion)
	}
	if !hasEvent(f.events(), "UpgradeResumed") {
		t.Error("no UpgradeResumed event")
	}
}

// TestUpgradeRecreatesMissingDeploymentAtOlderVersion: a controller-manager
// Deployment deleted while the apiserver rolls comes back at the old
// version, not ahead of the apiserver.
func TestUpgradeRecreatesMissingDeploymentAtOlderVersion(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	f.step()
	f.rollout(provisioner.APIServerName, false)
	if err := f.kube.AppsV1().Deployments(managementNamespace(f.nc)).Delete(context.Background(), provisioner.ControllerManagerName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step()
	if v := f.versions(); !slices.Equal(v, []string{newVersion, oldVersion, oldVersion}) {
		t.Errorf("versions %v: the controller-manager must come back at %s", v, oldVersion)
	}
}
