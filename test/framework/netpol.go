package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The local cluster's NetworkPolicy engine is kube-router's network policy
// controller (github.com/cloudnativelabs/kube-router/v2, the version
// hack/tools/kube-router/go.mod pins), alone: no routing, no service proxy,
// no CNI. It runs on the node as a host process beside kube-proxy, the way
// this node runs kube-proxy, with its own certificate and a read-only
// ClusterRole.
//
// Why not sigs.k8s.io/kube-network-policies, which the issue prefers: it
// judges packets through an nftables `queue` expression, and this
// machine's kernel has no nft_queue (and cannot load modules), so its rules
// are refused ("Could not process rule: No such file or directory") and it
// enforces nothing. kube-router works with iptables and ipset, which the
// kernel has. Its reported v2.1.0 flaws are in IPv6 policies (its ipset
// rules for IPv6 never matched; fixed in v2.1.1) and its container image's
// iptables mode; this cluster is IPv4 only and runs the host's iptables.
const (
	networkPolicyEngineName = "kube-router"
	// networkPolicyEngineUser is its client certificate's name, bound to
	// networkPolicyEngineName's ClusterRole.
	networkPolicyEngineUser = "system:capn-e2e:kube-router"
	// networkPolicyInputChain is the chain kube-router hooks into INPUT:
	// its policies also judge a pod's connections to the node itself.
	networkPolicyInputChain = "KUBE-ROUTER-INPUT"
)

// networkPolicyEngineArgs are kube-router's flags: the network policy
// controller only, its health and metrics servers off (nothing listens on
// an address other than loopback), and no CNI configuration written.
func (n *Node) networkPolicyEngineArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + n.Name,
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--run-loadbalancer=false",
		"--enable-cni=false", "--enable-ipv4=true", "--enable-ipv6=false",
		"--service-cluster-ip-range=" + n.c.ServiceCIDR,
		"--health-port=0", "--metrics-port=0",
		"--iptables-sync-period=1m", "--ipvs-sync-period=1m",
		"--v=1",
	}
}

// grantNetworkPolicyEngine gives the engine's identity read access to
// what its controller watches.
func (n *Node) grantNetworkPolicyEngine(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "capn-e2e:" + networkPolicyEngineName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces", "pods", "services", "endpoints", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if _, err := n.c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: networkPolicyEngineUser}},
	}
	if _, err := n.c.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// networkPolicyEngineReady says whether the engine has hooked its chains:
// it does so once its informers synced, before it judges any pod.
func networkPolicyEngineReady() error {
	out, err := exec.Command("iptables", "-w", "-t", "filter", "-S", "INPUT").CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables -S INPUT: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "-j "+networkPolicyInputChain) {
		return fmt.Errorf("no jump to %s in INPUT yet", networkPolicyInputChain)
	}
	return nil
}

// listIPSets lists the ipsets on this machine, if ipset is installed.
func listIPSets() []string {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// destroyNewIPSets destroys the engine's sets (KUBE- prefixed) that were
// not there before. It runs after the chains that use them are gone: a set
// that a rule still names cannot be destroyed.
func destroyNewIPSets(before []string) []error {
	var errs []error
	for _, set := range listIPSets() {
		if !strings.HasPrefix(set, "KUBE-") || slices.Contains(before, set) {
			continue
		}
		if out, err := exec.Command("ipset", "destroy", set).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ipset destroy %s: %v: %s", set, err, out))
		}
	}
	return errs
}

// engineKubeconfig writes the engine's kubeconfig into the node's dir, so
// its command line names the node's dir and reapStaleNodes finds it.
func (n *Node) engineKubeconfig() (string, error) {
	client, err := n.c.CA.ClientCert(networkPolicyEngineUser)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(n.c.certKubeconfig(networkPolicyEngineName, client))
	if err != nil {
		return "", err
	}
	path := n.path(networkPolicyEngineName + ".kubeconfig")
	return path, os.WriteFile(path, b, 0o600)
}

// NetworkPolicyJudges says whether the engine has hooked the pod with this
// IP: until it has, a new pod's connections are not judged (the engine
// learns a pod's IP from the API once the kubelet published it).
func (n *Node) NetworkPolicyJudges(podIP string) error {
	out, err := exec.Command("iptables", "-w", "-t", "filter", "-S", networkPolicyInputChain).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables -S %s: %v: %s", networkPolicyInputChain, err, out)
	}
	if !strings.Contains(string(out), "-s "+podIP+"/32 ") {
		return fmt.Errorf("no rule for %s in %s yet", podIP, networkPolicyInputChain)
	}
	return nil
}
