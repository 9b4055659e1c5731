package server

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/provisioner/builders"
)

func TestManagementEndpoints(t *testing.T) {
	got := managementEndpoints([]discoveryv1.EndpointSlice{{
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](34567)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.9"}},
			{Addresses: []string{"10.0.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
	}})
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:34567"), netip.MustParseAddrPort("10.0.0.9:34567")}, got)
}

func TestNetworkOptionsValidate(t *testing.T) {
	for _, o := range []NetworkOptions{
		{ManagementAPIServerEndpoints: []string{"10.0.0.1"}},
		{APIServerEgressCIDRs: []string{"10.0.0.300/8"}},
		{APIServerEgressNamespaces: []string{"Not_A_Namespace"}},
		{NodeKubeletEndpoints: []string{"10.0.0.1"}},
		{NodeKubeletEndpoints: []string{"node-1:10250"}},
		{NodeKubeletEndpoints: []string{"10.0.0.1:0"}},
		{ManagementAPIServerEndpoints: []string{"10.0.0.1:0"}},
	} {
		assert.Len(t, o.Validate(), 1, "%+v", o)
	}
	n, err := NetworkOptions{APIServerEgressCIDRs: []string{"192.0.2.7/24"}, APIServerEgressNamespaces: []string{"pools"}}.network()
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, n.APIServerEgressCIDRs)
}

func TestNodeKubeletEndpointsFlag(t *testing.T) {
	n, err := NetworkOptions{NodeKubeletEndpoints: []string{"10.0.0.7:10250", "[2001:db8::7]:10255", "[::ffff:10.0.0.8]:10250"}}.network()
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.7:10250"), netip.MustParseAddrPort("[2001:db8::7]:10255"),
		netip.MustParseAddrPort("10.0.0.8:10250")}, n.Kubelets)
}

func node(name string, port int32, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses:       addrs,
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}},
	}}
}

// Without the flag, the kubelets are read from the Nodes: every
// InternalIP with the kubelet port the Node reports; other addresses, and
// Nodes that report no port, are left out.
func TestResolveReadsKubeletsFromNodes(t *testing.T) {
	internal := func(a string) corev1.NodeAddress { return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a} }
	mgmt := fake.NewClientset(
		node("b", 10250, internal("10.0.0.9"), internal("2001:db8::9"), corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.9"},
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "b"}),
		node("a", 10255, internal("10.0.0.5")),
		node("no-port", 0, internal("10.0.0.6")),
		node("no-ip", 10250, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "no-ip"}),
	)
	apiserver := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:6443")}
	n, err := resolveFrom(context.Background(), mgmt, builders.Network{ManagementAPIServer: apiserver})
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:10255"), netip.MustParseAddrPort("10.0.0.9:10250"),
		netip.MustParseAddrPort("[2001:db8::9]:10250")}, n.Kubelets)
	assert.Equal(t, apiserver, n.ManagementAPIServer, "what the flags named is kept")
	for _, a := range mgmt.Actions() {
		assert.NotEqual(t, "endpointslices", a.GetResource().Resource, "the apiserver's endpoints were named: nothing to read")
	}

	named := []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:10250")}
	mgmt = fake.NewClientset(node("a", 10250, internal("10.0.0.5")))
	n, err = resolveFrom(context.Background(), mgmt, builders.Network{ManagementAPIServer: apiserver, Kubelets: named})
	require.NoError(t, err)
	assert.Equal(t, named, n.Kubelets)
	assert.Empty(t, mgmt.Actions(), "everything was named: nothing to read")
}

// A read that fails, or finds nothing, is an error naming the flag, and
// leaves the list empty: the syncers' rule falls back to the port alone.
func TestResolveKubeletsFallBack(t *testing.T) {
	apiserver := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:6443")}
	n, err := resolveFrom(context.Background(), fake.NewClientset(), builders.Network{ManagementAPIServer: apiserver})
	require.ErrorContains(t, err, "--node-kubelet-endpoints")
	assert.Empty(t, n.Kubelets)

	mgmt := fake.NewClientset()
	denied := errors.New("nodes is forbidden")
	mgmt.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, denied })
	n, err = resolveFrom(context.Background(), mgmt, builders.Network{ManagementAPIServer: apiserver})
	require.ErrorIs(t, err, denied)
	assert.ErrorContains(t, err, "--node-kubelet-endpoints")
	assert.Empty(t, n.Kubelets)
	assert.Equal(t, apiserver, n.ManagementAPIServer)
}
