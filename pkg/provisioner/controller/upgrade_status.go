package controller

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// applyUpgrade lays the upgrade's part over the status deriveStatus
// derived; the upgrade's Events (u.events) are recorded once that status
// is written. It
// owns status.upgrade and the Progressing and Degraded conditions, and
// overrides the phase while an upgrade runs (Upgrading) or has stalled
// (Degraded). It returns ready, forced false while an upgrade runs so the
// cluster is polled until it finishes (no Deployment watch yet). A nil or
// untouched plan changes nothing: the steady state must not write.
func applyUpgrade(nc *v1alpha1.NestedCluster, st *v1alpha1.NestedClusterStatus, u *upgrade, ready bool) bool {
	if u == nil || !u.touched {
		return ready
	}
	st.Upgrade = u.status
	cond := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status,
			Reason: reason, Message: message, ObservedGeneration: nc.Generation})
	}
	wasStalled := meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionDegraded)
	switch {
	case u.active == nil:
		cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, completeReason(u.status), "all components run "+u.status.To)
	case rollingBack(u.status):
		cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingBack"+camel(u.active.name),
			u.active.name+": rolling back to "+u.status.To)
	default:
		cond(v1alpha1.ConditionProgressing, metav1.ConditionTrue, "Upgrading"+camel(u.active.name),
			u.active.name+": rolling out "+u.status.To)
	}
	switch {
	case u.stalled != "":
		reason := camel(u.active.name) + "PodsNotReady"
		if old := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); old == nil || old.Status != metav1.ConditionTrue || old.Reason != reason {
			u.event("Warning", "UpgradeStalled", u.stalled+"; the upgrade waits (set spec.version to "+u.status.From+" to roll back)")
		}
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, u.stalled)
		st.Phase = v1alpha1.PhaseDegraded
	case wasStalled:
		// The stalled step finished late, or a rollback replaced it.
		cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, "UpgradeProceeding", "")
	}
	if u.active != nil && u.stalled == "" {
		st.Phase = v1alpha1.PhaseUpgrading
	}
	return ready && u.active == nil
}

// camel turns kube-controller-manager into KubeControllerManager, for
// condition reasons (which may not contain '-'); "apiserver" becomes
// "APIServer".
func camel(component string) string {
	var b strings.Builder
	for _, part := range strings.Split(component, "-") {
		if part == "apiserver" {
			b.WriteString("APIServer")
			continue
		}
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// rollingBack: a rollback shows as an upgrade whose to is older than from.
func rollingBack(st *v1alpha1.UpgradeStatus) bool { return newer(st.From, st.To) }

func describe(st *v1alpha1.UpgradeStatus) string {
	if rollingBack(st) {
		return "rolling back from " + st.From + " to " + st.To + ": kube-scheduler, then kube-controller-manager, then kube-apiserver"
	}
	return "upgrading from " + st.From + " to " + st.To + ": kube-apiserver, then kube-controller-manager, then kube-scheduler"
}

func completeReason(st *v1alpha1.UpgradeStatus) string {
	if rollingBack(st) {
		return "RollbackComplete"
	}
	return "UpgradeComplete"
}
