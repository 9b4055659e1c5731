package translate

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/tenant/names"
)

// PolicyContext is what translating a tenant NetworkPolicy needs besides
// the policy.
type PolicyContext struct {
	WorkloadNamespace string
	// Pods are the tenant's synced pods as their host pods show them: an
	// ipBlock peer selects those whose address falls in the block, and a
	// named port resolves against their container ports.
	Pods []PolicyPod
}

// PolicyPod is a synced tenant pod: its UID, and its host pod's IP,
// labels (PodLabels) and container ports.
type PolicyPod struct {
	UID    string
	IP     netip.Addr
	Labels map[string]string
	Ports  []corev1.ContainerPort
}

// matchesNothing is a label no host pod carries (PodLabels never writes
// it, and every tenant key is carried under a capn domain): a peer that
// must select no pod selects it. An empty peer list would mean "every
// source", the opposite.
const matchesNothing = "capn.dev/matches-nothing"

// NetworkPolicy is the host NetworkPolicy of a tenant one, in the
// workload namespace, where every tenant pod of this cluster runs and
// nothing else does. Every selector is the tenant's, over the keys
// PodLabels carries; a peer never leaves the workload namespace, so a
// translated policy can only allow traffic among the tenant's own pods.
// capn's baseline policies (the workload namespace's) step back from a
// pod the tenant isolates (IsolatedBy), so the tenant's rules narrow
// what the baseline allowed, and never widen it:
//   - podSelector: the selected pods of the policy's namespace;
//   - namespaceSelector: the pods of the tenant namespaces it selects,
//     by the namespace labels PodLabels carries;
//   - ipBlock: the tenant's own pods whose host address is in the block
//     and not in its exceptions (the tenant's pods share the management
//     cluster's pod network, so a range of it would name other tenants'
//     and the provider's pods too); notes says so;
//   - a rule with no peers (every source or destination): every pod of
//     the tenant;
//   - ports and protocols as they are.
//
// A policy with more than MaxPolicyPeers peers or MaxPolicyPorts ports
// (every rule's together) isolates its pods and allows nothing: each
// peer and port is work for the node's engine, which every tenant
// shares, and a policy that allowed more than it said would be worse.
func NetworkPolicy(tenant *networkingv1.NetworkPolicy, c PolicyContext) (host *networkingv1.NetworkPolicy, notes []string) {
	ns := tenant.Namespace
	sel := carrySelector(&tenant.Spec.PodSelector, names.TenantLabelKey)
	addLabels(&sel, map[string]string{names.TenantNamespaceLabel: ns})
	t := &peerTranslator{ns: ns, pods: c.Pods}
	spec := networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: policyTypes(tenant)}
	meta := HostMeta(tenant, c.WorkloadNamespace)
	if peers, ports := policySize(tenant); peers > MaxPolicyPeers || ports > MaxPolicyPorts {
		return &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: spec}, []string{fmt.Sprintf(
			"the policy has %d peers and %d ports, over the bound of %d and %d: its pods are isolated and nothing is allowed",
			peers, ports, MaxPolicyPeers, MaxPolicyPorts)}
	}
	for _, r := range tenant.Spec.Ingress {
		from := t.peers(r.From)
		if !resolves(r.Ports, c.Pods, []metav1.LabelSelector{sel}) {
			from = []networkingv1.NetworkPolicyPeer{{PodSelector: ptr.To(nothing())}}
		}
		spec.Ingress = append(spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports(r.Ports), From: from})
	}
	for _, r := range tenant.Spec.Egress {
		to := t.peers(r.To)
		dests := make([]metav1.LabelSelector, 0, len(to))
		for _, p := range to {
			dests = append(dests, *p.PodSelector)
		}
		if !resolves(r.Ports, c.Pods, dests) {
			to = []networkingv1.NetworkPolicyPeer{{PodSelector: ptr.To(nothing())}}
		}
		spec.Egress = append(spec.Egress, networkingv1.NetworkPolicyEgressRule{Ports: ports(r.Ports), To: to})
	}
	return &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: spec}, t.notes
}

// Bounds on one tenant NetworkPolicy, over all its rules.
const (
	MaxPolicyPeers = 100
	MaxPolicyPorts = 100
)

func policySize(p *networkingv1.NetworkPolicy) (peers, ports int) {
	for _, r := range p.Spec.Ingress {
		peers, ports = peers+len(r.From), ports+len(r.Ports)
	}
	for _, r := range p.Spec.Egress {
		peers, ports = peers+len(r.To), ports+len(r.Ports)
	}
	return peers, ports
}

// resolves reports whether a rule with ports can match anything: false
// when every one of its ports is a named port that no pod the rule admits
// traffic to (selected by one of to, over the host labels) has. Such a
// rule matches nothing in Kubernetes; an engine may read a rule whose
// ports all fail to resolve as one without ports, every port (kube-router
// v2.1.0 does, for rules with pod peers), so the translation gives it a
// peer that is no pod instead. A rule without ports, or with a number
// among them, resolves.
func resolves(ports []networkingv1.NetworkPolicyPort, pods []PolicyPod, to []metav1.LabelSelector) bool {
	if len(ports) == 0 {
		return true
	}
	sels := make([]labels.Selector, 0, len(to))
	for i := range to {
		s, err := metav1.LabelSelectorAsSelector(&to[i])
		if err != nil {
			continue
		}
		sels = append(sels, s)
	}
	for _, p := range ports {
		if p.Port == nil || p.Port.Type != intstr.String {
			return true
		}
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		for _, pod := range pods {
			if !slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(labels.Set(pod.Labels)) }) {
				continue
			}
			if slices.ContainsFunc(pod.Ports, func(cp corev1.ContainerPort) bool {
				cpProto := cp.Protocol
				if cpProto == "" {
					cpProto = corev1.ProtocolTCP
				}
				return cp.Name == p.Port.StrVal && cpProto == proto
			}) {
				return true
			}
		}
	}
	return false
}

