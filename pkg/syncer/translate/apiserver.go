package translate

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/tenant/names"
)

// The tenant's own apiserver Service, default/kubernetes.
const (
	APIServerServiceNamespace = metav1.NamespaceDefault
	APIServerServiceName      = names.APIServerService
	apiServerPortName         = "https"
	// labelSkipMirror keeps the tenant's EndpointSlice mirroring
	// controller from making a second slice of the Endpoints.
	labelSkipMirror = "endpointslice.kubernetes.io/skip-mirror"
)

// APIServerEndpoints are the tenant's default/kubernetes Endpoints and
// EndpointSlice, as kube-apiserver's own endpoint reconciler writes them:
// the address and port where tenant pods reach their apiserver (the
// env and hostAliases the pod translation gives them, host:port). The
// tenant apiserver runs without that reconciler
// (--endpoint-reconciler-type=none): it would publish its pod IP, which is
// not what the tenant's pods dial. Nil when host is not an IP address.
func APIServerEndpoints(host string, port int32) (*corev1.Endpoints, *discoveryv1.EndpointSlice) {
	ip, err := netip.ParseAddr(host)
	if err != nil || port <= 0 {
		return nil, nil
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: APIServerServiceNamespace, Name: APIServerServiceName,
			Labels: map[string]string{labelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip.String()}},
			Ports:     []corev1.EndpointPort{{Name: apiServerPortName, Port: port, Protocol: corev1.ProtocolTCP}},
		}},
	}
	family := discoveryv1.AddressTypeIPv4
	if ip.Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: APIServerServiceNamespace, Name: APIServerServiceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: APIServerServiceName, discoveryv1.LabelManagedBy: names.ManagedByValue}},
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(apiServerPortName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	return ep, slice
}
