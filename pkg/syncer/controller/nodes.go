package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// VirtualNodeLabel is names.VirtualNodeLabel, where it is defined.
const VirtualNodeLabel = names.VirtualNodeLabel

// heartbeatPeriod and leaseDuration are the kubelet's defaults: the
// tenant's node lifecycle controller sees a virtual Node exactly as it
// sees a healthy kubelet.
const (
	heartbeatPeriod = 10 * time.Second
	leaseDuration   = int32(40)
	leaseNamespace  = corev1.NamespaceNodeLease
)

// KubeletEndpoint is where the syncer serves the kubelet API of its
// virtual Nodes.
type KubeletEndpoint = translate.KubeletEndpoint

// nodeKind publishes a virtual Node per selected host node, and renews
// their Leases.
type nodeKind struct{ *Syncer }

func (k *nodeKind) name() string { return kindNodes }

func (k *nodeKind) register(r *registrar) {
	q := r.queue(kindNodes)
	handle(k.hostNode.Core().V1().Nodes().Informer(), func(obj any) { q.Add(key(obj)) })
	handle(k.tenant.Core().V1().Nodes().Informer(), func(obj any) { q.Add(key(obj)) })
	// Heartbeats keep the tenant's node lifecycle controller from evicting
	// the tenant's pods: a virtual Node has no kubelet to renew its Lease.
	r.every(heartbeatPeriod, k.heartbeat)
}

// nodeFields: the labels the syncer owns, the resource metrics path and
// unschedulable. The status is patched apart (sync).
var nodeFields = owned[*corev1.Node]{
	equal: func(cur, want *corev1.Node) bool {
		_, relabel := translate.OwnNodeLabels(cur.Labels, want.Labels)
		return !relabel && cur.Spec.Unschedulable == want.Spec.Unschedulable && sameMetricsPath(cur, want)
	},
	merge: func(cur, want *corev1.Node) *corev1.Node {
		upd := cur.DeepCopy()
		upd.Labels, _ = translate.OwnNodeLabels(cur.Labels, want.Labels)
		upd.Spec.Unschedulable = want.Spec.Unschedulable
		if p, ok := want.Annotations[translate.ResourceMetricsPathAnnotation]; ok {
			upd.Annotations = withEntries(upd.Annotations, map[string]string{translate.ResourceMetricsPathAnnotation: p})
		} else {
			delete(upd.Annotations, translate.ResourceMetricsPathAnnotation)
		}
		return upd
	},
}

func sameMetricsPath(cur, want *corev1.Node) bool {
	c, hadC := cur.Annotations[translate.ResourceMetricsPathAnnotation]
	w, hadW := want.Annotations[translate.ResourceMetricsPathAnnotation]
	return c == w && hadC == hadW
}

// sync makes the tenant's virtual Node name match the host node of that
// name, or removes it when the host node is gone or no longer selected.
func (k *nodeKind) sync(ctx context.Context, name string) error {
	nodes := k.o.Tenant.CoreV1().Nodes()
	cur, err := cached(k.tenantNodes.Get(name))
	if err != nil {
		return err
	}
	if cur != nil && cur.Labels[VirtualNodeLabel] != "true" {
		// A real node of the same name joined the tenant: it is not ours.
		return nil
	}
	host, err := k.hostNodes.Get(name)
	if apierrors.IsNotFound(err) {
		if cur == nil {
			return nil
		}
		klog.FromContext(ctx).Info("removing virtual node", "node", name)
		return deleteUID(ctx, nodes.Delete, cur)
	}
	if err != nil {
		return err
	}
	want := translate.VirtualNode(host, k.kubeletEndpoint())
	cur, did, err := applyIfChanged(ctx, nodes, cur, want, nodeFields)
	if err != nil {
		return fmt.Errorf("virtual node: %w", err)
	}
	if did == created {
		// Status is a subresource: a create drops it.
		cur.Status = want.Status
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	}
	if !equality.Semantic.DeepEqual(cur.Status.Capacity, want.Status.Capacity) ||
		!equality.Semantic.DeepEqual(cur.Status.Allocatable, want.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(cur.Status.Conditions, want.Status.Conditions) ||
		!equality.Semantic.DeepEqual(cur.Status.Addresses, want.Status.Addresses) ||
		cur.Status.DaemonEndpoints != want.Status.DaemonEndpoints ||
		cur.Status.NodeInfo != want.Status.NodeInfo {
		// A merge patch of what the syncer owns, without a resourceVersion,
		// rather than applyIfChanged's update: the host kubelet's heartbeat
		// moves these every few seconds, and the tenant's node controllers
		// write the same Node, so an update from the cache conflicted again
		// and again.
		patch, err := json.Marshal(map[string]any{"status": map[string]any{
			"capacity": resourcesPatch(cur.Status.Capacity, want.Status.Capacity), "allocatable": resourcesPatch(cur.Status.Allocatable, want.Status.Allocatable),
			"conditions": want.Status.Conditions, "addresses": want.Status.Addresses, "nodeInfo": want.Status.NodeInfo,
			"daemonEndpoints": want.Status.DaemonEndpoints,
		}})
		if err != nil {
			return err
		}
		_, err = nodes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}, "status")
		return err
	}
	return nil
}

// resourcesPatch is the merge-patch value that turns cur into want: a
// merge patch merges maps, so a resource the host node no longer has is
// removed by a null.
func resourcesPatch(cur, want corev1.ResourceList) map[corev1.ResourceName]any {
	out := make(map[corev1.ResourceName]any, len(want))
	for k := range cur {
		out[k] = nil
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// heartbeat renews the Lease of every virtual Node, as a kubelet does. A
// renewal is a write each period by design, so it does not go through
// applyIfChanged; it reads the Lease live, as the kubelet does, because
// the syncer caches no Leases.
func (s *Syncer) heartbeat(ctx context.Context) {
	sel := labels.SelectorFromSet(labels.Set{VirtualNodeLabel: "true"})
	vnodes, err := s.tenantNodes.List(sel)
	if err != nil {
		return
	}
	leases := s.o.Tenant.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(s.now())
	for _, n := range vnodes {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: leaseNamespace,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(n.Name), LeaseDurationSeconds: ptr.To(leaseDuration), RenewTime: &now},
			}, metav1.CreateOptions{FieldManager: fieldManager})
		} else if err == nil {
			l.Spec.RenewTime = &now
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(n.Name), ptr.To(leaseDuration)
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: fieldManager})
		}
		if err != nil {
			klog.FromContext(ctx).V(2).Info("node heartbeat failed", "node", n.Name, "err", err)
		}
	}
}
