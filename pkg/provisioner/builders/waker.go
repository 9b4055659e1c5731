package builders

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// apiServerPortName names the kube-apiserver Service's one port.
const apiServerPortName = "https"

// Waker is where a cluster's apiserver address leads while it sleeps for
// inactivity: capn's waker, which holds the connection, wakes the cluster
// and then passes the connection on, bytes untouched (pkg/provisioner/
// waker). The controller decides it (Params.Waker).
type Waker struct {
	// Port is the cluster's own port on the waker
	// (provisioner.WakerPortBase and up).
	Port int32
	// Addresses are the ready capn-apiserver pods' addresses.
	Addresses []string
}

// WakerEndpointSlice is the kube-apiserver Service's extra EndpointSlice
// while p.Waker is set, nil otherwise. kube-proxy merges every slice of a
// Service, the EndpointSlice controller manages only its own (by
// managed-by), so the Service keeps its selector and its real endpoints
// return by themselves on wake. Addresses of another family than the
// Service's are left out: a slice holds one.
func WakerEndpointSlice(nc *v1alpha1.NestedCluster, p Params) *discoveryv1.EndpointSlice {
	w := p.Waker
	if w == nil {
		return nil
	}
	family, v6 := discoveryv1.AddressTypeIPv4, false
	if a, err := netip.ParseAddr(p.APIServerServiceIP); err == nil && a.Is6() {
		family, v6 = discoveryv1.AddressTypeIPv6, true
	}
	var endpoints []discoveryv1.Endpoint
	for _, s := range w.Addresses {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Is6() != v6 {
			continue
		}
		endpoints = append(endpoints, discoveryv1.Endpoint{Addresses: []string{a.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	if len(endpoints) == 0 {
		return nil
	}
	meta := objectMeta(nc, p, provisioner.WakerEndpointSliceName, v1alpha1.ComponentAPIServer)
	meta.Labels[discoveryv1.LabelServiceName] = provisioner.APIServerName
	meta.Labels[discoveryv1.LabelManagedBy] = provisioner.WakerManagedBy
	return &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  meta,
		AddressType: family,
		Endpoints:   endpoints,
		// The Service's port name: kube-proxy matches slice ports by it.
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(apiServerPortName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(w.Port)}},
	}
}
