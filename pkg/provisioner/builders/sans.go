package builders

import (
	"net/netip"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// SANs are the subject alternative names a serving certificate needs. The
// builders decide every name the components are reached by, so the
// certificates the controller issues take their SANs from here.
type SANs struct {
	DNSNames    []string
	IPAddresses []string
}

func (s *SANs) add(names ...string) {
	for _, n := range names {
		if n == "" {
			continue
		}
		list := &s.DNSNames
		if _, err := netip.ParseAddr(n); err == nil {
			list = &s.IPAddresses
		}
		dup := false
		for _, have := range *list {
			dup = dup || have == n
		}
		if !dup {
			*list = append(*list, n)
		}
	}
}

// APIServerSANs: the names tenant workloads use (kubernetes.default... and
// the first IP of the tenant's service range), the management Service's
// DNS name and, when known, its ClusterIP and load-balancer address,
// loopback, and spec.apiServer.certSANs.
func APIServerSANs(nc *v1alpha1.NestedCluster, p Params) SANs {
	ns := namespaceOf(nc, p)
	var s SANs
	s.add("kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc."+nc.Spec.ClusterNetwork.DNSDomain,
		provisioner.APIServerName, provisioner.APIServerName+"."+ns, provisioner.APIServerName+"."+ns+".svc",
		"localhost", "127.0.0.1", tenantAPIServiceIP(nc.Spec.ClusterNetwork.ServiceCIDR), p.APIServerServiceIP,
		p.APIServerExternalAddress)
	s.add(nc.Spec.APIServer.CertSANs...)
	return s
}

// EtcdServerSANs: the client Service (name and, when known, IP), every
// member's stable name under the headless Service, and loopback.
func EtcdServerSANs(nc *v1alpha1.NestedCluster, p Params) SANs {
	ns := namespaceOf(nc, p)
	var s SANs
	s.add(provisioner.EtcdName, provisioner.EtcdName+"."+ns, provisioner.EtcdName+"."+ns+".svc",
		"*."+provisioner.EtcdHeadlessServiceName+"."+ns+".svc", "localhost", "127.0.0.1", p.EtcdServiceIP)
	return s
}

// EtcdPeerSANs: members address each other by their headless-Service names
// (three members). A single member has no peers, so its pod-IP peer URL
// needs no SAN.
func EtcdPeerSANs(nc *v1alpha1.NestedCluster, p Params) SANs {
	ns := namespaceOf(nc, p)
	var s SANs
	s.add("*." + provisioner.EtcdHeadlessServiceName + "." + ns + ".svc")
	return s
}

// tenantAPIServiceIP is the first address of the service range: the
// ClusterIP kube-apiserver gives the tenant's "kubernetes" Service.
func tenantAPIServiceIP(cidr string) string {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	return prefix.Masked().Addr().Next().String()
}
