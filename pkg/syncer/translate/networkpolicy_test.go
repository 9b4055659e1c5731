package translate

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"capn.dev/capn/pkg/tenant/names"
)

// policyContext is the tenant every NetworkPolicy golden case runs in:
// three of its pods, one in the block's exception.
func policyContext() PolicyContext {
	web := PodLabels(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", UID: "pod-a", Labels: map[string]string{"app": "web"}}},
		Context{NamespaceLabels: map[string]string{corev1.LabelMetadataName: "shop"}})
	return PolicyContext{WorkloadNamespace: "capn-w-tenant", Pods: []PolicyPod{
		{UID: "pod-b", IP: netip.MustParseAddr("10.244.0.12")},
		{UID: "pod-a", IP: netip.MustParseAddr("10.244.0.11"), Labels: web, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}},
		{UID: "pod-excepted", IP: netip.MustParseAddr("10.244.1.5")},
	}}
}

type policyGolden struct {
	Notes  []string                    `json:"notes,omitempty"`
	Policy *networkingv1.NetworkPolicy `json:"policy"`
}

func TestNetworkPolicyGolden(t *testing.T) {
	eachGolden(t, "networkpolicy", func(t *testing.T, tenant *networkingv1.NetworkPolicy) any {
		host, notes := NetworkPolicy(tenant, policyContext())
		return policyGolden{Notes: notes, Policy: host}
	})
}

// The translation's promise, checked against the labels PodLabels
// writes: a translated selector picks exactly the host pods of the
// tenant pods the tenant's selector picks, across namespaces, and a peer
// never selects a pod of another tenant namespace by pod labels alone.
func TestNetworkPolicySelectsWhatTheTenantSelects(t *testing.T) {
	nsLabels := map[string]map[string]string{
		"shop":  {corev1.LabelMetadataName: "shop", "team": "a"},
		"other": {corev1.LabelMetadataName: "other"},
	}
	pod := func(ns, name string, l map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Labels: l}}
	}
	pods := []*corev1.Pod{
		pod("shop", "web", map[string]string{"app": "web"}),
		pod("shop", "client", map[string]string{"role": "client"}),
		pod("shop", "batch", map[string]string{"role": "client", "tier": "batch"}),
		pod("other", "client", map[string]string{"role": "client"}),
		pod("other", "db", map[string]string{"app": "db"}),
	}
	hostLabels := map[string]labels.Set{}
	for _, p := range pods {
		hostLabels[p.Namespace+"/"+p.Name] = labels.Set(PodLabels(p, Context{NamespaceLabels: nsLabels[p.Namespace]}))
	}
	selected := func(s *metav1.LabelSelector) []string {
		sel, err := metav1.LabelSelectorAsSelector(s)
		require.NoError(t, err)
		var out []string
		for _, p := range pods {
			if sel.Matches(hostLabels[p.Namespace+"/"+p.Name]) {
				out = append(out, p.Namespace+"/"+p.Name)
			}
		}
		return out
	}
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p", UID: "np"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{
					MatchLabels:      map[string]string{"role": "client"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"batch"}}},
				}},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "other"}},
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
				{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
			}}},
		},
	}
	host, _ := NetworkPolicy(policy, PolicyContext{WorkloadNamespace: "w"})
	assert.Equal(t, []string{"shop/web"}, selected(&host.Spec.PodSelector))
	from := host.Spec.Ingress[0].From
	assert.Equal(t, []string{"shop/client"}, selected(from[0].PodSelector), "pod labels alone: the policy's namespace only")
	assert.Equal(t, []string{"other/db"}, selected(from[1].PodSelector))
	assert.Equal(t, []string{"other/client", "other/db"}, selected(from[2].PodSelector))
}