// IsolatedBy reports whether any of policies (the tenant NetworkPolicies
// of pod's namespace) isolates pod for ingress or egress: selects it,
// with that direction among its policy types.
func IsolatedBy(pod *corev1.Pod, policies []*networkingv1.NetworkPolicy) (ingress, egress bool) {
	set := labels.Set(pod.Labels)
	for _, p := range policies {
		if p.Namespace != pod.Namespace || p.DeletionTimestamp != nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || !s.Matches(set) {
			continue
		}
		for _, t := range policyTypes(p) {
			ingress = ingress || t == networkingv1.PolicyTypeIngress
			egress = egress || t == networkingv1.PolicyTypeEgress
		}
	}
	return ingress, egress
}

// policyTypes are the policy's types as the apiserver defaults them: a
// policy stored without them isolates for ingress, and for egress when it
// has egress rules.
func policyTypes(p *networkingv1.NetworkPolicy) []networkingv1.PolicyType {
	if len(p.Spec.PolicyTypes) > 0 {
		return slices.Clone(p.Spec.PolicyTypes)
	}
	t := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if len(p.Spec.Egress) > 0 {
		t = append(t, networkingv1.PolicyTypeEgress)
	}
	return t
}

type peerTranslator struct {
	ns    string
	pods  []PolicyPod
	notes []string
}

func (t *peerTranslator) peers(in []networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyPeer {
	if len(in) == 0 {
		// Every source or destination: every pod of the tenant's.
		return []networkingv1.NetworkPolicyPeer{{PodSelector: tenantPods()}}
	}
	out := make([]networkingv1.NetworkPolicyPeer, 0, len(in))
	for _, p := range in {
		var s metav1.LabelSelector
		switch {
		case p.IPBlock != nil:
			s = t.ipBlock(p.IPBlock)
		case p.NamespaceSelector != nil:
			s = carrySelector(p.NamespaceSelector, names.NamespaceLabelKey)
			if p.PodSelector != nil {
				ps := carrySelector(p.PodSelector, names.TenantLabelKey)
				addLabels(&s, ps.MatchLabels)
				s.MatchExpressions = append(s.MatchExpressions, ps.MatchExpressions...)
			}
		default:
			s = carrySelector(p.PodSelector, names.TenantLabelKey)
			addLabels(&s, map[string]string{names.TenantNamespaceLabel: t.ns})
		}
		addLabels(&s, tenantPods().MatchLabels)
		out = append(out, networkingv1.NetworkPolicyPeer{PodSelector: &s})
	}
	return out
}

// ipBlock selects, by UID, the tenant's pods whose address the block
// holds.
func (t *peerTranslator) ipBlock(b *networkingv1.IPBlock) metav1.LabelSelector {
	t.notes = append(t.notes, fmt.Sprintf("ipBlock %s selects only this cluster's own pods with an address in it", b.CIDR))
	block, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return nothing()
	}
	var except []netip.Prefix
	for _, e := range b.Except {
		if p, err := netip.ParsePrefix(e); err == nil {
			except = append(except, p)
		}
	}
	var uids []string
	for _, p := range t.pods {
		if !block.Contains(p.IP) || slices.ContainsFunc(except, func(e netip.Prefix) bool { return e.Contains(p.IP) }) {
			continue
		}
		uids = append(uids, p.UID)
	}
	if len(uids) == 0 {
		return nothing()
	}
	slices.Sort(uids)
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: names.TenantUIDLabel, Operator: metav1.LabelSelectorOpIn, Values: slices.Compact(uids),
	}}}
}

// tenantPods selects every synced tenant pod (the workload namespace
// holds nothing else; the label says so all the same).
func tenantPods() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/managed-by": names.ManagedByValue}}
}

func nothing() metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{matchesNothing: "true"}}
}

// carrySelector is s over the host keys key carries its keys to.
func carrySelector(s *metav1.LabelSelector, key func(string) string) metav1.LabelSelector {
	var out metav1.LabelSelector
	if s == nil {
		return out
	}
	for k, v := range s.MatchLabels {
		addLabels(&out, map[string]string{key(k): v})
	}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: key(e.Key), Operator: e.Operator, Values: slices.Clone(e.Values)})
	}
	return out
}

func addLabels(s *metav1.LabelSelector, l map[string]string) {
	if len(l) == 0 {
		return
	}
	if s.MatchLabels == nil {
		s.MatchLabels = make(map[string]string, len(l))
	}
	for k, v := range l {
		s.MatchLabels[k] = v
	}
}

func ports(in []networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyPort {
	if in == nil {
		return nil
	}
	out := make([]networkingv1.NetworkPolicyPort, 0, len(in))
	for _, p := range in {
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: p.Protocol, Port: p.Port, EndPort: p.EndPort})
	}
	return out
}
