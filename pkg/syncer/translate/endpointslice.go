package translate

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/tenant/names"
)

// EndpointSliceManager is the endpointslice.kubernetes.io/managed-by
// value of the host EndpointSlices the syncer writes: not the host
// endpointslice controllers', so that they leave them alone.
const EndpointSliceManager = "capn-syncer.capn.dev"

// SyncsEndpoints reports whether a tenant Service's endpoints are the
// tenant's to write and so reach the host as EndpointSlices: a ClusterIP
// Service without a selector (the tenant's endpointslice controller
// writes none for it; a user, or its mirroring of a user's Endpoints,
// does). A Service with a selector has the host compute its endpoints
// from the carried pod labels.
func SyncsEndpoints(svc *corev1.Service) bool {
	return len(svc.Spec.Selector) == 0 && (svc.Spec.Type == "" || svc.Spec.Type == corev1.ServiceTypeClusterIP) &&
		!(svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes")
}

// HostEndpointSlice is the host copy of a tenant EndpointSlice of a
// selectorless Service, serving the host Service hostService: the
// addresses the tenant listed that are its own pods' (own reports
// whether an address is the IP of one of the tenant's host pods) and of
// the slice's family, with
// their conditions and the ports. Every other address is dropped and
// counted: a tenant may not point a Service, which the management
// kube-proxy routes, at the provider's or another tenant's addresses. FQDN
// slices are not served (nil): kube-proxy ignores them. Hostnames,
// targets, node names, zones and hints are the tenant's business and are
// not carried.
func HostEndpointSlice(tenant *discoveryv1.EndpointSlice, hostService, workloadNamespace string, own func(netip.Addr) bool) (host *discoveryv1.EndpointSlice, dropped int) {
	switch tenant.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
	default:
		return nil, 0
	}
	labels := HostLabels(tenant.Namespace, string(tenant.UID))
	labels[discoveryv1.LabelServiceName] = hostService
	labels[discoveryv1.LabelManagedBy] = EndpointSliceManager
	host = &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:        names.Host(tenant.Namespace, tenant.Name),
			Namespace:   workloadNamespace,
			Labels:      labels,
			Annotations: map[string]string{names.TenantNameAnnotation: tenant.Name},
		},
		AddressType: tenant.AddressType,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, e := range tenant.Endpoints {
		var addrs []string
		for _, a := range e.Addresses {
			ip, err := netip.ParseAddr(a)
			ip = ip.Unmap()
			if err != nil || ip.Is4() != (tenant.AddressType == discoveryv1.AddressTypeIPv4) || !own(ip) {
				dropped++
				continue
			}
			addrs = append(addrs, ip.String())
		}
		if len(addrs) == 0 {
			continue
		}
		host.Endpoints = append(host.Endpoints, discoveryv1.Endpoint{
			Addresses: addrs,
			Conditions: discoveryv1.EndpointConditions{
				Ready: copyPtr(e.Conditions.Ready), Serving: copyPtr(e.Conditions.Serving), Terminating: copyPtr(e.Conditions.Terminating)},
		})
	}
	for _, p := range tenant.Ports {
		host.Ports = append(host.Ports, discoveryv1.EndpointPort{
			Name: copyPtr(p.Name), Protocol: copyPtr(p.Protocol), Port: copyPtr(p.Port), AppProtocol: copyPtr(p.AppProtocol)})
	}
	return host, dropped
}

// copyPtr is a new pointer to *p's value, or nil: a host object shares
// no memory with the tenant's.
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