func TestIsolatedBy(t *testing.T) {
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Labels: map[string]string{"app": "web"}}}
	policy := func(ns string, sel map[string]string, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types}}
	}
	for _, tc := range []struct {
		name            string
		policies        []*networkingv1.NetworkPolicy
		ingress, egress bool
	}{
		{"none", nil, false, false},
		{"another namespace", []*networkingv1.NetworkPolicy{policy("other", nil, networkingv1.PolicyTypeIngress)}, false, false},
		{"another pod", []*networkingv1.NetworkPolicy{policy("shop", map[string]string{"app": "db"}, networkingv1.PolicyTypeIngress)}, false, false},
		{"all pods, ingress", []*networkingv1.NetworkPolicy{policy("shop", nil, networkingv1.PolicyTypeIngress)}, true, false},
		{"by label, egress", []*networkingv1.NetworkPolicy{policy("shop", map[string]string{"app": "web"}, networkingv1.PolicyTypeEgress)}, false, true},
		{"no types: ingress", []*networkingv1.NetworkPolicy{policy("shop", nil)}, true, false},
		{"both", []*networkingv1.NetworkPolicy{policy("shop", nil, networkingv1.PolicyTypeIngress), policy("shop", nil, networkingv1.PolicyTypeEgress)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, e := IsolatedBy(web, tc.policies)
			assert.Equal(t, tc.ingress, i, "ingress")
			assert.Equal(t, tc.egress, e, "egress")
		})
	}
}

// A host selector built by the translation may only name capn's own keys:
// a tenant key as it is would select the provider's pods (finding 8).
func TestNetworkPolicyNamesOnlyCapnKeys(t *testing.T) {
	dirs, err := filepath.Glob("testdata/networkpolicy/*/input.yaml")
	require.NoError(t, err)
	for _, f := range dirs {
		in, err := os.ReadFile(f)
		require.NoError(t, err)
		var tenant networkingv1.NetworkPolicy
		require.NoError(t, yaml.UnmarshalStrict(in, &tenant))
		host, _ := NetworkPolicy(&tenant, policyContext())
		sels := []*metav1.LabelSelector{&host.Spec.PodSelector}
		for _, r := range host.Spec.Ingress {
			require.NotEmpty(t, r.From, "%s: an empty peer list is every source", f)
			for _, p := range r.From {
				require.Nil(t, p.IPBlock, f)
				require.Nil(t, p.NamespaceSelector, "%s: a peer stays in the workload namespace", f)
				sels = append(sels, p.PodSelector)
			}
		}
		for _, r := range host.Spec.Egress {
			require.NotEmpty(t, r.To, "%s: an empty peer list is every destination", f)
			for _, p := range r.To {
				require.Nil(t, p.IPBlock, f)
				require.Nil(t, p.NamespaceSelector, f)
				sels = append(sels, p.PodSelector)
			}
		}
		for _, s := range sels {
			for k := range s.MatchLabels {
				assert.True(t, names.CapnOwnedLabel(k), "%s: %q", f, k)
			}
			for _, e := range s.MatchExpressions {
				assert.True(t, names.CapnOwnedLabel(e.Key), "%s: %q", f, e.Key)
			}
		}
	}
}

// A rule whose ports are all named ports that none of the pods it applies
// to has matches nothing; one with a port that resolves, or a number,
// keeps its peers. Ingress resolves against the policy's pods, egress
// against the rule's destinations.
func TestNamedPortsThatResolveNowhereMatchNothing(t *testing.T) {
	named := func(name string) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString(name))}}
	}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	for _, tc := range []struct {
		name    string
		spec    networkingv1.NetworkPolicySpec
		nothing bool
	}{
		{"ingress, the selected pod has it", networkingv1.NetworkPolicySpec{PodSelector: *web,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: named("http")}}}, false},
		{"ingress, no selected pod has it", networkingv1.NetworkPolicySpec{PodSelector: *web,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: named("metrics")}}}, true},
		{"ingress, only an unselected pod has it", networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: named("http")}}}, true},
		{"ingress, a number beside it", networkingv1.NetworkPolicySpec{PodSelector: *web,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: append(named("metrics"), networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(80))})}}}, false},
		{"egress, a destination has it", networkingv1.NetworkPolicySpec{
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: web}}, Ports: named("http")}}}, false},
		{"egress, no destination has it", networkingv1.NetworkPolicySpec{
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: web}}, Ports: named("metrics")}}}, true},
		{"egress, UDP where the pod has TCP", networkingv1.NetworkPolicySpec{
			Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromString("http"))}}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, _ := NetworkPolicy(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p", UID: "u"}, Spec: tc.spec}, policyContext())
			var peers []networkingv1.NetworkPolicyPeer
			for _, r := range host.Spec.Ingress {
				peers = append(peers, r.From...)
			}
			for _, r := range host.Spec.Egress {
				peers = append(peers, r.To...)
			}
			require.Len(t, peers, 1)
			_, none := peers[0].PodSelector.MatchLabels[matchesNothing]
			assert.Equal(t, tc.nothing, none, "%v", peers[0].PodSelector)
		})
	}
}
