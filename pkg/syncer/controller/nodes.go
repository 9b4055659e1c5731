package controller

import (
	"context"
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"time"

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

// mirroredLabels are the host node labels a virtual Node carries: the
// well-known topology ones the tenant's scheduler and workloads read.
var mirroredLabels = []string{
	corev1.LabelHostname, corev1.LabelOSStable, corev1.LabelArchStable,
	corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelInstanceTypeStable,
}

// KubeletEndpoint is where the syncer serves the kubelet API of its
// virtual Nodes (logs, exec, attach, port-forward).
type KubeletEndpoint struct {
	IP   string
	Port int32
}

// VirtualNode is the tenant Node that mirrors host: same name, the
// well-known labels, capacity, allocatable, the kubelet's conditions and
// node info, and unschedulable when host is. Its address and kubelet port
// are kubelet's, the syncer's, when set: the tenant apiserver calls the
// kubelet API there and the syncer replays it to the management cluster;
// the host node's own addresses would lead the tenant apiserver to the
// real kubelet, which does not know it. Pure.
func VirtualNode(host *corev1.Node, kubelet *KubeletEndpoint) *corev1.Node {
	l := map[string]string{VirtualNodeLabel: "true"}
	for _, k := range mirroredLabels {
		if v, ok := host.Labels[k]; ok {
			l[k] = v
		}
	}
	var conds []corev1.NodeCondition
	for _, c := range host.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
			conds = append(conds, c)
		}
	}
	v := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: host.Name, Labels: l},
		Spec:       corev1.NodeSpec{Unschedulable: host.Spec.Unschedulable},
		Status: corev1.NodeStatus{
			Capacity:    host.Status.Capacity.DeepCopy(),
			Allocatable: host.Status.Allocatable.DeepCopy(),
			Conditions:  conds,
			Addresses:   append([]corev1.NodeAddress(nil), host.Status.Addresses...),
			NodeInfo:    host.Status.NodeInfo,
		},
	}
	if kubelet != nil {
		v.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: kubelet.IP}, {Type: corev1.NodeHostName, Address: host.Name}}
		v.Status.DaemonEndpoints.KubeletEndpoint.Port = kubelet.Port
	}
	return v
}

// ownLabels is cur with the labels the syncer owns (VirtualNodeLabel and
// mirroredLabels) as in want, and every other label as it is: the tenant's
// kube-controller-manager adds beta.kubernetes.io/os and /arch to every
// Node, and users label nodes. Replacing the whole map removed kcm's, kcm
// put them back, and the two rewrote the Node many times a second, which
// was most of an idle tenant's CPU. changed: an owned label differs.
func ownLabels(cur, want map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(cur)+len(want))
	for k, v := range cur {
		out[k] = v
	}
	changed := false
	for _, k := range append([]string{VirtualNodeLabel}, mirroredLabels...) {
		w, ok := want[k]
		c, had := cur[k]
		switch {
		case ok && (!had || c != w):
			out[k], changed = w, true
		case !ok && had:
			delete(out, k)
			changed = true
		}
	}
	return out, changed
}

// syncNode makes the tenant's virtual Node name match the host node of
// that name, or removes it when the host node is gone or no longer
// selected.
func (s *Syncer) syncNode(ctx context.Context, name string) error {
	nodes := s.o.Tenant.CoreV1().Nodes()
	host, err := s.hostNodes.Get(name)
	if apierrors.IsNotFound(err) {
		cur, err := s.tenantNodes.Get(name)
		if apierrors.IsNotFound(err) || (err == nil && cur.Labels[VirtualNodeLabel] != "true") {
			return nil
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).Info("removing virtual node", "node", name)
		err = nodes.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	want := VirtualNode(host, s.o.Kubelet.endpoint())
	cur, err := s.tenantNodes.Get(name)
	if apierrors.IsNotFound(err) {
		created, err := nodes.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("creating virtual node %s: %w", name, err)
		}
		created.Status = want.Status
		_, err = nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	}
	if err != nil {
		return err
	}
	if cur.Labels[VirtualNodeLabel] != "true" {
		// A real node of the same name joined the tenant: it is not ours.
		return nil
	}
	labels, relabel := ownLabels(cur.Labels, want.Labels)
	if relabel || cur.Spec.Unschedulable != want.Spec.Unschedulable {
		upd := cur.DeepCopy()
		upd.Labels, upd.Spec.Unschedulable = labels, want.Spec.Unschedulable
		if cur, err = nodes.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return err
		}
	}
	if !equality.Semantic.DeepEqual(cur.Status.Capacity, want.Status.Capacity) ||
		!equality.Semantic.DeepEqual(cur.Status.Allocatable, want.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(cur.Status.Conditions, want.Status.Conditions) ||
		!equality.Semantic.DeepEqual(cur.Status.Addresses, want.Status.Addresses) ||
		cur.Status.DaemonEndpoints != want.Status.DaemonEndpoints ||
		cur.Status.NodeInfo != want.Status.NodeInfo {
		// A merge patch of what the syncer owns, without a resourceVersion:
		// the host kubelet's heartbeat moves these every few seconds, and the
		// tenant's node controllers write the same Node, so an update from
		// the cache conflicted again and again.
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

// heartbeat renews the Lease of every virtual Node, as a kubelet does.
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
