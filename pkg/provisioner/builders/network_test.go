package builders

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/profiles"
	"capn.dev/capn/pkg/tenant/names"
)

// Red-team finding 1: the tenant apiserver's egress was open, so a tenant
// could aim nodes/proxy at any address. No rule may admit every address on
// every port, and none but DNS's may admit every address.
func TestAPIServerEgressIsAnAllowList(t *testing.T) {
	for name, c := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := All(c.nc, c.p)
			require.NoError(t, err)
			np := find[*networkingv1.NetworkPolicy](objs, provisioner.APIServerName)
			require.NotNil(t, np)
			require.NotEmpty(t, np.Spec.Egress)
			for _, rule := range np.Spec.Egress {
				if len(rule.To) > 0 {
					continue
				}
				require.NotEmpty(t, rule.Ports, "an egress rule without to and ports admits everything")
				for _, port := range rule.Ports {
					assert.Equal(t, dnsPort, port.Port.IntValue(), "only DNS may go to any address")
				}
			}
		})
	}
}

func TestAPIServerEgressProviderListAndEtcdEndpoints(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/external-etcd/input.yaml")
	nc.Spec.Etcd.External.Endpoints = []string{"https://192.0.2.10:2379", "https://etcd.example.com:2379", "https://[2001:db8::1]", "https://192.0.2.10:2379"}
	p := defaultParams
	p.Network = Network{
		APIServerEgressCIDRs:      []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		APIServerEgressNamespaces: []string{"etcd-pools"},
	}
	rules := apiServerEgress(nc, p)
	var blocks []string
	var namespaces []string
	for _, r := range rules {
		for _, peer := range r.To {
			if peer.IPBlock != nil {
				port := 0
				if len(r.Ports) == 1 {
					port = r.Ports[0].Port.IntValue()
				}
				blocks = append(blocks, peer.IPBlock.CIDR+":"+strconv.Itoa(port))
			}
			if peer.NamespaceSelector != nil && peer.PodSelector == nil {
				namespaces = append(namespaces, peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
			}
		}
	}
	// The host name is left to the provider's list; the duplicate counts once.
	assert.Equal(t, []string{"192.0.2.10/32:2379", "2001:db8::1/128:2379", "198.51.100.0/24:0"}, blocks)
	assert.Equal(t, []string{"etcd-pools"}, namespaces)
}

// Shared: the apiserver reaches its own syncer and workload namespace, and
// the workload namespace admits it; nothing names another tenant.
func TestSharedAPIServerReachesOwnWorkloads(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
	require.Equal(t, v1alpha1.DataPlaneShared, nc.Spec.DataPlane.Mode)
	var sawWorkloads bool
	for _, r := range apiServerEgress(nc, defaultParams) {
		for _, peer := range r.To {
			if peer.NamespaceSelector != nil && peer.PodSelector == nil {
				assert.Equal(t, provisioner.WorkloadNamespace(nc), peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
				sawWorkloads = true
			}
		}
	}
	assert.True(t, sawWorkloads)
	objs := WorkloadNamespace(nc, defaultParams)
	np := find[*networkingv1.NetworkPolicy](objs, WorkloadPolicyName)
	require.NotNil(t, np)
	require.Len(t, np.Spec.Ingress, 1)
	var fromAPIServer bool
	for _, peer := range np.Spec.Ingress[0].From {
		if peer.NamespaceSelector != nil {
			assert.Equal(t, provisioner.NamespaceOf(nc, defaultParams.Addresses()), peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
			fromAPIServer = true
		}
	}
	assert.True(t, fromAPIServer, "webhooks and aggregated APIs in the workload namespace need the tenant apiserver's ingress")
}

func TestSyncerEgressToManagementAPIServer(t *testing.T) {
	assert.Equal(t, []networkingv1.NetworkPolicyEgressRule{{Ports: tcpPorts(443, 6443)}}, managementAPIServerEgress(Params{}))
	p := Params{Network: Network{ManagementAPIServer: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:34567")}}}
	got := managementAPIServerEgress(p)
	require.Len(t, got, 1)
	assert.Equal(t, "10.0.0.5/32", got[0].To[0].IPBlock.CIDR)
	assert.Equal(t, 34567, got[0].Ports[0].Port.IntValue())
}

// Finding 2: a Shared tenant's apiserver presents its client certificate
// to webhooks from revision 5, and only then does its syncer require one,
// so a tenant whose apiserver has not rolled keeps creating Services.
func TestWebhookClientCertFollowsTheAPIServerRevision(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
	for _, rev := range []int{WebhookClientCertTemplateRevision - 1, WebhookClientCertTemplateRevision} {
		p := defaultParams
		p.Revisions = TemplateRevisions{v1alpha1.ComponentAPIServer: rev}
		objs, err := All(nc, p)
		require.NoError(t, err)
		want := rev >= WebhookClientCertTemplateRevision
		cm := find[*corev1.ConfigMap](objs, provisioner.APIServerConfigName)
		require.NotNil(t, cm)
		_, hasAdmission := cm.Data[profiles.FileAdmissionConfig]
		assert.Equal(t, want, hasAdmission, "revision %d: admission config", rev)
		api := find[*appsv1.Deployment](objs, provisioner.APIServerName)
		require.NotNil(t, api)
		assert.Equal(t, want, slices.ContainsFunc(api.Spec.Template.Spec.Containers[0].Args, func(a string) bool {
			return strings.HasPrefix(a, "--admission-control-config-file=")
		}), "revision %d: apiserver flag", rev)
		syncer := find[*appsv1.Deployment](objs, provisioner.SyncerName)
		require.NotNil(t, syncer)
		assert.Equal(t, want, slices.Contains(syncer.Spec.Template.Spec.Containers[0].Args, "--"+cmdsyncer.FlagWebhookRequireClientCert+"=true"), "revision %d: syncer flag", rev)
	}
}

// NetworkPolicies add up: while a baseline policy selected every pod of
// the workload namespace and allowed the whole namespace in, a tenant's
// default-deny changed nothing. A pod the syncer marks isolated is
// selected by no baseline rule that admits the tenant's own pods, for
// that direction; an unmarked pod still is.
func TestWorkloadBaselineStepsBackFromIsolatedPods(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
	objs := WorkloadNamespace(nc, defaultParams)
	withinNamespace := func(marked map[string]string, dir networkingv1.PolicyType) bool {
		for _, o := range objs {
			np, ok := o.(*networkingv1.NetworkPolicy)
			if !ok || !slices.Contains(np.Spec.PolicyTypes, dir) {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			require.NoError(t, err)
			if !sel.Matches(labels.Set(marked)) {
				continue
			}
			var peers []networkingv1.NetworkPolicyPeer
			for _, r := range np.Spec.Ingress {
				peers = append(peers, r.From...)
			}
			for _, r := range np.Spec.Egress {
				peers = append(peers, r.To...)
			}
			for _, p := range peers {
				if p.NamespaceSelector == nil && p.IPBlock == nil {
					return true
				}
			}
		}
		return false
	}
	assert.True(t, withinNamespace(nil, networkingv1.PolicyTypeIngress))
	assert.True(t, withinNamespace(nil, networkingv1.PolicyTypeEgress))
	assert.False(t, withinNamespace(map[string]string{names.IngressIsolatedLabel: "true"}, networkingv1.PolicyTypeIngress))
	assert.True(t, withinNamespace(map[string]string{names.IngressIsolatedLabel: "true"}, networkingv1.PolicyTypeEgress))
	assert.False(t, withinNamespace(map[string]string{names.EgressIsolatedLabel: "true"}, networkingv1.PolicyTypeEgress))
	assert.True(t, withinNamespace(map[string]string{names.EgressIsolatedLabel: "true"}, networkingv1.PolicyTypeIngress))
}

// The syncer reads each host kubelet's resource metrics at the endpoint
// the provider names (one address, its port); none named, port 10250 at
// any address.
func TestSyncerEgressToKubelets(t *testing.T) {
	assert.Equal(t, []networkingv1.NetworkPolicyEgressRule{{Ports: tcpPorts(10250)}}, kubeletEgress(Params{}))
	p := Params{Network: Network{Kubelets: []netip.AddrPort{
		netip.MustParseAddrPort("10.0.0.7:10250"), netip.MustParseAddrPort("[2001:db8::7]:10255")}}}
	got := kubeletEgress(p)
	require.Len(t, got, 2)
	assert.Equal(t, "10.0.0.7/32", got[0].To[0].IPBlock.CIDR)
	assert.Equal(t, 10250, got[0].Ports[0].Port.IntValue())
	assert.Equal(t, "2001:db8::7/128", got[1].To[0].IPBlock.CIDR)
	assert.Equal(t, 10255, got[1].Ports[0].Port.IntValue())

	nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
	np := syncerNetworkPolicy(nc, p)
	for _, want := range got {
		assert.Contains(t, np.Spec.Egress, want)
	}
}

// The tenant's metrics-server, a pod of the workload namespace, reaches
// its syncer on the metrics port and on no other: the kubelet API (exec,
// logs) and the Service webhook stay the tenant apiserver's.
func TestWorkloadsReachTheSyncerOnTheMetricsPortOnly(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
	wns := provisioner.WorkloadNamespace(nc)
	np := syncerNetworkPolicy(nc, defaultParams)
	var fromWorkloads []networkingv1.NetworkPolicyIngressRule
	for _, r := range np.Spec.Ingress {
		if slices.ContainsFunc(r.From, func(p networkingv1.NetworkPolicyPeer) bool {
			return p.NamespaceSelector != nil && p.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] == wns
		}) {
			fromWorkloads = append(fromWorkloads, r)
		}
	}
	require.Len(t, fromWorkloads, 1)
	assert.Equal(t, tcpPorts(cmdsyncer.KubeletMetricsPort), fromWorkloads[0].Ports)
	require.Len(t, fromWorkloads[0].From, 1)
	assert.Nil(t, fromWorkloads[0].From[0].PodSelector, "every pod of the workload namespace: metrics-server is the tenant's")

	base := find[*networkingv1.NetworkPolicy](WorkloadNamespace(nc, defaultParams), WorkloadPolicyName)
	require.NotNil(t, base)
	cpNamespace := provisioner.NamespaceOf(nc, defaultParams.Addresses())
	var toSyncer bool
	for _, r := range base.Spec.Egress {
		for _, peer := range r.To {
			if peer.PodSelector == nil || peer.PodSelector.MatchLabels[v1alpha1.ComponentLabel] != v1alpha1.ComponentSyncer {
				continue
			}
			toSyncer = true
			assert.Equal(t, cpNamespace, peer.NamespaceSelector.MatchLabels[corev1.LabelMetadataName])
			assert.Equal(t, nc.Name, peer.PodSelector.MatchLabels[v1alpha1.ClusterLabel])
			assert.Equal(t, tcpPorts(cmdsyncer.KubeletMetricsPort), r.Ports)
		}
	}
	assert.True(t, toSyncer, "the workload baseline lets no pod reach the syncer's metrics")
}
