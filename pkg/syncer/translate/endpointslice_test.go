package translate

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type endpointSliceInput struct {
	OwnIPs []string                  `json:"ownIPs"`
	Slice  discoveryv1.EndpointSlice `json:"slice"`
}

type endpointSliceGolden struct {
	Host    *discoveryv1.EndpointSlice `json:"host"`
	Dropped int                        `json:"dropped"`
}

func TestEndpointSliceGolden(t *testing.T) {
	eachGolden(t, "endpointslice", func(t *testing.T, c *endpointSliceInput) any {
		own := map[netip.Addr]bool{}
		for _, s := range c.OwnIPs {
			own[netip.MustParseAddr(s)] = true
		}
		host, dropped := HostEndpointSlice(&c.Slice, "custom-x-shop-abc", "capn-w-tenant", func(a netip.Addr) bool { return own[a] })
		return endpointSliceGolden{Host: host, Dropped: dropped}
	})
}

func TestSyncsEndpoints(t *testing.T) {
	svc := func(f func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "custom"}}
		f(s)
		return s
	}
	assert.True(t, SyncsEndpoints(svc(func(*corev1.Service) {})), "selectorless ClusterIP")
	assert.False(t, SyncsEndpoints(svc(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web"} })), "the host computes a selector's endpoints")
	assert.False(t, SyncsEndpoints(svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })), "no host Service")
	assert.False(t, SyncsEndpoints(svc(func(s *corev1.Service) { s.Namespace, s.Name = "default", "kubernetes" })), "the tenant apiserver's own")
}
