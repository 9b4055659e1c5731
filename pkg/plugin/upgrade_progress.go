package plugin

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/versions"
)

// upgradeOrder is the order the provisioner upgrades in; a rollback walks
// it backwards.
var upgradeOrder = v1alpha1.UpgradeOrder()

// upgradeProgress turns the NestedClusters seen while waiting for an
// upgrade into progress lines, one when a step starts and one when it
// finishes, all derived from status (never from the local clock), so a
// missed watch event only delays a line, and the output is deterministic.
type upgradeProgress struct {
	name   string
	target string
	// gen is the generation the upgrade request produced. A status whose
	// observedGeneration is older predates the request (it may describe a
	// previous upgrade) and is not looked at.
	gen      int64
	printf   func(string, ...any)
	started  map[int]bool // indexes into status.upgrade.steps already printed
	finished map[int]bool
}

func newUpgradeProgress(nc *v1alpha1.NestedCluster, target string, printf func(string, ...any)) *upgradeProgress {
	return &upgradeProgress{name: nc.Name, target: target, gen: nc.Generation, printf: printf,
		started: map[int]bool{}, finished: map[int]bool{}}
}

// observe prints what is new in nc and reports whether the upgrade has
// finished. It returns an error, ending the wait, when the upgrade is
// Degraded or is no longer heading for the target (a rollback).
func (p *upgradeProgress) observe(nc *v1alpha1.NestedCluster) (bool, error) {
	if nc.Status.ObservedGeneration < p.gen {
		return false, nil // the provisioner has not acted on the request yet
	}
	u := nc.Status.Upgrade
	if u != nil && u.To != p.target {
		verb := "rolling back"
		if u.FinishedAt != nil {
			verb = "rolled back"
		}
		p.printf("%s: rollback detected: %s from %s to %s\n", p.name, verb, u.From, u.To)
		return false, fmt.Errorf("upgrade of %s to %s was rolled back: status.upgrade now goes from %s to %s",
			p.name, p.target, u.From, u.To)
	}
	if u != nil {
		p.steps(nc, u)
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, v1alpha1.ConditionDegraded); c != nil &&
		c.Status == metav1.ConditionTrue && c.ObservedGeneration >= p.gen {
		who := p.name
		if u != nil && u.Component != "" {
			who = u.Component
		}
		p.printf("%s: Degraded (%s): %s\n", who, c.Reason, c.Message)
		return false, fmt.Errorf("upgrade of %s to %s is Degraded (%s): %s", p.name, p.target, c.Reason, c.Message)
	}
	switch {
	case upgradeDone(nc, p.target):
		line := fmt.Sprintf("%s %s from %s to %s", upgradedVerb(u), p.name, u.From, u.To)
		if d, ok := took(u.StartedAt, u.FinishedAt); ok {
			line += " in " + d
		}
		p.printf("%s\n", line)
		return true, nil
	case u == nil && nc.Spec.Version == p.target && allRun(nc, p.target):
		p.printf("%s already runs %s\n", p.name, p.target)
		return true, nil
	}
	return false, nil
}

// steps prints the start and finish of each step of the current leg (the
// trailing steps rolling to the target; earlier ones are the history of an
// abandoned direction), in order, catching up on any that were missed.
func (p *upgradeProgress) steps(nc *v1alpha1.NestedCluster, u *v1alpha1.UpgradeStatus) {
	first := len(u.Steps)
	for first > 0 && u.Steps[first-1].Version == p.target {
		first--
	}
	back := isNewer(u.From, u.To)
	for i := first; i < len(u.Steps); i++ {
		s := u.Steps[i]
		if !p.started[i] {
			p.started[i] = true
			verb := "upgrading"
			if back {
				verb = "rolling back"
			}
			p.printf("%s: %s to %s (%d/%d)\n", s.Component, verb, s.Version, position(s.Component, back), len(upgradeOrder))
		}
		if s.FinishedAt != nil && !p.finished[i] {
			p.finished[i] = true
			st, desired := component(nc, s.Component)
			line := fmt.Sprintf("%s: %s, %d/%d ready", s.Component, s.Version, st.ReadyReplicas, desired)
			if d, ok := took(s.StartedAt, s.FinishedAt); ok {
				line += ", took " + d
			}
			p.printf("%s\n", line)
		}
	}
}

// position is component's 1-based place in the order an upgrade (or, back,
// a rollback) rolls the components in.
func position(component string, back bool) int {
	for i, c := range upgradeOrder {
		if c == component {
			if back {
				return len(upgradeOrder) - i
			}
			return i + 1
		}
	}
	return 0
}

// component returns a kube-* component's status and desired replicas.
func component(nc *v1alpha1.NestedCluster, name string) (v1alpha1.ComponentStatus, int32) {
	switch name {
	case v1alpha1.ComponentAPIServer:
		return nc.Status.APIServer, ptr.Deref(nc.Spec.APIServer.Replicas, 1)
	case v1alpha1.ComponentControllerManager:
		return nc.Status.ControllerManager, ptr.Deref(nc.Spec.ControllerManager.Replicas, 1)
	case v1alpha1.ComponentScheduler:
		return nc.Status.Scheduler, ptr.Deref(nc.Spec.Scheduler.Replicas, 1)
	}
	return v1alpha1.ComponentStatus{}, 0
}

// allRun: every component an upgrade rolls reports version.
func allRun(nc *v1alpha1.NestedCluster, version string) bool {
	for _, name := range upgradeOrder {
		if st, _ := component(nc, name); st.Version != version {
			return false
		}
	}
	return true
}

// took is finished-started, rounded to the second, when both are known.
func took(started, finished *metav1.Time) (string, bool) {
	if started == nil || finished == nil {
		return "", false
	}
	return finished.Sub(started.Time).Round(time.Second).String(), true
}

// isNewer reports whether a is a later version than b; unparsable is never.
// An upgrade whose from is newer than its to is a rollback.
func isNewer(a, b string) bool {
	va, errA := versions.Parse(a)
	vb, errB := versions.Parse(b)
	return errA == nil && errB == nil && va.Compare(vb) > 0
}

func upgradedVerb(u *v1alpha1.UpgradeStatus) string {
	if isNewer(u.From, u.To) {
		return "rolled back"
	}
	return "upgraded"
}
