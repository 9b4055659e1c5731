package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/pkg/versions"
)

// Ordered upgrades.
//
// A change of spec.version (an edit, or POST .../upgrade, which only sets
// it) is carried out here, one kube-* component at a time: kube-apiserver,
// then kube-controller-manager, then kube-scheduler. The next component
// starts only once the one before is fully rolled out at the target (its
// Deployment has observed its spec, and all desired replicas are updated
// and ready), so the controllers never run newer than the apiserver. etcd
// is not part of it (Params.EtcdImage pins it). Moving to an older version
// (a rollback, the only downgrade validation allows) walks the same order
// backwards: scheduler, controller-manager, apiserver.
//
// The controller keeps no memory between syncs. Each sync derives a
// component's current version from its live Deployment's pod-template
// VersionAnnotation (what capn last applied), renders the components not
// yet allowed to move at that version (builders.Params.Versions), and
// records what happened in status.upgrade; a lost status write is
// recovered from the live objects on the next sync.
//
// A rollback (spec.version set back to status.upgrade.from before the
// upgrade finished, which validation allows) is the same machinery aimed
// the other way: from and to swap, so status.upgrade.to is the restored
// version and from the abandoned one ("to older than from" is how a
// rollback reads), and steps keeps the history of both legs, each step
// naming the version it rolled to.
//
// A component not rolled out within the step timeout halts the upgrade:
// Degraded=True names the pod and why, the phase is Degraded, and the next
// component does not start. The upgrade stays where it is (capn does not
// roll back on its own) until the user rolls back, or until the stuck
// component does roll out after all (say, its image became pullable): it
// is then done like any other step and the upgrade goes on.

// upgradeOrder is the forward order (etcd is not upgraded).
var upgradeOrder = v1alpha1.UpgradeOrder()

// componentState is one kube-* component as the live Deployment shows it.
type componentState struct {
	name    string
	version string // pod-template VersionAnnotation; "" if no Deployment
	done    bool   // every desired replica updated and ready, spec observed
	status  v1alpha1.ComponentStatus
}

// upgrade is what one sync decided: the versions to render and, when an
// upgrade is running or has just changed state, the status to record.
type upgrade struct {
	versions builders.ComponentVersions
	// touched: status.upgrade, the conditions and the phase are ours to
	// set this sync. False in the steady state, which must not write.
	touched bool
	status  *v1alpha1.UpgradeStatus
	active  *componentState // the component being rolled; nil when finished
	// stalled is the Degraded message when active missed its deadline.
	stalled string
	events  []upgradeEvent
}

type upgradeEvent struct{ typ, reason, message string }

func (u *upgrade) event(typ, reason, message string) {
	u.events = append(u.events, upgradeEvent{typ, reason, message})
}

// planUpgrade works out the version each component renders at, from the
// sync's observation of the three Deployments; only when a step has
// stalled does it read their pods.
// upgrader runs ordered upgrades, one component per step
// (upgrade_pods.go diagnoses a stuck step).
type upgrader struct{ *env }

