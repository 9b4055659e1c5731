package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func TestCreateHasNoUpgrade(t *testing.T) {
	f := newUpgradeFixture(t)
	if f.nc.Status.Upgrade != nil {
		t.Errorf("a new cluster has status.upgrade %+v", f.nc.Status.Upgrade)
	}
	if c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionProgressing); c != nil {
		t.Errorf("a new cluster has condition %+v", c)
	}
	if v := f.versions(); !slices.Equal(v, []string{oldVersion, oldVersion, oldVersion}) {
		t.Errorf("versions %v, want all %s", v, oldVersion)
	}
}

// TestUpgradeOrder drives an upgrade to its end: one component at a time,
// each starting only once the one before is fully rolled out.
func TestUpgradeOrder(t *testing.T) {
	f := newUpgradeFixture(t)
	etcdImage := f.nc.Status.Etcd.Image
	f.setVersion(newVersion)
	f.mgmt.reset()
	f.events()

	type stage struct {
		rolling  string   // the component this stage rolls
		versions []string // apiserver, controller-manager, scheduler afterwards
		reason   string   // Progressing reason
	}
	stages := []stage{
		{provisioner.APIServerName, []string{newVersion, oldVersion, oldVersion}, "UpgradingKubeAPIServer"},
		{provisioner.ControllerManagerName, []string{newVersion, newVersion, oldVersion}, "UpgradingKubeControllerManager"},
		{provisioner.SchedulerName, []string{newVersion, newVersion, newVersion}, "UpgradingKubeScheduler"},
	}
	for i, s := range stages {
		f.step()
		f.writesOnly(s.rolling)
		if v := f.versions(); !slices.Equal(v, s.versions) {
			t.Fatalf("stage %d: versions %v, want %v", i, v, s.versions)
		}
		st := f.nc.Status
		if st.Phase != v1alpha1.PhaseUpgrading || st.Upgrade == nil || st.Upgrade.Component != s.rolling {
			t.Fatalf("stage %d: phase %q upgrade %+v, want Upgrading %s", i, st.Phase, st.Upgrade, s.rolling)
		}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Status != metav1.ConditionTrue || c.Reason != s.reason {
			t.Errorf("stage %d: Progressing %+v, want True %s", i, c, s.reason)
		}
		if !hasEvent(f.events(), "UpgradeStepStarted", s.rolling+": rolling out "+newVersion) {
			t.Errorf("stage %d: no UpgradeStepStarted event for %s", i, s.rolling)
		}

		// Its new pods are not ready yet: nothing else moves, however often
		// the controller looks.
		f.rollout(s.rolling, false)
		for range 3 {
			f.mgmt.reset()
			if after := f.step(); after == 0 {
				t.Errorf("stage %d: an upgrading cluster is not requeued", i)
			}
			if len(f.mgmt.writes) != 0 {
				t.Fatalf("stage %d: wrote %v while %s rolls out", i, f.mgmt.writes, s.rolling)
			}
		}
		if f.nc.Status.Upgrade.Component != s.rolling {
			t.Fatalf("stage %d: component %q while %s rolls out", i, f.nc.Status.Upgrade.Component, s.rolling)
		}
		f.rollout(s.rolling, true)
		f.mgmt.reset()
	}

	f.step() // the scheduler is done: the upgrade is
	if len(f.mgmt.writes) != 0 {
		t.Errorf("finishing wrote %v", f.mgmt.writes)
	}
	st := f.nc.Status
	u := st.Upgrade
	if u.From != oldVersion || u.To != newVersion || u.Component != "" || u.StartedAt == nil || u.FinishedAt == nil {
		t.Errorf("finished upgrade status %+v", u)
	}
	want := []string{"kube-apiserver@" + newVersion + "+", "kube-controller-manager@" + newVersion + "+", "kube-scheduler@" + newVersion + "+"}
	if got := stepsOf(u); !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	for i := 1; i < len(u.Steps); i++ {
		if u.Steps[i].StartedAt.Before(u.Steps[i-1].FinishedAt) {
			t.Errorf("step %d started at %v, before step %d finished at %v", i, u.Steps[i].StartedAt, i-1, u.Steps[i-1].FinishedAt)
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "UpgradeComplete" {
		t.Errorf("Progressing %+v, want False UpgradeComplete", c)
	}
	if st.Phase != v1alpha1.PhaseReady {
		t.Errorf("phase %q after the upgrade, want Ready", st.Phase)
	}
	if ev := f.events(); !hasEvent(ev, "UpgradeStepDone", "kube-scheduler") || !hasEvent(ev, "UpgradeComplete", newVersion) {
		t.Errorf("events %v, want the scheduler's step and the upgrade done", ev)
	}
	if f.nc.Status.Etcd.Image != etcdImage {
		t.Errorf("etcd image %q, was %q: an upgrade must not touch etcd", f.nc.Status.Etcd.Image, etcdImage)
	}
	if cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); cond != nil {
		t.Errorf("a smooth upgrade set %+v", cond)
	}
}

// TestResyncWritesNothingAfterUpgrade is TestResyncWritesNothing for a
// cluster whose status carries a finished upgrade.
func TestResyncWritesNothingAfterUpgrade(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	for _, name := range []string{provisioner.APIServerName, provisioner.ControllerManagerName, provisioner.SchedulerName} {
		f.step()
		f.rollout(name, true)
	}
	f.step()
	if u := f.nc.Status.Upgrade; u == nil || u.FinishedAt == nil || f.nc.Status.Phase != v1alpha1.PhaseReady {
		t.Fatalf("setup: upgrade %+v, phase %q", u, f.nc.Status.Phase)
	}
	f.mgmt.reset()
	f.capn.ClearActions()
	f.events()
	if after := f.step(); after != 0 {
		t.Errorf("an upgraded Ready cluster is requeued after %s", after)
	}
	if len(f.mgmt.writes) != 0 || f.capnWrites() != 0 {
		t.Errorf("resync after an upgrade wrote: mgmt %v, capn %v", f.mgmt.writes, f.capn.Actions())
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("resync after an upgrade recorded events: %v", ev)
	}
}

// TestUpgradeWaitsForOldPodsToGo: an apiserver whose new replicas are all
// Ready while an old pod still shuts down is not done; the
// controller-manager moves only once that pod is gone (the Deployment's
// terminatingReplicas is 0).
func TestUpgradeWaitsForOldPodsToGo(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	f.step()
	f.rollout(provisioner.APIServerName, true)
	d := f.deployment(provisioner.APIServerName)
	d.Status.TerminatingReplicas = ptr.To[int32](1)
	_, err := f.kube.AppsV1().Deployments(d.Namespace).UpdateStatus(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)

	f.step()
	assert.Equal(t, []string{newVersion, oldVersion, oldVersion}, f.versions(), "an old kube-apiserver pod still terminates")
	assert.Equal(t, provisioner.APIServerName, f.nc.Status.Upgrade.Component)

	f.rollout(provisioner.APIServerName, true) // the old pod is gone
	f.step()
	assert.Equal(t, []string{newVersion, newVersion, oldVersion}, f.versions())
	assert.Equal(t, provisioner.ControllerManagerName, f.nc.Status.Upgrade.Component)
}
