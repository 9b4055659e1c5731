package controller

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// observation is what one sync saw of a cluster's control plane. The
// workloads are read once, near the start of the sync (observeWorkloads),
// and that one snapshot feeds everything that needs the running state: the
// etcd image to keep, the quota during a rollout, the upgrade planner and
// deriveStatus. What the sync applies replaces its entry (record), so the
// status written at the end describes the objects as they are after the
// sync, not before it.
type observation struct {
	// seen: the workloads were read. A sync that failed earlier leaves the
	// component conditions as they were: not looking is not "down".
	seen bool
	// workloads by component: the etcd StatefulSet and the kube-*
	// Deployments; a component whose workload does not exist is absent.
	workloads map[string]builders.Object
	// endpoint is the apiserver's address for status ("" if the Services
	// step did not get through).
	endpoint string
	// images is ImagesAvailable when pods had to be looked at (a component
	// not rolled out); nil means nothing to report, i.e. True.
	images *metav1.Condition
	// tenant is the tenant bootstrap's outcome (bootstrap.go).
	tenant tenantOutcome
	// upgrade is this sync's upgrade plan; nil before planning.
	upgrade *upgrade
	// sleep is what the sync decided about spec.sleep (sleep.go).
	sleep sleepState
	// restore is spec.restoreFrom's progress (restore.go).
	restore restoreState
}

// tenantOutcome is what ensureTenantAccess found.
type tenantOutcome struct {
	// done: the tenant's RBAC bootstrap is recorded for the current CA.
	done bool
	// failure is the last failed attempt's fixed description; "" if none.
	failure string
	// recorded: this sync wrote the durable record (an Event follows the
	// status write).
	recorded bool
}

// observeWorkloads reads the control plane's workloads into o.
func (c *workloads) observeWorkloads(ctx context.Context, nc *v1alpha1.NestedCluster, p builders.Params, o *observation) error {
	ns := p.Namespace
	o.workloads = map[string]builders.Object{}
	protos := map[string]builders.Object{}
	if nc.Spec.Etcd.Managed != nil {
		protos[v1alpha1.ComponentEtcd] = &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.EtcdName}}
	}
	for _, name := range deployedComponents(nc) {
		// The Deployments are named after their components.
		protos[name] = &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for component, proto := range protos {
		live, err := c.mgmt.Get(ctx, proto)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("getting %s %s/%s: %w", kindOf(proto), ns, proto.GetName(), err)
		default:
			live.GetObjectKind().SetGroupVersionKind(proto.GetObjectKind().GroupVersionKind())
			o.workloads[component] = live
		}
	}
	o.seen = true
	return nil
}

// record replaces a workload's entry with what an apply returned. The
// workloads are named after their components (the etcd StatefulSet
// "etcd", each Deployment its kube-* name).
func (o *observation) record(obj builders.Object) {
	if o.workloads == nil {
		return
	}
	switch obj.(type) {
	case *appsv1.StatefulSet:
		if obj.GetName() == v1alpha1.ComponentEtcd {
			o.workloads[v1alpha1.ComponentEtcd] = obj
		}
	case *appsv1.Deployment:
		if slices.Contains(upgradeOrder, obj.GetName()) || obj.GetName() == v1alpha1.ComponentSyncer {
			o.workloads[obj.GetName()] = obj
		}
	}
}

// deployedComponents are the components that run as Deployments: the
// kube-* ones and, in Shared mode, capn-syncer.
func deployedComponents(nc *v1alpha1.NestedCluster) []string {
	if nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared {
		return append(slices.Clone(upgradeOrder), v1alpha1.ComponentSyncer)
	}
	return upgradeOrder
}

// live lists the observed workloads (for the quota).
func (o *observation) live() []builders.Object {
	out := make([]builders.Object, 0, len(o.workloads))
	for _, component := range append(v1alpha1.Components(), v1alpha1.ComponentSyncer) {
		if w, ok := o.workloads[component]; ok {
			out = append(out, w)
		}
	}
	return out
}

// etcdImage is the image of the live etcd StatefulSet's etcd container
// ("" before it exists, or with an external etcd): the fact, not status,
// which anyone with /status access could rewrite.
func (o *observation) etcdImage() string {
	if sts, ok := o.workloads[v1alpha1.ComponentEtcd].(*appsv1.StatefulSet); ok {
		return componentStatus(0, 0, 0, sts.Spec.Template).Image
	}
	return ""
}

// components is each component's observed state, in v1alpha1.Components
// order. External etcd is not ours to watch: it counts as available.
func (o *observation) components(nc *v1alpha1.NestedCluster) map[string]observed {
	out := map[string]observed{v1alpha1.ComponentEtcd: {available: true, done: true}}
	if m := nc.Spec.Etcd.Managed; m != nil {
		out[v1alpha1.ComponentEtcd] = observeWorkload(o.workloads[v1alpha1.ComponentEtcd], o.desired(nc, v1alpha1.ComponentEtcd, m.Replicas), true)
	}
	replicas := map[string]*int32{
		v1alpha1.ComponentAPIServer:         nc.Spec.APIServer.Replicas,
		v1alpha1.ComponentControllerManager: nc.Spec.ControllerManager.Replicas,
		v1alpha1.ComponentScheduler:         nc.Spec.Scheduler.Replicas,
	}
	for _, name := range upgradeOrder {
		out[name] = observeWorkload(o.workloads[name], o.desired(nc, name, replicas[name]), false)
	}
	if nc.Spec.DataPlane.Mode == v1alpha1.DataPlaneShared {
		out[v1alpha1.ComponentSyncer] = observeWorkload(o.workloads[v1alpha1.ComponentSyncer], o.desired(nc, v1alpha1.ComponentSyncer, nc.Spec.Syncer.Replicas), false)
	}
	return out
}

// desired is how many pods of component should run, as rendered this sync.
func (o *observation) desired(nc *v1alpha1.NestedCluster, component string, spec *int32) int32 {
	return builders.DesiredReplicas(nc, component, ptr.Deref(spec, 1), o.sleep.asleep, o.restore.pending)
}

// rolledOut: every component is available and at its desired spec.
func rolledOut(comps map[string]observed) bool {
	for _, o := range comps {
		if !o.available || !o.done {
			return false
		}
	}
	return true
}
