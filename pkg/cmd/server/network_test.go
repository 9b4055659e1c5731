package server

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
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
	} {
		assert.Len(t, o.Validate(), 1, "%+v", o)
	}
	n, err := NetworkOptions{APIServerEgressCIDRs: []string{"192.0.2.7/24"}, APIServerEgressNamespaces: []string{"pools"}}.network()
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, n.APIServerEgressCIDRs)
}
