package translate

import (
	"encoding/json"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"capn.dev/capn/pkg/tenant/names"
)

// DefaultServiceCIDRName is the ServiceCIDR kube-apiserver makes from its
// --service-cluster-ip-range.
const DefaultServiceCIDRName = "kubernetes"

// ManagementServiceCIDR is the IPv4 range a Shared tenant's Services take
// their ClusterIPs from: the management cluster's own, from its default
// ServiceCIDR object, because a tenant Service's ClusterIP is its host
// Service's and the management kube-proxy routes it.
func ManagementServiceCIDR(cidrs []networkingv1.ServiceCIDR) (string, error) {
	for _, c := range cidrs {
		if c.Name != DefaultServiceCIDRName {
			continue
		}
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			if err == nil && p.Addr().Is4() {
				return p.Masked().String(), nil
			}
		}
		return "", fmt.Errorf("ServiceCIDR %s has no IPv4 range: %v", c.Name, c.Spec.CIDRs)
	}
	return "", fmt.Errorf("no ServiceCIDR named %s", DefaultServiceCIDRName)
}

// ServiceSelector selects the host pods of a tenant Service's selector:
// its keys as PodLabels carries them, in the Service's tenant namespace
// only (the namespace label keeps one tenant namespace's Service off
// another's pods).
func ServiceSelector(tenantNamespace string, tenant map[string]string) map[string]string {
	s := make(map[string]string, len(tenant)+1)
	for k, v := range tenant {
		s[names.TenantLabelKey(k)] = v
	}
	s[names.TenantNamespaceLabel] = tenantNamespace
	return s
}

// HostService is the host Service of a tenant Service: the same ClusterIP
// (allocated on the host first and given to the tenant Service), ports,
// and a selector for the tenant selector's synced pods in the tenant's
// namespace only. A tenant Service without a selector gets none: its
// endpoints are the tenant's hand-made EndpointSlices, which
// HostEndpointSlice serves with the tenant's own pods only; ExternalName
// needs no host object (nil, nil). NodePort and LoadBalancer would open
// the provider's nodes and load balancers to a tenant, and externalIPs
// capture other traffic (CVE-2020-8554): all refused.
func HostService(tenant *corev1.Service, workloadNamespace string) (*corev1.Service, field.ErrorList) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch tenant.Spec.Type {
	case "", corev1.ServiceTypeClusterIP:
	case corev1.ServiceTypeExternalName:
		return nil, nil
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), tenant.Spec.Type, []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName}))
	}
	if len(tenant.Spec.ExternalIPs) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("externalIPs"), "external IPs are not available to tenant Services"))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var selector map[string]string
	if len(tenant.Spec.Selector) > 0 {
		selector = ServiceSelector(tenant.Namespace, tenant.Spec.Selector)
	}
	ports := make([]corev1.ServicePort, 0, len(tenant.Spec.Ports))
	for _, p := range tenant.Spec.Ports {
		ports = append(ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port, TargetPort: p.TargetPort})
	}
	host := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:        names.Host(tenant.Namespace, tenant.Name),
			Namespace:   workloadNamespace,
			Labels:      HostLabels(tenant.Namespace, string(tenant.UID)),
			Annotations: map[string]string{names.TenantNameAnnotation: tenant.Name},
		},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                tenant.Spec.ClusterIP,
			Ports:                    ports,
			Selector:                 selector,
			SessionAffinity:          tenant.Spec.SessionAffinity,
			SessionAffinityConfig:    tenant.Spec.SessionAffinityConfig.DeepCopy(),
			PublishNotReadyAddresses: tenant.Spec.PublishNotReadyAddresses,
			InternalTrafficPolicy:    tenant.Spec.InternalTrafficPolicy,
		},
	}
	if host.Spec.ClusterIP != "" && host.Spec.ClusterIP != corev1.ClusterIPNone {
		host.Spec.ClusterIPs = []string{host.Spec.ClusterIP}
	}
	return host, nil
}

// AdmitService decides, as the tenant apiserver admits a new Service,
// whether the Service takes its ClusterIP from the host (allocate), so
// that the tenant and host Services share it by construction rather than
// by the luck of two allocators, or is refused (what HostService
// refuses, as the create's error rather than an Event afterwards).
// default/kubernetes is the management cluster's own first IP (the tenant
// apiserver runs --endpoint-reconciler-type=none); ExternalName and
// headless Services hold no IP; a generateName create has no name yet, so
// no host name: those keep the tenant's allocation and the host Service
// asks for it afterwards.
func AdmitService(svc *corev1.Service) (allocate bool, errs field.ErrorList) {
	if svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes" {
		return false, nil
	}
	host, errs := HostService(svc, "")
	if len(errs) > 0 || host == nil {
		return false, errs
	}
	return svc.Name != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone, nil
}

// ClusterIPPatch is the JSON patch (RFC 6902) that gives a tenant Service
// the ClusterIP its host Service holds; "add" replaces a member that is
// already there.
func ClusterIPPatch(ip string) []byte {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	b, _ := json.Marshal([]op{{"add", "/spec/clusterIP", ip}, {"add", "/spec/clusterIPs", []string{ip}}})
	return b
}
