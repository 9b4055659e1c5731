package builders

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
)

// Network is what the provider lets control-plane pods reach beyond their
// own namespaces. Every field is provider configuration (capn-apiserver
// flags); no tenant field adds to it.
type Network struct {
	// ManagementAPIServer are the management kube-apiserver's endpoints,
	// which each syncer talks to. NetworkPolicy sees a connection after
	// the kubernetes Service's address is translated, so the policy must
	// name these, not the ClusterIP. Empty allows the syncer ports 443
	// and 6443 anywhere.
	ManagementAPIServer []netip.AddrPort
	// Kubelets are the management Nodes' kubelet endpoints (InternalIP and
	// kubelet port), whose /metrics/resource each syncer reads for its
	// virtual Nodes. Empty allows the syncer port 10250 anywhere.
	Kubelets []netip.AddrPort
	// APIServerEgressCIDRs are where a tenant kube-apiserver may connect
	// besides its own cluster's pods: an external etcd or an etcd pool
	// outside the management cluster, OIDC issuers, joined nodes'
	// kubelets.
	APIServerEgressCIDRs []netip.Prefix
	// APIServerEgressNamespaces are management namespaces whose pods a
	// tenant kube-apiserver may connect to: where the provider runs an
	// etcd pool or an external etcd inside the management cluster.
	APIServerEgressNamespaces []string
}

// apiServerEgress is everything a tenant kube-apiserver may dial, and
// nothing else (red-team finding 1: it proxies nodes/proxy, pods/proxy and
// services/proxy to any address a tenant names, so open egress made it an
// HTTP proxy into the provider's network):
//   - its own etcd's client port (managed), or the endpoints of an external
//     etcd or a pool that are IP addresses (a name is resolved by the
//     provider's DNS and must be covered by APIServerEgressCIDRs or
//     APIServerEgressNamespaces);
//   - its peers (a second replica);
//   - its syncer's webhook and kubelet ports, and every pod of its own
//     workload namespace on any port: admission webhooks, aggregated APIs
//     and the pod and service proxies of its own workloads;
//   - DNS, by port only (see etcdNetworkPolicy for why no address);
//   - what the provider lists in p.Network.
//
// Another tenant's pods, capn, the node and the management apiserver match
// none of these.
func apiServerEgress(nc *v1alpha1.NestedCluster, p Params) []networkingv1.NetworkPolicyEgressRule {
	rules := []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentAPIServer)}, Ports: tcpPorts(profiles.APIServerPort)},
		{Ports: []networkingv1.NetworkPolicyPort{policyPort(corev1.ProtocolUDP, dnsPort), policyPort(corev1.ProtocolTCP, dnsPort)}},
	}
	var etcdEndpoints []string
	switch {
	case nc.Spec.Etcd.Managed != nil:
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentEtcd)}, Ports: tcpPorts(profiles.EtcdClientPort)})
	case nc.Spec.Etcd.External != nil:
		etcdEndpoints = nc.Spec.Etcd.External.Endpoints
	case p.EtcdPool != nil:
		etcdEndpoints = p.EtcdPool.Endpoints
	}
	for _, ap := range endpointAddrs(etcdEndpoints) {
		rules = append(rules, ipBlockRule(netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen()), int(ap.Port())))
	}
	if shared(nc) {
		rules = append(rules,
			networkingv1.NetworkPolicyEgressRule{
				To: []networkingv1.NetworkPolicyPeer{componentPeer(nc, v1alpha1.ComponentSyncer)}, Ports: tcpPorts(syncerWebhookPort, syncerKubeletPort)},
			networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{namespacePeer(provisioner.WorkloadNamespace(nc))}})
	}
	for _, cidr := range p.Network.APIServerEgressCIDRs {
		rules = append(rules, ipBlockRule(cidr, 0))
	}
	for _, ns := range p.Network.APIServerEgressNamespaces {
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{namespacePeer(ns)}})
	}
	return rules
}

// managementAPIServerEgress is the syncer's rule to the management
// kube-apiserver.
func managementAPIServerEgress(p Params) []networkingv1.NetworkPolicyEgressRule {
	return addrPortRules(p.Network.ManagementAPIServer, 443, 6443)
}

// defaultKubeletPort is where kubelets serve when the provider names no
// endpoints.
const defaultKubeletPort = 10250

// kubeletEgress is the syncer's rule to the host kubelets' resource
// metrics. The port alone is the fallback: a syncer that cannot reach the
// kubelets serves no metrics, while the rest of the syncer works either
// way.
func kubeletEgress(p Params) []networkingv1.NetworkPolicyEgressRule {
	return addrPortRules(p.Network.Kubelets, defaultKubeletPort)
}

// addrPortRules allows each endpoint on its port; none allows fallbackPorts
// at any address.
func addrPortRules(endpoints []netip.AddrPort, fallbackPorts ...int) []networkingv1.NetworkPolicyEgressRule {
	if len(endpoints) == 0 {
		return []networkingv1.NetworkPolicyEgressRule{{Ports: tcpPorts(fallbackPorts...)}}
	}
	var rules []networkingv1.NetworkPolicyEgressRule
	for _, ap := range endpoints {
		rules = append(rules, ipBlockRule(netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen()), int(ap.Port())))
	}
	return rules
}

// ipBlockRule allows cidr, on TCP port if it is not 0 (any port if it is).
func ipBlockRule(cidr netip.Prefix, port int) networkingv1.NetworkPolicyEgressRule {
	r := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr.Masked().String()}}}}
	if port != 0 {
		r.Ports = tcpPorts(port)
	}
	return r
}

// namespacePeer is every pod of namespace ns.
func namespacePeer(ns string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}
}

// endpointAddrs are the etcd endpoints (URLs, as --etcd-servers takes them)
// whose host is an IP address, with their port (2379 if none), sorted and
// without duplicates. Validation already refused malformed endpoints; one
// that does not parse here is left out, never widened to any address.
func endpointAddrs(endpoints []string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			continue
		}
		addr, err := netip.ParseAddr(u.Hostname())
		if err != nil {
			continue
		}
		port := profiles.EtcdClientPort
		if ps := u.Port(); ps != "" {
			if port, err = strconv.Atoi(ps); err != nil {
				continue
			}
		}
		out = append(out, netip.AddrPortFrom(addr.Unmap(), uint16(port)))
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out)
}
