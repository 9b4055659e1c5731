package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// observed is one component's status and whether it is usable (available)
// and fully rolled out to the desired spec (done).
type observed struct {
	status          v1alpha1.ComponentStatus
	available, done bool
}

// updateStatus derives the status from the management workloads and
// writes it only if it changed. It reports whether the cluster is Ready.
// Ready also waits for the tenant's RBAC bootstrap (ensureTenantAccess), so
// that a kubeconfig fetched on Ready works at once. A failed bootstrap is
// returned after the status is written. up is this sync's upgrade plan
// (upgrade.go), laid over before writing; ca is the cluster CA Secret's data.
func (c *Controller) updateStatus(ctx context.Context, nc *v1alpha1.NestedCluster, in *v1alpha1.NestedCluster, p builders.Params, up *upgrade, ca map[string][]byte) (bool, error) {
	ns := p.Namespace
	etcd := observed{available: true, done: true} // external etcd: not ours to watch
	var err error
	if m := in.Spec.Etcd.Managed; m != nil {
		if etcd, err = c.observe(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.EtcdName}}, ptr.Deref(m.Replicas, 1), true); err != nil {
			return false, err
		}
	}
	api, err := c.observe(ctx, deploymentRef(ns, provisioner.APIServerName), ptr.Deref(in.Spec.APIServer.Replicas, 1), false)
	if err != nil {
		return false, err
	}
	kcm, err := c.observe(ctx, deploymentRef(ns, provisioner.ControllerManagerName), ptr.Deref(in.Spec.ControllerManager.Replicas, 1), false)
	if err != nil {
		return false, err
	}
	sched, err := c.observe(ctx, deploymentRef(ns, provisioner.SchedulerName), ptr.Deref(in.Spec.Scheduler.Replicas, 1), false)
	if err != nil {
		return false, err
	}

	// The Event for a failure is recorded where the attempt ends
	// (bootstrapTenant); here it only keeps Ready False.
	tenantReady, terr := c.ensureTenantAccess(ctx, nc, in, p, ca, api.available)
	if terr != nil {
		terr = fmt.Errorf("bootstrapping tenant access: %w", terr)
	}

	st := nc.Status.DeepCopy()
	st.ObservedGeneration = nc.Generation
	st.Etcd, st.APIServer, st.ControllerManager, st.Scheduler = etcd.status, api.status, kcm.status, sched.status
	st.Replicas = api.status.Replicas
	st.Selector = labels.SelectorFromSet(provisioner.SelectorLabels(in, v1alpha1.ComponentAPIServer)).String()
	// The load balancer when there is one; else the ClusterIP, which works
	// without cluster DNS from pods and nodes. Both are in the certificate.
	st.Endpoint = provisioner.APIServerEndpoint(in, p.Addresses())
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionPaused)

	set := func(typ string, ok bool, reason, notReason string) {
		cond := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: nc.Generation}
		if !ok {
			cond.Status, cond.Reason = metav1.ConditionFalse, notReason
		}
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	set(v1alpha1.ConditionEtcdReady, etcd.available, v1alpha1.ReasonQuorumReady, v1alpha1.ReasonQuorumNotReady)
	set(v1alpha1.ConditionAPIServerAvailable, api.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	set(v1alpha1.ConditionControllerManagerAvailable, kcm.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	set(v1alpha1.ConditionSchedulerAvailable, sched.available, v1alpha1.ReasonReplicasReady, v1alpha1.ReasonNoReadyReplicas)
	components := etcd.available && api.available && kcm.available && sched.available &&
		etcd.done && api.done && kcm.done && sched.done
	// Pods are listed only while a component is not rolled out: that is
	// when an image can be missing (create, scale, upgrade).
	images := metav1.Condition{Type: v1alpha1.ConditionImagesAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonImagesPresent}
	if !components {
		if images, err = c.imagesCondition(ctx, in, ns); err != nil {
			return false, err
		}
	}
	images.ObservedGeneration = nc.Generation
	meta.SetStatusCondition(&st.Conditions, images)
	ready := components && tenantReady
	readyCond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAllComponentsAvailable, ObservedGeneration: nc.Generation}
	switch {
	case ready:
	case images.Status == metav1.ConditionFalse:
		readyCond.Status, readyCond.Reason, readyCond.Message = metav1.ConditionFalse, v1alpha1.ReasonImagePullFailed, images.Message
	case components:
		readyCond.Status, readyCond.Reason = metav1.ConditionFalse, v1alpha1.ReasonBootstrappingTenant // RBAC for the kubeconfig group
	default:
		readyCond.Status, readyCond.Reason = metav1.ConditionFalse, v1alpha1.ReasonComponentsNotReady
	}
	meta.SetStatusCondition(&st.Conditions, readyCond)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReconciled, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonReconcileSucceeded, ObservedGeneration: nc.Generation})

	upgrading := false
	for _, o := range []observed{api, kcm, sched} {
		upgrading = upgrading || (o.status.Version != "" && o.status.Version != in.Spec.Version)
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
	ready = c.applyUpgrade(nc, st, up, ready) // status.upgrade, Progressing, Degraded, phase
	if _, err := c.writeStatus(ctx, nc, st); err != nil {
		return false, err
	}
	return ready, terr
}

func deploymentRef(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// observe reads a Deployment or StatefulSet; a missing one is simply not
// available yet. Etcd is available with a quorum of ready members, a
// Deployment with one ready replica; done means rolled out to desired.
func (c *Controller) observe(ctx context.Context, proto builders.Object, desired int32, quorum bool) (observed, error) {
	live, err := c.mgmt.Get(ctx, proto)
	if apierrors.IsNotFound(err) {
		return observed{}, nil
	}
	if err != nil {
		return observed{}, fmt.Errorf("getting %s/%s: %w", proto.GetNamespace(), proto.GetName(), err)
	}
	var o observed
	seen := false // the workload controller has acted on the latest spec
	switch w := live.(type) {
	case *appsv1.Deployment:
		o.status = componentStatus(w.Status.Replicas, w.Status.ReadyReplicas, w.Status.UpdatedReplicas, w.Spec.Template)
		seen = w.Status.ObservedGeneration >= w.Generation
	case *appsv1.StatefulSet:
		o.status = componentStatus(w.Status.Replicas, w.Status.ReadyReplicas, w.Status.UpdatedReplicas, w.Spec.Template)
		seen = w.Status.ObservedGeneration >= w.Generation
	default:
		return observed{}, fmt.Errorf("observing %T: not a workload", live)
	}
	need := int32(1)
	if quorum {
		need = desired/2 + 1
	}
	s := o.status
	o.available = s.ReadyReplicas >= need
	o.done = seen && s.Replicas == desired && s.ReadyReplicas >= desired && s.UpdatedReplicas >= desired
	return o, nil
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
func (c *Controller) writeStatus(ctx context.Context, nc *v1alpha1.NestedCluster, st *v1alpha1.NestedClusterStatus) (bool, error) {
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
