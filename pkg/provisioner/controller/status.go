package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/provisioner/builders"
)

// observed is one component's status and whether it is usable (available)
// and fully rolled out to the desired spec (done).
type observed struct {
	status          v1alpha1.ComponentStatus
	available, done bool
}

// maxFailureMessage bounds the error text a condition carries.
const maxFailureMessage = 1024

// deriveStatus decides the status, phase and conditions from what the sync
// observed and how it ended (stepErr: nil, or the *stepError of the step
// that failed). It is pure, runs on every sync that gets past the
// finalizer (failed ones too), and reports whether the cluster is Ready.
//
// Ready describes what runs: every component available and rolled out, the
// tenant's RBAC bootstrap recorded, and no upgrade in flight. Reconciled
// describes the sync: False names the failed step, so a failing
// certificate renewal shows while the cluster still serves. A sync that
// failed before it observed the workloads leaves their conditions as they
// were, because not having looked says nothing about them.
func deriveStatus(nc *v1alpha1.NestedCluster, o *observation, stepErr error) (*v1alpha1.NestedClusterStatus, bool) {
	st := nc.Status.DeepCopy()
	st.ObservedGeneration = nc.Generation
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionPaused)
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status,
			Reason: reason, Message: message, ObservedGeneration: nc.Generation})
	}
	reconciled := func() {
		var se *stepError
		if errors.As(stepErr, &se) {
			set(v1alpha1.ConditionReconciled, metav1.ConditionFalse, se.reason, truncate(se.err.Error(), maxFailureMessage))
			return
		}
		set(v1alpha1.ConditionReconciled, metav1.ConditionTrue, v1alpha1.ReasonReconcileSucceeded, "")
	}
	if !o.seen {
		reconciled()
		return st, false
	}
	if o.endpoint != "" {
		// The load balancer when there is one; else the ClusterIP, which
		// works without cluster DNS from pods and nodes. Both are in the
		// certificate.
		st.Endpoint = o.endpoint
	}
	comps := o.components(nc)
	etcd, api := comps[v1alpha1.ComponentEtcd], comps[v1alpha1.ComponentAPIServer]
	kcm, sched := comps[v1alpha1.ComponentControllerManager], comps[v1alpha1.ComponentScheduler]
	st.Etcd, st.APIServer, st.ControllerManager, st.Scheduler = etcd.status, api.status, kcm.status, sched.status
	st.Replicas = api.status.Replicas
	st.Selector = labels.SelectorFromSet(provisioner.SelectorLabels(nc, v1alpha1.ComponentAPIServer)).String()

	available := func(typ string, ok bool, reason, notReason string) {
		if ok {
			set(typ, metav1.ConditionTrue, reason, "")
		} else {
			set(typ, metav1.ConditionFalse, notReason, "")
		}
	}
	available(v1alpha1.ConditionEtcdReady, etcd.available, v1alpha1.ReasonQuorumReady, v1alpha1.ReasonQuorumNotReady)
	available(v1alpha1.ConditionAPIServerAvailable, api.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	available(v1alpha1.ConditionControllerManagerAvailable, kcm.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	available(v1alpha1.ConditionSchedulerAvailable, sched.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	if syncer, ok := comps[v1alpha1.ComponentSyncer]; ok {
		st.Syncer = syncer.status
		st.WorkloadNamespace = provisioner.WorkloadNamespace(nc)
		available(v1alpha1.ConditionSyncerAvailable, syncer.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	}
	images := metav1.Condition{Type: v1alpha1.ConditionImagesAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonImagesPresent}
	if o.images != nil {
		images = *o.images
	}
	images.ObservedGeneration = nc.Generation
	meta.SetStatusCondition(&st.Conditions, images)

	switch t := o.tenant; {
	case t.done:
		set(v1alpha1.ConditionTenantBootstrapped, metav1.ConditionTrue, v1alpha1.ReasonBindingsApplied,
			"group "+access.TenantAdminsGroup+" is bound to cluster-admin in the tenant")
	case t.failure != "":
		set(v1alpha1.ConditionTenantBootstrapped, metav1.ConditionFalse, v1alpha1.ReasonTenantBootstrapFailed, t.failure)
	case api.available:
		set(v1alpha1.ConditionTenantBootstrapped, metav1.ConditionFalse, v1alpha1.ReasonBootstrapPending, "")
	default:
		set(v1alpha1.ConditionTenantBootstrapped, metav1.ConditionFalse, v1alpha1.ReasonWaitingForAPIServer, "")
	}

	components := rolledOut(comps)
	ready := components && o.tenant.done
	switch {
	case ready:
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAllComponentsAvailable, "")
	case images.Status == metav1.ConditionFalse:
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonImagePullFailed, images.Message)
	case components:
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonBootstrappingTenant, "") // RBAC for the kubeconfig group
	default:
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonComponentsNotReady, "")
	}
	reconciled()

	upgrading := false
	for _, name := range upgradeOrder {
		v := comps[name].status.Version
		upgrading = upgrading || (v != "" && v != nc.Spec.Version)
	}
	switch {
	case ready:
		st.Phase = v1alpha1.PhaseReady
	case upgrading:
		st.Phase = v1alpha1.PhaseUpgrading
	case nc.Status.Phase == v1alpha1.PhaseReady || nc.Status.Phase == v1alpha1.PhaseDegraded:
		st.Phase = v1alpha1.PhaseDegraded // it worked before: something broke
	default:
		st.Phase = v1alpha1.PhaseProvisioning
	}
	ready = applyUpgrade(nc, st, o.upgrade, ready) // status.upgrade, Progressing, Degraded, phase
	if c, ok := restoredCondition(nc, o.restore); ok {
		meta.SetStatusCondition(&st.Conditions, c)
		if c.Status == metav1.ConditionFalse {
			set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonRestoring, c.Message)
		}
	}
	if c, ok := inactiveCondition(nc, o.sleep); ok {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if c, ok := sleepCondition(nc, st, o.sleep, comps); ok {
		meta.SetStatusCondition(&st.Conditions, c)
		if o.sleep.asleep {
			set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonAsleep, c.Message)
			st.Phase = v1alpha1.PhaseSleeping
			// Settled once down: nothing to look at again until woken.
			ready = c.Reason == v1alpha1.ReasonAsleep
		}
	}
	return st, ready
}

