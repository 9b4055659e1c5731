package provisioner

import (
	"net/netip"
	"strconv"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// Addresses are what a cluster's names and addresses depend on beyond the
// NestedCluster: facts only the controller learns from the management
// cluster (builders.Params carries them). The zero value is valid: every
// address is then a Service DNS name in ManagementNamespace.
type Addresses struct {
	// Namespace is the management namespace the controller resolved
	// (ResolveNamespace); empty means ManagementNamespace.
	Namespace string
	// APIServerServiceIP is the ClusterIP of the kube-apiserver Service;
	// when set, APIServerURL uses it instead of the DNS name, and the
	// serving certificate lists it.
	APIServerServiceIP string
	// APIServerExternalAddress is the load balancer's address (IP or host
	// name) once a LoadBalancer Service has one: APIServerEndpoint and the
	// serving certificate use it.
	APIServerExternalAddress string
	// EtcdServiceIP is the ClusterIP of the etcd client Service; when set,
	// EtcdClientURL uses it.
	EtcdServiceIP string
}

// NamespaceOf is the namespace every object of nc is rendered into.
func NamespaceOf(nc *v1alpha1.NestedCluster, a Addresses) string {
	if a.Namespace != "" {
		return a.Namespace
	}
	return ManagementNamespace(nc)
}

// APIServerURL is how kube-controller-manager, kube-scheduler and capn
// reach the tenant apiserver from inside the management cluster: the
// Service ClusterIP when known, else its DNS name.
func APIServerURL(nc *v1alpha1.NestedCluster, a Addresses) string {
	host := APIServerName + "." + NamespaceOf(nc, a) + ".svc"
	if a.APIServerServiceIP != "" {
		host = a.APIServerServiceIP
	}
	return "https://" + joinHostPort(host, nc.Spec.APIServer.Service.Port)
}

// APIServerEndpoint is where tenants reach their apiserver: the load
// balancer when there is one, else APIServerURL. It is status.endpoint and
// the server of every kubeconfig the /kubeconfig subresource issues.
func APIServerEndpoint(nc *v1alpha1.NestedCluster, a Addresses) string {
	if lb := a.APIServerExternalAddress; lb != "" {
		return "https://" + joinHostPort(lb, nc.Spec.APIServer.Service.Port)
	}
	return APIServerURL(nc, a)
}

// EtcdClientURL is the managed etcd's client Service on port, by IP when
// known. The port is etcd's (profiles.EtcdClientPort), passed in because
// the flag profiles import this package.
func EtcdClientURL(nc *v1alpha1.NestedCluster, a Addresses, port int) string {
	host := EtcdName + "." + NamespaceOf(nc, a) + ".svc"
	if a.EtcdServiceIP != "" {
		host = a.EtcdServiceIP
	}
	return "https://" + joinHostPort(host, port)
}

func joinHostPort[T int | int32](host string, port T) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

// SANs are the subject alternative names a serving certificate needs. The
// names every component is reached by are decided here, so the
// certificates the controller issues and the flags the builders render
// cannot disagree.
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
func APIServerSANs(nc *v1alpha1.NestedCluster, a Addresses) SANs {
	ns := NamespaceOf(nc, a)
	var s SANs
	s.add("kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc."+nc.Spec.ClusterNetwork.DNSDomain,
		APIServerName, APIServerName+"."+ns, APIServerName+"."+ns+".svc",
		"localhost", "127.0.0.1", tenantAPIServiceIP(nc.Spec.ClusterNetwork.ServiceCIDR), a.APIServerServiceIP,
		a.APIServerExternalAddress)
	s.add(nc.Spec.APIServer.CertSANs...)
	return s
}

// EtcdServerSANs: the client Service (name and, when known, IP), every
// member's stable name under the headless Service, and loopback.
func EtcdServerSANs(nc *v1alpha1.NestedCluster, a Addresses) SANs {
	ns := NamespaceOf(nc, a)
	var s SANs
	s.add(EtcdName, EtcdName+"."+ns, EtcdName+"."+ns+".svc",
		"*."+EtcdHeadlessServiceName+"."+ns+".svc", "localhost", "127.0.0.1", a.EtcdServiceIP)
	return s
}

// EtcdPeerSANs: members address each other by their headless-Service names
// (three members). A single member has no peers, so its pod-IP peer URL
// needs no SAN.
func EtcdPeerSANs(nc *v1alpha1.NestedCluster, a Addresses) SANs {
	ns := NamespaceOf(nc, a)
	var s SANs
	s.add("*." + EtcdHeadlessServiceName + "." + ns + ".svc")
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
