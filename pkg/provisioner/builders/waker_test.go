package builders

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"capn.dev/capn/pkg/provisioner"
)

// The waker's slice is the kube-apiserver Service's (same service-name
// label and port name, so kube-proxy merges it with the EndpointSlice
// controller's), under a manager of its own, in the Service's family.
func TestWakerEndpointSlice(t *testing.T) {
	nc := cluster()
	assert.Nil(t, WakerEndpointSlice(nc, Params{}), "no waker, no slice")

	p := Params{APIServerServiceIP: "10.96.0.20", Waker: &Waker{Port: 40007, Addresses: []string{"10.244.0.9", "fd00::9", "10.244.0.10"}}}
	s := WakerEndpointSlice(nc, p)
	require.NotNil(t, s)
	assert.Equal(t, discoveryv1.AddressTypeIPv4, s.AddressType)
	var addrs []string
	for _, e := range s.Endpoints {
		addrs = append(addrs, e.Addresses...)
		assert.True(t, *e.Conditions.Ready)
	}
	assert.Equal(t, []string{"10.244.0.9", "10.244.0.10"}, addrs)
	assert.Equal(t, provisioner.APIServerName, s.Labels[discoveryv1.LabelServiceName])
	assert.Equal(t, provisioner.WakerManagedBy, s.Labels[discoveryv1.LabelManagedBy])
	assert.Equal(t, string(nc.UID), s.Labels[provisioner.OwnerUIDLabel])

	objs := build(t, nc)
	svc := find[*corev1.Service](objs, provisioner.APIServerName)
	require.Len(t, s.Ports, 1)
	assert.Equal(t, svc.Spec.Ports[0].Name, *s.Ports[0].Name, "kube-proxy matches slice ports to the Service's by name")
	assert.Equal(t, int32(40007), *s.Ports[0].Port)

	p.APIServerServiceIP = "fd00:96::20"
	s = WakerEndpointSlice(nc, p)
	require.NotNil(t, s)
	assert.Equal(t, discoveryv1.AddressTypeIPv6, s.AddressType)
	assert.Equal(t, []string{"fd00::9"}, s.Endpoints[0].Addresses)

	p.Waker.Addresses = []string{"fd00::9"}
	p.APIServerServiceIP = "10.96.0.20"
	assert.Nil(t, WakerEndpointSlice(nc, p), "no waker address of the Service's family: no slice (refused, as without a waker)")
}
