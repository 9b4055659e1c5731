package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"

	"capn.dev/capn/pkg/syncer/translate"
)

// The tenant's default/kubernetes Endpoints and EndpointSlice are made,
// and an edited Endpoints is put back (conformance: "should have
// Endpoints and EndpointSlices pointing to API Server").
func TestAPIEndpointsMadeAndRestored(t *testing.T) {
	edited := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}}}}}
	tenant := fake.NewClientset(edited.DeepCopy())
	k := &apiEndpointsKind{
		Syncer:    &Syncer{o: Options{Tenant: tenant, Pod: translate.Context{APIServerHost: "10.96.12.34", APIServerPort: 6443}}},
		endpoints: corelisters.NewEndpointsLister(indexOf(t, edited)),
		slices:    discoverylisters.NewEndpointSliceLister(indexOf(t)),
	}
	require.NoError(t, k.sync(context.Background(), apiEndpointsKey))

	ep, err := tenant.CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, ep.Subsets, 1)
	assert.Equal(t, "10.96.12.34", ep.Subsets[0].Addresses[0].IP)
	slice, err := tenant.DiscoveryV1().EndpointSlices("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.96.12.34"}, slice.Endpoints[0].Addresses)
	assert.Equal(t, int32(6443), *slice.Ports[0].Port)
}
