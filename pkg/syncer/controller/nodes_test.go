package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// nodeSyncer is a Syncer whose listers hold host and the tenant's cur,
// writing through a fake tenant client; tenants is cur's indexer.
func nodeSyncer(t *testing.T, host, cur *corev1.Node) (*Syncer, *fake.Clientset, cache.Indexer) {
	t.Helper()
	hosts := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	tenants := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, hosts.Add(host))
	require.NoError(t, tenants.Add(cur))
	client := fake.NewClientset(cur)
	return &Syncer{o: Options{Tenant: client}, hostNodes: corelisters.NewNodeLister(hosts), tenantNodes: corelisters.NewNodeLister(tenants)}, client, tenants
}

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

// The status is a merge patch, which merges maps: a resource the host
// node lost must still leave the virtual Node.
func TestSyncNodeDropsAResourceTheHostLost(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}}
	cur := VirtualNode(host, nil)
	cur.Status.Capacity["example.com/gpu"] = resource.MustParse("1")
	cur.Status.Allocatable["example.com/gpu"] = resource.MustParse("1")
	s, client, _ := nodeSyncer(t, host, cur)

	require.NoError(t, s.syncNode(context.Background(), "node-1"))
	got, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Status.Capacity, corev1.ResourceName("example.com/gpu"))
	assert.NotContains(t, got.Status.Allocatable, corev1.ResourceName("example.com/gpu"))
	assert.Equal(t, host.Status.Capacity, got.Status.Capacity)
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

// Labels others put on the virtual Node stay: the tenant's
// kube-controller-manager adds the beta os/arch labels to every Node, and
// removing them made the two rewrite the Node many times a second. The
// syncer's own labels still follow the host, removals included.
func TestSyncNodeKeepsLabelsItDoesNotOwn(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{
		corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
	cur := VirtualNode(host, nil)
	cur.Labels["beta.kubernetes.io/os"], cur.Labels["beta.kubernetes.io/arch"] = "linux", "amd64" // kcm's
	cur.Labels["team"] = "blue"                                                                   // a user's
	cur.Labels[corev1.LabelTopologyZone] = "gone"                                                 // the host lost it
	s, client, tenants := nodeSyncer(t, host, cur)

	require.NoError(t, s.syncNode(context.Background(), "node-1"))
	got, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{VirtualNodeLabel: "true", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "team": "blue"}, got.Labels)

	// In step, nothing to write: the loop is gone.
	require.NoError(t, tenants.Update(got))
	client.ClearActions()
	require.NoError(t, s.syncNode(context.Background(), "node-1"))
	for _, a := range client.Actions() {
		assert.NotEqual(t, "update", a.GetVerb(), "%v", a)
	}
}
