package translate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"capn.dev/capn/pkg/tenant/names"
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
	// A key in capn's domain is the tenant's own too: carried, not
	// dropped (dropping it selected more pods than the tenant asked for).
	assert.Equal(t, map[string]string{
		names.TenantLabelKey("app"):              "web",
		names.TenantLabelKey("capn.dev/cluster"): "victim",
		names.TenantNamespaceLabel:               "shop",
	}, host.Spec.Selector, "the selector is the carried keys, scoped to the tenant namespace")
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

func TestAdmitService(t *testing.T) {
	svc := func(ns, name string, spec corev1.ServiceSpec) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	ports := []corev1.ServicePort{{Port: 80}}
	cases := []struct {
		name     string
		svc      *corev1.Service
		allocate bool
		refused  string
	}{
		{"cluster IP", svc("a", "web", corev1.ServiceSpec{Ports: ports}), true, ""},
		{"explicit type and IP", svc("a", "web", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: ports}), true, ""},
		{"the tenant apiserver's own", svc("default", "kubernetes", corev1.ServiceSpec{Ports: ports}), false, ""},
		{"kubernetes elsewhere is a tenant's", svc("a", "kubernetes", corev1.ServiceSpec{Ports: ports}), true, ""},
		{"headless", svc("a", "db", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}), false, ""},
		{"external name", svc("a", "ext", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}), false, ""},
		{"generated name", svc("a", "", corev1.ServiceSpec{Ports: ports}), false, ""},
		{"node port", svc("a", "np", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports}), false, "spec.type"},
		{"load balancer", svc("a", "lb", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports}), false, "spec.type"},
		{"external IPs", svc("a", "x", corev1.ServiceSpec{ExternalIPs: []string{"192.0.2.1"}, Ports: ports}), false, "spec.externalIPs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allocate, errs := AdmitService(c.svc)
			assert.Equal(t, c.allocate, allocate)
			if c.refused == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, c.refused, errs[0].Field)
		})
	}
}

func TestClusterIPPatchSetsBothFields(t *testing.T) {
	for _, spec := range []corev1.ServiceSpec{
		{Ports: []corev1.ServicePort{{Port: 80}}},
		{ClusterIP: "10.96.0.9", ClusterIPs: []string{"10.96.0.9"}},
	} {
		doc, err := json.Marshal(corev1.Service{Spec: spec})
		require.NoError(t, err)
		p, err := jsonpatch.DecodePatch(ClusterIPPatch("10.96.7.7"))
		require.NoError(t, err)
		out, err := p.Apply(doc)
		require.NoError(t, err)
		var got corev1.Service
		require.NoError(t, json.Unmarshal(out, &got))
		assert.Equal(t, "10.96.7.7", got.Spec.ClusterIP)
		assert.Equal(t, []string{"10.96.7.7"}, got.Spec.ClusterIPs)
		assert.Equal(t, spec.Ports, got.Spec.Ports)
	}
}
