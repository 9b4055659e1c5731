package translate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
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
	// MetricsPath, when set, is where the virtual Node named by its
	// argument serves its resource metrics: the Node carries it in
	// ResourceMetricsPathAnnotation, which metrics-server reads.
	MetricsPath func(node string) string
}

// ResourceMetricsPathAnnotation is metrics-server's per-Node override of
// the path it scrapes (sigs.k8s.io/metrics-server
// AnnotationResourceMetricsPath). The syncer owns it on virtual Nodes.
const ResourceMetricsPathAnnotation = "metrics.k8s.io/resource-metrics-path"

// VirtualNode is the tenant Node that mirrors host: same name, the
// well-known labels, capacity, allocatable, the kubelet's conditions and
// node info, and unschedulable when host is. Its address and kubelet port
// are kubelet's, the syncer's, when set: the tenant apiserver calls the
// kubelet API there and the syncer replays it to the management cluster;
// the host node's own addresses would lead the tenant apiserver to the
// real kubelet, which does not know it.
func VirtualNode(host *corev1.Node, kubelet *KubeletEndpoint) *corev1.Node {
	l := map[string]string{names.VirtualNodeLabel: "true"}
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
		if kubelet.MetricsPath != nil {
			v.Annotations = map[string]string{ResourceMetricsPathAnnotation: kubelet.MetricsPath(host.Name)}
		}
	}
	return v
}

// OwnNodeLabels is cur with the labels the syncer owns (the virtual-node
// label and mirroredLabels) as in want, and every other label as it is:
// the tenant's kube-controller-manager adds beta.kubernetes.io/os and
// /arch to every Node, and users label nodes. Replacing the whole map
// removed kcm's, kcm put them back, and the two rewrote the Node many
// times a second, which was most of an idle tenant's CPU. changed: an
// owned label differs.
func OwnNodeLabels(cur, want map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(cur)+len(want))
	for k, v := range cur {
		out[k] = v
	}
	changed := false
	for _, k := range append([]string{names.VirtualNodeLabel}, mirroredLabels...) {
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