// observeWorkload is one component's state from its live workload (nil: it
// does not exist yet, so it is not available). Etcd is available with a
// quorum of ready members, a Deployment with one ready replica; done means
// rolled out to desired, with no pod of an older template left.
func observeWorkload(live builders.Object, desired int32, quorum bool) observed {
	var o observed
	seen := false // the workload controller has acted on the latest spec
	var terminating int32
	switch w := live.(type) {
	case *appsv1.Deployment:
		o.status = componentStatus(w.Status.Replicas, w.Status.ReadyReplicas, w.Status.UpdatedReplicas, w.Spec.Template)
		seen = w.Status.ObservedGeneration >= w.Generation
		// status.replicas leaves out pods that are shutting down, and an
		// old kube-apiserver drains for seconds after its replacement is
		// Ready: a step is over when the old pods are gone, or the next
		// component would start beside an older apiserver.
		terminating = ptr.Deref(w.Status.TerminatingReplicas, 0)
	case *appsv1.StatefulSet:
		o.status = componentStatus(w.Status.Replicas, w.Status.ReadyReplicas, w.Status.UpdatedReplicas, w.Spec.Template)
		seen = w.Status.ObservedGeneration >= w.Generation
	default:
		return observed{}
	}
	need := int32(1)
	if quorum {
		need = desired/2 + 1
	}
	s := o.status
	o.available = s.ReadyReplicas >= need
	o.done = seen && s.Replicas == desired && s.ReadyReplicas >= desired && s.UpdatedReplicas >= desired && terminating == 0
	return o
}

func componentStatus(replicas, ready, updated int32, tpl corev1.PodTemplateSpec) v1alpha1.ComponentStatus {
	cs := v1alpha1.ComponentStatus{Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated,
		Version: tpl.Annotations[provisioner.VersionAnnotation]}
	// By name, never by position: a pod template may list a sidecar first.
	for _, c := range tpl.Spec.Containers {
		if c.Name == tpl.Labels[v1alpha1.ComponentLabel] {
			cs.Image = c.Image
		}
	}
	return cs
}

// writeStatus calls UpdateStatus only when st differs from nc's status, so
// a steady cluster costs no writes. nc is updated in place.
func (c *env) writeStatus(ctx context.Context, nc *v1alpha1.NestedCluster, st *v1alpha1.NestedClusterStatus) (bool, error) {
	if equality.Semantic.DeepEqual(nc.Status, *st) {
		return false, nil
	}
	nc.Status = *st
	out, err := c.capn.CapnV1alpha1().NestedClusters(nc.Namespace).UpdateStatus(ctx, nc, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Updated status", "phase", st.Phase)
	out.DeepCopyInto(nc)
	return true, nil
}
