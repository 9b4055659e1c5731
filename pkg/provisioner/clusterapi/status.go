package clusterapi

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
)

// observation is what a sync learned, for deriveStatus.
type observation struct {
	// nc is the NestedCluster, nil when there is none (yet, or any more).
	nc *capnv1alpha1.NestedCluster
	// waiting, when set, is why nothing was created yet.
	waiting string
	paused  bool
	// failed is the step that stopped the sync, if one did.
	failed *failure
}

// deriveStatus is ncp's status from what a sync observed: a pure function,
// so every field Cluster API reads is tested without a cluster.
// Initialization is sticky (the contract: it never goes back), and a
// condition keeps its lastTransitionTime while its status holds.
func deriveStatus(ncp *controlplanev1alpha1.NestedControlPlane, o observation, now metav1.Time) controlplanev1alpha1.NestedControlPlaneStatus {
	old := ncp.Status
	st := controlplanev1alpha1.NestedControlPlaneStatus{
		ObservedGeneration: ncp.Generation,
		Initialization:     *old.Initialization.DeepCopy(),
		Conditions:         slices.Clone(old.Conditions),
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: ncp.Generation, LastTransitionTime: now})
	}

	if o.paused {
		set(ConditionPaused, metav1.ConditionTrue, ReasonPaused, "the Cluster or this object is paused: capn does not reconcile it")
	} else {
		set(ConditionPaused, metav1.ConditionFalse, ReasonNotPaused, "")
	}

	switch {
	case o.failed != nil:
		set(ConditionReconciled, metav1.ConditionFalse, o.failed.reason, o.failed.message)
	case o.waiting != "":
		set(ConditionReconciled, metav1.ConditionFalse, ReasonWaitingForCluster, o.waiting)
	case !o.paused:
		set(ConditionReconciled, metav1.ConditionTrue, ReasonReconciled, "")
	}

	nc := o.nc
	if nc == nil {
		if !o.paused {
			set(ConditionAvailable, metav1.ConditionFalse, ReasonWaitingForCluster, "no NestedCluster yet")
		}
		st.NestedCluster = old.NestedCluster
		return st
	}
	st.NestedCluster = nc.Name
	api := nc.Status.APIServer
	st.Selector = nc.Status.Selector
	st.Replicas = ptr.To(api.Replicas)
	st.ReadyReplicas = ptr.To(api.ReadyReplicas)
	// A ready apiserver pod serves: no minReadySeconds stands between.
	st.AvailableReplicas = ptr.To(api.ReadyReplicas)
	st.UpToDateReplicas = ptr.To(api.UpdatedReplicas)
	st.Version, st.Versions = versions(nc)

	ready := meta.FindStatusCondition(nc.Status.Conditions, capnv1alpha1.ConditionReady)
	apiUp := meta.IsStatusConditionTrue(nc.Status.Conditions, capnv1alpha1.ConditionAPIServerAvailable)
	if apiUp && api.ReadyReplicas > 0 {
		st.Initialization.ControlPlaneInitialized = ptr.To(true)
	}
	switch {
	case ready == nil:
		set(ConditionAvailable, metav1.ConditionUnknown, "NestedClusterNotObserved", "the NestedCluster has no Ready condition yet")
	case ready.Status == metav1.ConditionTrue:
		set(ConditionAvailable, metav1.ConditionTrue, ready.Reason, "")
	default:
		set(ConditionAvailable, metav1.ConditionFalse, ready.Reason, "NestedCluster "+nc.Name+": "+ready.Message)
	}
	return st
}

// versions are the lowest version a control-plane component runs, and the
// distinct versions oldest first: an ordered upgrade moves the apiserver
// first, and Cluster API must not see it done until every component is.
// The apiserver's replicas count at its version.
func versions(nc *capnv1alpha1.NestedCluster) (string, []controlplanev1alpha1.StatusVersion) {
	s := nc.Status
	type seen struct {
		name   string
		parsed *version.Version
	}
	var all []seen
	for _, c := range []capnv1alpha1.ComponentStatus{s.APIServer, s.ControllerManager, s.Scheduler} {
		v, err := version.ParseSemantic(c.Version)
		if err != nil || slices.ContainsFunc(all, func(x seen) bool { return x.name == c.Version }) {
			continue
		}
		all = append(all, seen{c.Version, v})
	}
	if len(all) == 0 {
		return "", nil
	}
	slices.SortFunc(all, func(a, b seen) int {
		switch {
		case a.parsed.LessThan(b.parsed):
			return -1
		case b.parsed.LessThan(a.parsed):
			return 1
		}
		return 0
	})
	out := make([]controlplanev1alpha1.StatusVersion, 0, len(all))
	for _, v := range all {
		sv := controlplanev1alpha1.StatusVersion{Version: v.name}
		if v.name == s.APIServer.Version {
			sv.Replicas = s.APIServer.Replicas
		}
		out = append(out, sv)
	}
	return out[0].Version, out
}

// clusterWaitMessage says what a NestedControlPlane without its Cluster
// waits for.
func clusterWaitMessage(ncp *controlplanev1alpha1.NestedControlPlane) string {
	return fmt.Sprintf("waiting for a Cluster in namespace %s whose spec.controlPlaneRef names NestedControlPlane %s to own it", ncp.Namespace, ncp.Name)
}