func (c *upgrader) planUpgrade(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, o *observation) (*upgrade, error) {
	ns := p.Namespace
	target := nc.Spec.Version
	comps := componentStates(nc, o)
	var err error
	prev := nc.Status.Upgrade
	running := prev != nil && prev.FinishedAt == nil
	var from string // the first component not at the target, in forward order
	for _, cs := range comps {
		if from == "" && cs.version != "" && cs.version != target {
			from = cs.version
		}
	}
	u := &upgrade{}
	if from == "" && !running {
		// Steady, or a first create: everything at spec.version (a missing
		// Deployment is created at it).
		return u, nil
	}
	u.touched = true
	now := metav1.NewTime(c.now())
	switch {
	case !running:
		u.status = &v1alpha1.UpgradeStatus{From: from, To: target, StartedAt: &now}
		u.event("Normal", "UpgradeStarted", describe(u.status))
	case prev.To != target:
		// spec.version moved while running: back to from (a rollback) or,
		// during a rollback, forward again. Either way it is a new leg of
		// the same upgrade, from the abandoned target to the new one; the
		// steps so far stay as history.
		u.status = prev.DeepCopy()
		u.status.From, u.status.To = prev.To, target
		reason := "UpgradeResumed"
		if rollingBack(u.status) {
			reason = "RollbackStarted"
		}
		u.event("Normal", reason, describe(u.status))
	default:
		u.status = prev.DeepCopy()
	}
	// A Deployment missing mid-upgrade (deleted by someone) comes back at
	// the older end, never ahead of the apiserver, and then takes its turn.
	older := u.status.From
	if newer(older, u.status.To) {
		older = u.status.To
	}
	for _, cs := range comps {
		if cs.version == "" {
			cs.version = older
		}
	}

	// Walk the order (backwards when going down); the first component not
	// fully at the target is the active one. Those before it are at the
	// target; those after it stay where they are.
	order := orderFor(comps, target)
	for i, cs := range order {
		if u.active == nil {
			if cs.version == target && cs.done {
				c.finishStep(u, cs, target, now)
				continue
			}
			u.active = order[i]
			c.startStep(u, cs, target, now)
			continue
		}
		setVersion(&u.versions, cs.name, cs.version)
	}
	if u.active == nil {
		u.status.Component, u.status.FinishedAt = "", &now
		u.event("Normal", completeReason(u.status), "all components run "+target)
		return u, nil
	}
	u.status.Component = u.active.name
	step := lastStep(u.status, u.active.name)
	if !u.active.done && step.StartedAt != nil && !now.Time.Before(step.StartedAt.Add(c.cfg.UpgradeStepTimeout)) {
		if u.stalled, err = c.diagnose(ctx, nc, ns, u.active, target); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// componentStates is the kube-* components in upgradeOrder as the
// observation shows them.
func componentStates(nc *v1alpha1.NestedCluster, o *observation) []*componentState {
	comps := o.components(nc)
	out := make([]*componentState, 0, len(upgradeOrder))
	for _, name := range upgradeOrder {
		cs := comps[name]
		// version is "" when the Deployment does not exist (yet).
		out = append(out, &componentState{name: name, version: cs.status.Version, done: cs.done, status: cs.status})
	}
	return out
}

// orderFor is upgradeOrder, reversed when any component runs newer than
// target: going down, the apiserver must be the last to move.
func orderFor(comps []*componentState, target string) []*componentState {
	out := append([]*componentState(nil), comps...)
	for _, cs := range comps {
		if newer(cs.version, target) {
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
			break
		}
	}
	return out
}

// newer reports whether a is a later version than b; unparsable is never.
func newer(a, b string) bool {
	va, errA := versions.Parse(a)
	vb, errB := versions.Parse(b)
	return errA == nil && errB == nil && va.Compare(vb) > 0
}

// startStep records that cs is being rolled to target, unless its last
// step already says so (a step in progress, seen again on a later sync).
func (c *upgrader) startStep(u *upgrade, cs *componentState, target string, now metav1.Time) {
	if s := lastStep(u.status, cs.name); s != nil && s.Version == target && s.FinishedAt == nil {
		return
	}
	u.status.Steps = append(u.status.Steps, v1alpha1.UpgradeStep{Component: cs.name, Version: target, StartedAt: &now})
	u.event("Normal", "UpgradeStepStarted", cs.name+": rolling out "+target)
}

// finishStep closes cs's step once it is fully at target.
func (c *upgrader) finishStep(u *upgrade, cs *componentState, target string, now metav1.Time) {
	s := lastStep(u.status, cs.name)
	if s == nil || s.Version != target || s.FinishedAt != nil {
		return
	}
	s.FinishedAt = &now
	u.event("Normal", "UpgradeStepDone", cs.name+": every replica runs "+target+" and is ready")
}

func lastStep(st *v1alpha1.UpgradeStatus, component string) *v1alpha1.UpgradeStep {
	for i := len(st.Steps) - 1; i >= 0; i-- {
		if st.Steps[i].Component == component {
			return &st.Steps[i]
		}
	}
	return nil
}

func setVersion(v *builders.ComponentVersions, component, version string) {
	switch component {
	case v1alpha1.ComponentAPIServer:
		v.APIServer = version
	case v1alpha1.ComponentControllerManager:
		v.ControllerManager = version
	case v1alpha1.ComponentScheduler:
		v.Scheduler = version
	}
}
