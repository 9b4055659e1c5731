package plugin

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

const oldV, newV = "v1.36.3", "v1.37.2"

var t0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds; nil for a negative sec.
func at(sec int) *metav1.Time {
	if sec < 0 {
		return nil
	}
	t := metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))
	return &t
}

// step is one status.upgrade.steps entry; finish < 0 means not finished.
func step(component, version string, start, finish int) v1alpha1.UpgradeStep {
	return v1alpha1.UpgradeStep{Component: component, Version: version, StartedAt: at(start), FinishedAt: at(finish)}
}

// rolling is demo (apiserver at 2 replicas) upgrading from -> to, at
// active (""=finished at finish), with steps. A component whose last
// step finished runs that step's version with every replica ready; the
// others run from.
func rolling(from, to, active string, finish int, steps ...v1alpha1.UpgradeStep) *v1alpha1.NestedCluster {
	nc := demo()
	nc.Spec.Version = to
	nc.Spec.APIServer.Replicas = ptr.To[int32](2)
	nc.Status.Phase = v1alpha1.PhaseUpgrading
	nc.Status.Upgrade = &v1alpha1.UpgradeStatus{From: from, To: to, Component: active,
		StartedAt: at(0), FinishedAt: at(finish), Steps: steps}
	for _, name := range upgradeOrder {
		st, desired := component(nc, name)
		st.Version, st.Replicas, st.ReadyReplicas = from, desired, desired
		for _, s := range steps {
			if s.Component == name {
				st.Version = s.Version
				if s.FinishedAt == nil {
					st.ReadyReplicas = desired - 1
				}
			}
		}
		switch name {
		case v1alpha1.ComponentAPIServer:
			nc.Status.APIServer = st
		case v1alpha1.ComponentControllerManager:
			nc.Status.ControllerManager = st
		case v1alpha1.ComponentScheduler:
			nc.Status.Scheduler = st
		}
	}
	return nc
}

func TestUpgradeWaitPrintsEachStep(t *testing.T) {
	cs := newFake(demo())
	var sent string
	upgradeReactor(cs, &sent, nil)
	notYet := demo()
	notYet.Status.Phase = v1alpha1.PhaseReady
	api := step(v1alpha1.ComponentAPIServer, newV, 0, 41)
	kcm := step(v1alpha1.ComponentControllerManager, newV, 41, 60)
	startWatch(t, cs,
		notYet, // the provisioner has not started: nothing to print
		rolling(oldV, newV, v1alpha1.ComponentAPIServer, -1, step(v1alpha1.ComponentAPIServer, newV, 0, -1)),
		rolling(oldV, newV, v1alpha1.ComponentAPIServer, -1, step(v1alpha1.ComponentAPIServer, newV, 0, -1)), // no change: no line
		// The controller-manager's start was never seen on its own: caught up, in order.
		rolling(oldV, newV, v1alpha1.ComponentScheduler, -1, api, kcm, step(v1alpha1.ComponentScheduler, newV, 60, -1)),
		rolling(oldV, newV, "", 123, api, kcm, step(v1alpha1.ComponentScheduler, newV, 60, 123)),
	)
	out, err := run(t, cs, "upgrade", "demo", "--to", newV, "--wait", "--timeout=10s")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := `nestedcluster.capn.dev/demo upgrade to v1.37.2 requested
kube-apiserver: upgrading to v1.37.2 (1/3)
kube-apiserver: v1.37.2, 2/2 ready, took 41s
kube-controller-manager: upgrading to v1.37.2 (2/3)
kube-controller-manager: v1.37.2, 1/1 ready, took 19s
kube-scheduler: upgrading to v1.37.2 (3/3)
kube-scheduler: v1.37.2, 1/1 ready, took 1m3s
upgraded demo from v1.36.3 to v1.37.2 in 2m3s
`
	if out != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestUpgradeWaitDegradedEndsTheWait(t *testing.T) {
	cs := newFake(demo())
	var sent string
	upgradeReactor(cs, &sent, nil)
	msg := `pod kube-apiserver-7c9d8-abcde: container v1alpha1.ComponentAPIServer is waiting: ImagePullBackOff (Back-off pulling image "registry.k8s.io/kube-apiserver:v1.37.2")`
	stalled := rolling(oldV, newV, v1alpha1.ComponentAPIServer, -1, step(v1alpha1.ComponentAPIServer, newV, 0, -1))
	stalled.Status.Phase = v1alpha1.PhaseDegraded
	stalled.Status.Conditions = []metav1.Condition{
		{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "UpgradingKubeAPIServer", Message: "kube-apiserver: rolling out v1.37.2"},
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "KubeAPIServerPodsNotReady", Message: msg},
	}
	startWatch(t, cs, stalled)
	start := time.Now()
	out, err := run(t, cs, "upgrade", "demo", "--to", newV, "--wait", "--timeout=5s")
	if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "KubeAPIServerPodsNotReady") {
		t.Fatalf("err = %v, want the Degraded message %q", err, msg)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("Degraded did not end the wait: it took %s", time.Since(start))
	}
	want := "kube-apiserver: upgrading to v1.37.2 (1/3)\nkube-apiserver: Degraded (KubeAPIServerPodsNotReady): " + msg + "\n"
	if !strings.HasSuffix(out, want) {
		t.Fatalf("output:\n%s\nwant it to end with:\n%s", out, want)
	}
}

