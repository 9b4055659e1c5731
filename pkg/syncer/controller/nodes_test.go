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

	"capn.dev/capn/pkg/syncer/translate"
)

// nodeSyncer is the node kind whose listers hold host and the tenant's cur,
// writing through a fake tenant client; tenants is cur's indexer.
func nodeSyncer(t *testing.T, host, cur *corev1.Node) (*nodeKind, *fake.Clientset, cache.Indexer) {
	t.Helper()
	hosts := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	tenants := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, hosts.Add(host))
	require.NoError(t, tenants.Add(cur))
	client := fake.NewClientset(cur)
	return &nodeKind{&Syncer{o: Options{Tenant: client}, hostNodes: corelisters.NewNodeLister(hosts), tenantNodes: corelisters.NewNodeLister(tenants)}}, client, tenants
}

// The status is a merge patch, which merges maps: a resource the host
// node lost must still leave the virtual Node.
func TestSyncNodeDropsAResourceTheHostLost(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}}
	cur := translate.VirtualNode(host, nil)
	cur.Status.Capacity["example.com/gpu"] = resource.MustParse("1")
	cur.Status.Allocatable["example.com/gpu"] = resource.MustParse("1")
	s, client, _ := nodeSyncer(t, host, cur)

	require.NoError(t, s.sync(context.Background(), "node-1"))
	got, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Status.Capacity, corev1.ResourceName("example.com/gpu"))
	assert.NotContains(t, got.Status.Allocatable, corev1.ResourceName("example.com/gpu"))
	assert.Equal(t, host.Status.Capacity, got.Status.Capacity)
}

// Labels others put on the virtual Node stay: the tenant's
// kube-controller-manager adds the beta os/arch labels to every Node, and
// removing them made the two rewrite the Node many times a second. The
// syncer's own labels still follow the host, removals included.
func TestSyncNodeKeepsLabelsItDoesNotOwn(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{
		corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
	cur := translate.VirtualNode(host, nil)
	cur.Labels["beta.kubernetes.io/os"], cur.Labels["beta.kubernetes.io/arch"] = "linux", "amd64" // kcm's
	cur.Labels["team"] = "blue"                                                                   // a user's
	cur.Labels[corev1.LabelTopologyZone] = "gone"                                                 // the host lost it
	s, client, tenants := nodeSyncer(t, host, cur)

	require.NoError(t, s.sync(context.Background(), "node-1"))
	got, err := client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{VirtualNodeLabel: "true", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "team": "blue"}, got.Labels)

	// In step, nothing to write: the loop is gone.
	require.NoError(t, tenants.Update(got))
	client.ClearActions()
	require.NoError(t, s.sync(context.Background(), "node-1"))
	for _, a := range client.Actions() {
		assert.NotEqual(t, "update", a.GetVerb(), "%v", a)
	}
}
