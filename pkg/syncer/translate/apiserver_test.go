package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The Endpoints and the EndpointSlice name the same address and port (the
// conformance spec compares them), the one tenant pods dial; the
// Endpoints are not mirrored into a second slice.
func TestAPIServerEndpointsAgree(t *testing.T) {
	ep, slice := APIServerEndpoints("10.96.12.34", 6443)
	require.NotNil(t, ep)
	require.NotNil(t, slice)
	assert.Equal(t, "default/kubernetes", ep.Namespace+"/"+ep.Name)
	assert.Equal(t, "true", ep.Labels[labelSkipMirror])
	require.Len(t, ep.Subsets, 1)
	assert.Equal(t, []corev1.EndpointAddress{{IP: "10.96.12.34"}}, ep.Subsets[0].Addresses)
	assert.Equal(t, int32(6443), ep.Subsets[0].Ports[0].Port)
	assert.Equal(t, "kubernetes", slice.Labels[discoveryv1.LabelServiceName])
	assert.Equal(t, discoveryv1.AddressTypeIPv4, slice.AddressType)
	assert.Equal(t, []string{"10.96.12.34"}, slice.Endpoints[0].Addresses)
	assert.Equal(t, int32(6443), *slice.Ports[0].Port)

	_, v6 := APIServerEndpoints("fd00::1", 6443)
	assert.Equal(t, discoveryv1.AddressTypeIPv6, v6.AddressType)
	ep, slice = APIServerEndpoints("apiserver.example", 6443)
	assert.Nil(t, ep, "only an IP address is an endpoint")
	assert.Nil(t, slice)
}