func TestUpgradeWaitRollbackDetected(t *testing.T) {
	cs := newFake(demo())
	var sent string
	upgradeReactor(cs, &sent, nil)
	api := step(v1alpha1.ComponentAPIServer, newV, 0, 41)
	back := rolling(newV, oldV, v1alpha1.ComponentAPIServer, -1, api, step(v1alpha1.ComponentControllerManager, newV, 41, -1), step(v1alpha1.ComponentAPIServer, oldV, 50, -1))
	startWatch(t, cs,
		rolling(oldV, newV, v1alpha1.ComponentControllerManager, -1, api, step(v1alpha1.ComponentControllerManager, newV, 41, -1)),
		back,
		rolling(oldV, newV, "", 200, api), // never reached
	)
	out, err := run(t, cs, "upgrade", "demo", "--to", newV, "--wait", "--timeout=10s")
	if err == nil || !strings.Contains(err.Error(), "rolled back") || !strings.Contains(err.Error(), "from v1.37.2 to v1.36.3") {
		t.Fatalf("err = %v", err)
	}
	want := `nestedcluster.capn.dev/demo upgrade to v1.37.2 requested
kube-apiserver: upgrading to v1.37.2 (1/3)
kube-apiserver: v1.37.2, 2/2 ready, took 41s
kube-controller-manager: upgrading to v1.37.2 (2/3)
demo: rollback detected: rolling back from v1.37.2 to v1.36.3
`
	if out != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out, want)
	}
}

// The answer to the request still carries the status of an earlier upgrade
// (observedGeneration behind): its stale Degraded condition and its other
// target must neither fail the wait nor read as a rollback.
func TestUpgradeWaitIgnoresStatusFromBeforeTheRequest(t *testing.T) {
	cs := newFake(demo())
	var sent string
	stale := func() *v1alpha1.NestedCluster {
		nc := rolling("v1.35.4", oldV, "", 30, step(v1alpha1.ComponentAPIServer, oldV, 0, 30))
		nc.Generation, nc.Status.ObservedGeneration = 5, 4
		nc.Status.Conditions = []metav1.Condition{{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "KubeAPIServerPodsNotReady", Message: "old", ObservedGeneration: 4}}
		return nc
	}
	upgradeReactorFrom(cs, &sent, nil, stale)
	done := rolling(oldV, newV, "", 90, step(v1alpha1.ComponentAPIServer, newV, 0, 30),
		step(v1alpha1.ComponentControllerManager, newV, 30, 60), step(v1alpha1.ComponentScheduler, newV, 60, 90))
	done.Generation, done.Status.ObservedGeneration = 5, 5
	done.Status.Conditions = stale().Status.Conditions // not rewritten since: stale too
	startWatch(t, cs, stale(), done)
	out, err := run(t, cs, "upgrade", "demo", "--to", newV, "--wait", "--timeout=10s")
	want := `nestedcluster.capn.dev/demo upgrade to v1.37.2 requested
kube-apiserver: upgrading to v1.37.2 (1/3)
kube-apiserver: v1.37.2, 2/2 ready, took 30s
kube-controller-manager: upgrading to v1.37.2 (2/3)
kube-controller-manager: v1.37.2, 1/1 ready, took 30s
kube-scheduler: upgrading to v1.37.2 (3/3)
kube-scheduler: v1.37.2, 1/1 ready, took 30s
upgraded demo from v1.36.3 to v1.37.2 in 1m30s
`
	if err != nil || out != want {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
}

func TestUpgradeWaitAlreadyAtTarget(t *testing.T) {
	cs := newFake(demo())
	var sent string
	upgradeReactorFrom(cs, &sent, nil, func() *v1alpha1.NestedCluster {
		nc := rolling(newV, newV, "", 0)
		nc.Status.Upgrade = nil
		return nc
	})
	out, err := run(t, cs, "upgrade", "demo", "--to", newV, "--wait", "--timeout=10s")
	if err != nil || !strings.HasSuffix(out, "\ndemo already runs v1.37.2\n") {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
}
