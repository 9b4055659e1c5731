package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/tenant/names"
)

// sleepState is what a sync decided about spec.sleep.
type sleepState struct {
	// asked: spec.sleep.asleep is true, or the cluster sleeps for
	// inactivity (idle).
	asked bool
	// idle: asleep for inactivity (the Inactive condition holds).
	idle bool
	// woke is why an inactivity sleep ends this sync (Inactive's reason
	// when it turns False), "" if it does not.
	woke string
	// inactive: this sync found the tenant unused for
	// spec.sleep.afterInactivity (activity.go); recheck is when to look
	// again while it is used.
	inactive bool
	recheck  time.Duration
	// at is the sync's time: Inactive's transitions are compared with
	// wake requests, so they are stamped by capn's clock.
	at time.Time
	// asleep: the control plane is rendered asleep this sync (an upgrade
	// in flight holds an asked-for sleep back).
	asleep bool
	// hostPods: tenant pods still run on the shared data plane;
	// lingering: a stopped component's pod is still there (shutting down:
	// its workload's status no longer counts it).
	hostPods, lingering bool
}

// decideSleep runs after the workloads are observed: a sleep asked for
// while an upgrade runs, or while a component still runs another version
// than spec.version (an upgrade the planner has yet to record), waits for
// it. An ordered upgrade checks each component's pods before the next and
// a sleeping cluster has none, so it would finish without running anything.
func decideSleep(nc *v1alpha1.NestedCluster, o *observation, now time.Time) sleepState {
	s := sleepState{at: now}
	s.idle, s.woke = inactiveSleep(nc, now)
	s.asked = nc.Spec.Sleep.Asleep || s.idle
	if !s.asked {
		return s
	}
	if u := nc.Status.Upgrade; u != nil && u.FinishedAt == nil {
		return s
	}
	for _, name := range upgradeOrder {
		w, ok := o.workloads[name]
		if !ok {
			continue
		}
		if v := observeWorkload(w, 0, false).status.Version; v != "" && v != nc.Spec.Version {
			return s
		}
	}
	s.asleep = true
	return s
}

// inactiveSleep reports whether in sleeps for inactivity: its Inactive
// condition is True, for this generation, and no /kubeconfig request asked
// for it since (WakeRequestedAnnotation). If the condition is True but
// one of those ended it, woke is why.
func inactiveSleep(nc *v1alpha1.NestedCluster, now time.Time) (idle bool, woke string) {
	c := meta.FindStatusCondition(nc.Status.Conditions, v1alpha1.ConditionInactive)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false, ""
	}
	if nc.Spec.Sleep.AfterInactivity == nil || c.ObservedGeneration != nc.Generation {
		return false, v1alpha1.ReasonSpecChanged
	}
	for _, w := range wakeAnnotations {
		if t, err := time.Parse(time.RFC3339, nc.Annotations[w.annotation]); err == nil &&
			t.After(c.LastTransitionTime.Time) && !t.After(now.Add(maxClockSkew)) {
			return false, w.reason
		}
	}
	return true, ""
}

// wakeAnnotations end a sleep for inactivity when newer than it, each
// with its reason: a /kubeconfig request, and a connection the waker held.
var wakeAnnotations = []struct{ annotation, reason string }{
	{v1alpha1.WakeRequestedAnnotation, v1alpha1.ReasonWakeRequested},
	{v1alpha1.ConnectionWakeAnnotation, v1alpha1.ReasonConnectionReceived},
}

// maxClockSkew: a wake request stamped further in the future is ignored
// (until then), so a hand-set annotation cannot keep a cluster awake.
const maxClockSkew = time.Minute

// inactiveCondition is Inactive as s leaves it, if s changes it: True
// from the sync that found the tenant unused (observedGeneration: this
// generation, which a spec change leaves behind), False when it wakes.
func inactiveCondition(nc *v1alpha1.NestedCluster, s sleepState) (metav1.Condition, bool) {
	switch {
	case s.inactive:
		return metav1.Condition{Type: v1alpha1.ConditionInactive, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonNoRequests,
			Message:            fmt.Sprintf("no request from the tenant's users or workloads for %s", nc.Spec.Sleep.AfterInactivity.Duration),
			ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(s.at)}, true
	case s.woke != "":
		return metav1.Condition{Type: v1alpha1.ConditionInactive, Status: metav1.ConditionFalse, Reason: s.woke,
			ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(s.at)}, true
	}
	return metav1.Condition{}, false
}

// sleeper stops what a sleeping cluster leaves running.
type sleeper struct{ *env }

