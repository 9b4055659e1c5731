package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"capn.dev/capn/pkg/tenant/names"
)

func hostPodAt(name, ip string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "capn-w", Name: name},
		Status: corev1.PodStatus{Phase: phase, PodIPs: []corev1.PodIP{{IP: ip}}}}
}

// A hand-made slice of a selectorless Service reaches the host with only
// the tenant's own running pods' addresses (conformance: "EndpointSlice
// should support a Service with multiple endpoint IPs specified in
// multiple EndpointSlices"); a slice of a Service with a selector does
// not, and its host copy goes once the Service takes one.
func TestEndpointSliceServesOnlyOwnAddresses(t *testing.T) {
	ready := true
	port := int32(8080)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "custom-1", UID: "s1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "custom"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"10.244.0.11"}}, // a finished pod's address, free for another's
			{Addresses: []string{"10.244.9.9"}},  // no pod of this tenant
		},
		Ports: []discoveryv1.EndpointPort{{Port: &port}},
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "custom"}}
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{hostPodIPIndex: podIPs})
	require.NoError(t, podIdx.Add(hostPodAt("one", "10.244.0.10", corev1.PodRunning)))
	require.NoError(t, podIdx.Add(hostPodAt("done", "10.244.0.11", corev1.PodSucceeded)))
	host := fake.NewClientset()
	events := record.NewFakeRecorder(10)
	services := indexOf(t, svc)
	k := &endpointSliceKind{
		Syncer: &Syncer{o: Options{Host: host, WorkloadNamespace: "capn-w"}, recorder: events,
			tenantServices: corelisters.NewServiceLister(services)},
		tenantLists: discoverylisters.NewEndpointSliceLister(indexOf(t, slice)),
		hostSlices:  discoverylisters.NewEndpointSliceLister(indexOf(t)),
		hostPodIPs:  podIdx,
	}
	ctx := context.Background()
	require.NoError(t, k.sync(ctx, "shop/custom-1"))
	got, err := host.DiscoveryV1().EndpointSlices("capn-w").Get(ctx, names.Host("shop", "custom-1"), metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, got.Endpoints, 1)
	assert.Equal(t, []string{"10.244.0.10"}, got.Endpoints[0].Addresses)
	assert.Equal(t, names.Host("shop", "custom"), got.Labels[discoveryv1.LabelServiceName])
	assert.NotEqual(t, "endpointslice-controller.k8s.io", got.Labels[discoveryv1.LabelManagedBy], "the host's controllers must leave it alone")
	require.Len(t, events.Events, 1)
	assert.Contains(t, <-events.Events, ReasonEndpointsDropped)

	// The Service takes a selector: the host computes its endpoints, and
	// the hand-made copy goes.
	withSelector := svc.DeepCopy()
	withSelector.Spec.Selector = map[string]string{"app": "web"}
	require.NoError(t, services.Update(withSelector))
	k.hostSlices = discoverylisters.NewEndpointSliceLister(indexOf(t, got))
	require.NoError(t, k.sync(ctx, "shop/custom-1"))
	_, err = host.DiscoveryV1().EndpointSlices("capn-w").Get(ctx, names.Host("shop", "custom-1"), metav1.GetOptions{})
	assert.True(t, err != nil, "the host copy is deleted")
}
