package translate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"capn.dev/capn/pkg/syncer/names"
)

func TestManagementServiceCIDR(t *testing.T) {
	sc := func(name string, cidrs ...string) networkingv1.ServiceCIDR {
		return networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
	}
	got, err := ManagementServiceCIDR([]networkingv1.ServiceCIDR{sc("extra", "10.200.0.0/16"), sc("kubernetes", "fd00::/108", "10.96.0.1/12")})
	require.NoError(t, err)
	assert.Equal(t, "10.96.0.0/12", got, "the default object's IPv4 range, masked")

	_, err = ManagementServiceCIDR([]networkingv1.ServiceCIDR{sc("extra", "10.200.0.0/16")})
	assert.Error(t, err)
	_, err = ManagementServiceCIDR([]networkingv1.ServiceCIDR{sc("kubernetes", "fd00::/108")})
	assert.Error(t, err)
}

func TestHostServiceSharesTheClusterIP(t *testing.T) {
	tenant := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "s-1"},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.7.7", ClusterIPs: []string{"10.96.7.7"},
			Selector: map[string]string{"app": "web", "capn.dev/cluster": "victim"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), NodePort: 30080}},
		},
	}
	host, errs := HostService(tenant, "capn-w")
	require.Empty(t, errs)
	assert.Equal(t, names.Host("shop", "web"), host.Name)
	assert.Equal(t, "capn-w", host.Namespace)
	assert.Equal(t, "10.96.7.7", host.Spec.ClusterIP)
	assert.Equal(t, []string{"10.96.7.7"}, host.Spec.ClusterIPs)
	assert.Equal(t, map[string]string{"app": "web", names.TenantNamespaceLabel: "shop"}, host.Spec.Selector,
		"the selector is scoped to the tenant namespace and cannot name reserved keys")
	assert.Equal(t, int32(0), host.Spec.Ports[0].NodePort, "no node port on the host")
	assert.Equal(t, "web", host.Annotations[names.TenantNameAnnotation])
	assert.Equal(t, "s-1", host.Labels[names.TenantUIDLabel])
}

func TestHostServiceRefusesWhatOpensTheHost(t *testing.T) {
	for _, c := range []struct {
		name  string
		spec  corev1.ServiceSpec
		field string
	}{
		{"node port", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}, "spec.type"},
		{"load balancer", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}, "spec.type"},
		{"external IPs", corev1.ServiceSpec{ExternalIPs: []string{"192.0.2.1"}}, "spec.externalIPs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			host, errs := HostService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}, Spec: c.spec}, "w")
			assert.Nil(t, host)
			require.Len(t, errs, 1)
			assert.Equal(t, c.field, errs[0].Field)
		})
	}
	host, errs := HostService(&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}, "w")
	assert.Nil(t, host)
	assert.Empty(t, errs, "ExternalName needs no host object")
}

func TestHostServiceWithoutSelector(t *testing.T) {
	host, errs := HostService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}, "w")
	require.Empty(t, errs)
	assert.Nil(t, host.Spec.Selector, "a selector-less tenant Service must not select every synced pod of its namespace")
	assert.Nil(t, host.Spec.ClusterIPs)
}