// lingeringPods reports whether a pod of a component that stops in its
// sleep is still in ns (from the cache): a Deployment's status stops
// counting a pod once it is terminating, and kube-apiserver drains for
// seconds after that.
func (c *sleeper) lingeringPods(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params) (bool, error) {
	ns := p.Namespace
	pods, err := c.mgmt.ListPods(ctx, ns, labels.SelectorFromSet(labels.Set{v1alpha1.ClusterLabel: nc.Name}))
	if err != nil {
		return false, fmt.Errorf("listing pods in %s: %w", ns, err)
	}
	for _, p := range pods {
		if builders.Sleeps(nc, p.Labels[v1alpha1.ComponentLabel]) {
			return true, nil
		}
	}
	return false, nil
}

// stopHostPods deletes the tenant's pods on the shared data plane once its
// syncer is down (before, the syncer would see them go and fail the
// tenant's pods while it still runs). On wake the syncer finds tenant pods
// without host pods and fails them as after an eviction, and their
// controllers replace them; a bare pod stays Failed, as after losing its
// node. It reports whether any still run.
func (c *sleeper) stopHostPods(ctx context.Context, nc *v1alpha1.NestedCluster, comps map[string]observed) (bool, error) {
	if nc.Spec.DataPlane.Mode != v1alpha1.DataPlaneShared {
		return false, nil
	}
	if s, ok := comps[v1alpha1.ComponentSyncer]; !ok || !s.done || s.status.Replicas > 0 {
		return true, nil // the syncer is still going down; look again
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, v1alpha1.ConditionSleeping); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonAsleep {
		// Settled: the pods were seen gone, and with no syncer nothing
		// makes new ones. A settled sleep costs no read.
		return false, nil
	}
	ns := provisioner.WorkloadNamespace(nc)
	// Host pods are the ones the syncer made: they carry their tenant
	// pod's UID. Nothing else of capn's runs there.
	req, err := labels.NewRequirement(names.TenantUIDLabel, selection.Exists, nil)
	if err != nil {
		return false, err
	}
	n, err := c.mgmt.StopPods(ctx, ns, labels.NewSelector().Add(*req))
	if err != nil {
		return false, fmt.Errorf("stopping the tenant's pods in %s: %w", ns, err)
	}
	return n > 0, nil
}

// sleepCondition is Sleeping for a sync that decided s, with comps the
// components as observed: True from the moment the sleep is decided
// (its lastTransitionTime says since when), False while an upgrade holds
// it back, and False/Awake once woken. A cluster that never slept has no
// Sleeping condition (ok false).
func sleepCondition(nc *v1alpha1.NestedCluster, st *v1alpha1.NestedClusterStatus, s sleepState, comps map[string]observed) (metav1.Condition, bool) {
	c := metav1.Condition{Type: v1alpha1.ConditionSleeping, ObservedGeneration: nc.Generation}
	switch {
	case s.asleep:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonAsleep
		if !sleptDown(nc, comps) || s.hostPods || s.lingering {
			c.Reason = v1alpha1.ReasonFallingAsleep
		}
		c.Message = sleepMessage(nc)
		if s.idle {
			c.Message = "asleep after " + nc.Spec.Sleep.AfterInactivity.Duration.String() +
				" without requests (a spec change or a /kubeconfig request wakes it): " + c.Message
		}
	case s.asked:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonWaitingForUpgrade
		c.Message = "the upgrade to " + nc.Spec.Version + " finishes before the control plane sleeps"
	case meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSleeping) != nil:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonAwake
	default:
		return c, false
	}
	return c, true
}

// sleptDown: every component that stops in its sleep has no pod left.
func sleptDown(nc *v1alpha1.NestedCluster, comps map[string]observed) bool {
	for name, o := range comps {
		if builders.Sleeps(nc, name) && (o.status.Replicas > 0 || !o.done) {
			return false
		}
	}
	return true
}

// sleepMessage says what still runs while the cluster sleeps.
func sleepMessage(nc *v1alpha1.NestedCluster) string {
	const stopped = "kube-apiserver, kube-controller-manager and kube-scheduler are scaled to zero"
	dataPlane := ""
	if nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared {
		dataPlane = "; capn-syncer too, and the tenant's pods are stopped (their controllers replace them on wake)"
	}
	m := nc.Spec.Etcd.Managed
	switch {
	case nc.Spec.Etcd.Pool != "":
		return stopped + dataPlane + "; the pooled etcd is untouched"
	case m == nil:
		return stopped + dataPlane + "; the external etcd is untouched"
	case builders.Sleeps(nc, v1alpha1.ComponentEtcd):
		return stopped + dataPlane + "; etcd is stopped too, its data kept on its PersistentVolumeClaims"
	default:
		return stopped + dataPlane + fmt.Sprintf("; etcd keeps running, because its %s storage would lose the data if it stopped", m.Storage.Type)
	}
}
