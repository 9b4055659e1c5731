package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
)

const VirtualNodeLabel = names.VirtualNodeLabel

func TestVirtualNodeMirrorsTheHostNode(t *testing.T) {
	host := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{
			corev1.LabelHostname: "node-1", corev1.LabelOSStable: "linux", corev1.LabelTopologyZone: "z1",
			"node-role.kubernetes.io/control-plane": "", "provider.example.com/secret-pool": "gold",
		}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
				{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse},
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
		},
	}
	v := VirtualNode(host, nil)
	assert.Equal(t, "node-1", v.Name)
	assert.Equal(t, map[string]string{VirtualNodeLabel: "true", corev1.LabelHostname: "node-1", corev1.LabelOSStable: "linux", corev1.LabelTopologyZone: "z1"}, v.Labels,
		"only the well-known topology labels: provider labels and roles stay on the host")
	assert.True(t, v.Spec.Unschedulable)
	assert.Empty(t, v.Spec.Taints, "host taints are the provider's; host pods get the provider's tolerations")
	assert.Equal(t, host.Status.Allocatable, v.Status.Allocatable)
	assert.Len(t, v.Status.Conditions, 1, "the kubelet's conditions only")
	assert.Equal(t, host.Status.Addresses, v.Status.Addresses)
	assert.Equal(t, "v1.37.2", v.Status.NodeInfo.KubeletVersion)
}

// With the syncer serving the kubelet API, the tenant apiserver must reach
// it, not the host node's real kubelet, which does not know the tenant.
func TestVirtualNodeAdvertisesTheSyncerAsItsKubelet(t *testing.T) {
	host := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}, {Type: corev1.NodeExternalIP, Address: "198.51.100.7"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		},
	}
	v := VirtualNode(host, &KubeletEndpoint{IP: "10.244.0.9", Port: 10350})
	assert.Equal(t, []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.244.0.9"}, {Type: corev1.NodeHostName, Address: "node-1"}}, v.Status.Addresses)
	assert.Equal(t, int32(10350), v.Status.DaemonEndpoints.KubeletEndpoint.Port)
}
