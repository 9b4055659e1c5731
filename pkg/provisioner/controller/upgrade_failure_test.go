package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// TestUpgradeRollback rolls back after kube-apiserver is done and
// kube-controller-manager has started: the scheduler (never moved) is left
// alone, then kube-controller-manager and kube-apiserver go back, in that
// order.
func TestUpgradeRollback(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	f.step() // apiserver starts
	f.rollout(provisioner.APIServerName, true)
	f.step() // controller-manager starts
	f.rollout(provisioner.ControllerManagerName, false)
	if v := f.versions(); !slices.Equal(v, []string{newVersion, newVersion, oldVersion}) {
		t.Fatalf("setup: versions %v", v)
	}
	f.events()

	f.setVersion(oldVersion) // back to status.upgrade.from
	f.mgmt.reset()
	f.step()
	f.writesOnly(provisioner.ControllerManagerName)
	if v := f.versions(); !slices.Equal(v, []string{newVersion, oldVersion, oldVersion}) {
		t.Fatalf("rollback step 1: versions %v, want the controller-manager back first", v)
	}
	u := f.nc.Status.Upgrade
	if u.From != newVersion || u.To != oldVersion || u.Component != provisioner.ControllerManagerName || u.FinishedAt != nil {
		t.Errorf("rolling back: upgrade %+v, want from %s to %s on kube-controller-manager", u, newVersion, oldVersion)
	}
	if c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Reason != "RollingBackKubeControllerManager" {
		t.Errorf("Progressing %+v, want RollingBackKubeControllerManager", c)
	}
	if f.nc.Status.Phase != v1alpha1.PhaseUpgrading {
		t.Errorf("phase %q, want Upgrading", f.nc.Status.Phase)
	}
	if !hasEvent(f.events(), "RollbackStarted", "rolling back from "+newVersion+" to "+oldVersion) {
		t.Error("no RollbackStarted event")
	}

	// The apiserver waits for the controller-manager to be back.
	f.rollout(provisioner.ControllerManagerName, false)
	f.mgmt.reset()
	f.step()
	if len(f.mgmt.writes) != 0 || f.version(provisioner.APIServerName) != newVersion {
		t.Fatalf("apiserver moved before the controller-manager rolled back: %v", f.mgmt.writes)
	}
	f.rollout(provisioner.ControllerManagerName, true)
	f.mgmt.reset()
	f.step()
	f.writesOnly(provisioner.APIServerName)
	if v := f.versions(); !slices.Equal(v, []string{oldVersion, oldVersion, oldVersion}) {
		t.Fatalf("rollback step 2: versions %v", v)
	}
	f.rollout(provisioner.APIServerName, true)
	f.step()

	st := f.nc.Status
	want := []string{"kube-apiserver@" + newVersion + "+", "kube-controller-manager@" + newVersion,
		"kube-controller-manager@" + oldVersion + "+", "kube-apiserver@" + oldVersion + "+"}
	if got := stepsOf(st.Upgrade); !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if st.Upgrade.FinishedAt == nil || st.Upgrade.To != oldVersion || st.Phase != v1alpha1.PhaseReady {
		t.Errorf("after the rollback: upgrade %+v, phase %q", st.Upgrade, st.Phase)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "RollbackComplete" {
		t.Errorf("Progressing %+v, want False RollbackComplete", c)
	}
}

// stuckPod is a new kube-apiserver pod whose image cannot be pulled.
func stuckPod(f *upgradeFixture) *corev1.Pod {
	d := f.deployment(provisioner.APIServerName)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: "kube-apiserver-7d9f-x2",
			Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [kube-apiserver]"},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "kube-apiserver", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}},
		},
	}
}

// TestUpgradeStepDeadline: a component whose new pods are not Ready in
// time halts the upgrade as Degraded, naming the pod and why; the next
// component never starts; a rollback clears it.
func TestUpgradeStepDeadline(t *testing.T) {
	f := newUpgradeFixture(t)
	f.c.cfg.UpgradeStepTimeout = 5 * time.Minute
	f.setVersion(newVersion)
	f.step()
	f.rollout(provisioner.APIServerName, false)
	pod := stuckPod(f)
	if _, err := f.kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 4 { // a minute a step: still within the deadline
		f.step()
	}
	if c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionDegraded); c != nil {
		t.Fatalf("Degraded before the deadline: %+v", c)
	}
	f.events()
	f.step() // five minutes
	st := f.nc.Status
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	wantMsg := "kube-apiserver: pod kube-apiserver-7d9f-x2: Ready=False (ContainersNotReady: containers with unready status: [kube-apiserver]); " +
		"container kube-apiserver: ImagePullBackOff (Back-off pulling image)"
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "KubeAPIServerPodsNotReady" || !strings.HasPrefix(c.Message, wantMsg) {
		t.Fatalf("Degraded %+v, want True KubeAPIServerPodsNotReady %q", c, wantMsg)
	}
	if st.Phase != v1alpha1.PhaseDegraded || st.Upgrade.Component != provisioner.APIServerName {
		t.Errorf("phase %q component %q, want Degraded on kube-apiserver", st.Phase, st.Upgrade.Component)
	}
	if ev := f.events(); !hasEvent(ev, "Warning UpgradeStalled", "ImagePullBackOff") {
		t.Errorf("events %v, want a Warning UpgradeStalled", ev)
	}

	// Halted: nothing moves, nothing is written, the warning is not repeated.
	f.mgmt.reset()
	f.capn.ClearActions()
	for range 3 {
		if after := f.step(); after == 0 {
			t.Error("a stalled upgrade is not requeued")
		}
	}
	if len(f.mgmt.writes) != 0 || f.capnWrites() != 0 || len(f.events()) != 0 {
		t.Errorf("halted upgrade wrote: mgmt %v, capn %v", f.mgmt.writes, f.capn.Actions())
	}
	if v := f.versions(); !slices.Equal(v, []string{newVersion, oldVersion, oldVersion}) {
		t.Errorf("versions %v: the controller-manager must not start", v)
	}

	// Rolling back replaces the stuck step and clears Degraded.
	f.setVersion(oldVersion)
	f.step()
	st = f.nc.Status
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v after the rollback started, want False", c)
	}
	if st.Phase != v1alpha1.PhaseUpgrading || f.version(provisioner.APIServerName) != oldVersion {
		t.Errorf("phase %q apiserver %s, want the apiserver rolling back", st.Phase, f.version(provisioner.APIServerName))
	}
}

// TestUpgradeStepDeadlineWithoutPods names the replica counts when there is
// no new pod to blame, and the default deadline applies.
func TestUpgradeStepDeadlineWithoutPods(t *testing.T) {
	f := newUpgradeFixture(t)
	f.setVersion(newVersion)
	f.step()
	f.rollout(provisioner.APIServerName, false)
	f.clock = f.clock.Add(DefaultUpgradeStepTimeout - 2*time.Minute)
	f.step()
	if c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionDegraded); c != nil {
		t.Fatalf("Degraded before the default deadline: %+v", c)
	}
	f.step()
	c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "kube-apiserver: 0 updated and 1 ready of 1 replicas; not rolled out to "+newVersion+" within 10m0s") {
		t.Errorf("Degraded %+v", c)
	}
}
