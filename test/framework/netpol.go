package framework

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The local cluster's NetworkPolicy engine: upstream's
// sigs.k8s.io/kube-network-policies, built by hack/build-tools.sh from the
// version hack/tools/netpol/go.mod pins (TestNetworkPolicyEngineImage
// checks the tag) and packed under upstream's image name by `make images`.
const (
	NetworkPolicyEngineImage = "registry.k8s.io/networking/kube-network-policies:v0.8.0"
	networkPolicyEngineName  = "kube-network-policies"
	// networkPolicyQueue is the nfqueue the engine reads (its
	// --nfqueue-id); the node's INPUT guard sends to the same queue.
	networkPolicyQueue = 100
	// networkPolicyTable is the nftables table the engine owns (inet
	// family); it removes it when it stops, and teardown when it could not.
	networkPolicyTable = "kube-network-policies"
)

// deployNetworkPolicyEngine runs the engine as a provider would: a
// privileged hostNetwork DaemonSet in kube-system with upstream's
// least-privilege ClusterRole (install.yaml of v0.8.0), started once the
// node is Ready and before any test pod. It is ready when its nftables
// table exists: the engine writes it only after its informers synced.
//
// Flags, and why:
//   - --disable-nri: the node's containerd (Debian's 1.6) has no NRI, so
//     the engine learns a pod's IP from the API. Until the kubelet has
//     published it (a fraction of a second after the sandbox starts), a new
//     pod's packets are not in the engine's pod set and are not evaluated:
//     upstream's documented race (kubernetes/kubernetes#85966), closed by
//     NRI on containerd 1.7 and later. docs/security.md says so.
//   - no --fail-open: if the engine stops, queued packets are dropped, not
//     passed.
func (n *Node) deployNetworkPolicyEngine(ctx context.Context) error {
	objs := networkPolicyEngineObjects()
	for _, o := range objs {
		if err := createObject(ctx, n.c.Client, o); err != nil {
			return fmt.Errorf("creating the NetworkPolicy engine's %T: %w", o, err)
		}
	}
	return nil
}

// networkPolicyEngineReady says whether the engine runs on this node and
// has written its rules.
func (n *Node) networkPolicyEngineReady(ctx context.Context) error {
	pods, err := n.c.Client.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		LabelSelector: "app=" + networkPolicyEngineName, FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no %s pod on %s yet", networkPolicyEngineName, n.Name)
	}
	if p := pods.Items[0]; p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("%s pod %s is %s", networkPolicyEngineName, p.Name, p.Status.Phase)
	}
	if out, err := exec.Command("nft", "list", "table", "inet", networkPolicyTable).CombinedOutput(); err != nil {
		return fmt.Errorf("nft list table inet %s: %v: %s", networkPolicyTable, err, out)
	}
	return nil
}

// guardNodeInput sends every new connection from the pod bridge to this
// machine itself (the node IP, the bridge's gateway address, and through
// kube-proxy's DNAT the management apiserver's Service IP) to the engine's
// queue. The engine hooks POSTROUTING only, which locally delivered packets
// never pass: without this, a pod's egress policy would not stop it from
// reaching the kubelet or the management apiserver on the node. The engine
// judges these packets by the same policies: the source pod's egress rules
// (a destination that is no pod matches only an ipBlock) and, as the node
// is no pod, no ingress rules. Installed once the engine reads its queue:
// packets queued to nobody are dropped.
func (st *nodeState) guardNodeInput() error {
	chain := st.inputChain()
	for _, args := range [][]string{
		{"-N", chain},
		{"-A", chain, "-m", "conntrack", "--ctstate", "NEW", "-j", "NFQUEUE", "--queue-num", strconv.Itoa(networkPolicyQueue)},
		{"-I", "INPUT", "-i", st.Bridge, "-j", chain},
	} {
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "filter"}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func (st *nodeState) inputChain() string {
	return "CAPN-IN-" + strings.ToUpper(strings.TrimPrefix(st.Name, "capn-node-"))
}

// removeNetworkPolicyTable deletes the engine's table if it is still
// there (the engine was killed before its own clean-up): its rules queue
// pod traffic to a queue nobody reads, which would drop it.
func removeNetworkPolicyTable() error {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	if exec.Command("nft", "list", "table", "inet", networkPolicyTable).Run() != nil {
		return nil
	}
	if out, err := exec.Command("nft", "delete", "table", "inet", networkPolicyTable).CombinedOutput(); err != nil {
		return fmt.Errorf("nft delete table inet %s: %v: %s", networkPolicyTable, err, out)
	}
	return nil
}

func networkPolicyEngineObjects() []runtime.Object {
	const ns, name = metav1.NamespaceSystem, networkPolicyEngineName
	labels := map[string]string{"app": name}
	return []runtime.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list", "watch"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						HostNetwork:                   true,
						ServiceAccountName:            name,
						TerminationGracePeriodSeconds: ptr.To[int64](10),
						Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						PriorityClassName:             "system-node-critical",
						Containers: []corev1.Container{{
							Name:            name,
							Image:           NetworkPolicyEngineImage,
							ImagePullPolicy: corev1.PullNever,
							Args: []string{
								"--hostname-override=$(NODE_NAME)", "--v=1", "--disable-nri",
								"--nfqueue-id=" + strconv.Itoa(networkPolicyQueue),
								// Its metrics on loopback only, never on
								// every address.
								"--metrics-bind-address=127.0.0.1:9080",
							},
							Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
								FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
							SecurityContext: &corev1.SecurityContext{
								Privileged:   ptr.To(true),
								Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
							},
						}},
					},
				},
			},
		},
	}
}

// createObject creates o, or leaves an existing one as it is (a second
// node of the same cluster).
func createObject(ctx context.Context, c kubernetes.Interface, o runtime.Object) error {
	var err error
	switch t := o.(type) {
	case *rbacv1.ClusterRole:
		_, err = c.RbacV1().ClusterRoles().Create(ctx, t, metav1.CreateOptions{})
	case *rbacv1.ClusterRoleBinding:
		_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, t, metav1.CreateOptions{})
	case *corev1.ServiceAccount:
		_, err = c.CoreV1().ServiceAccounts(t.Namespace).Create(ctx, t, metav1.CreateOptions{})
	case *appsv1.DaemonSet:
		_, err = c.AppsV1().DaemonSets(t.Namespace).Create(ctx, t, metav1.CreateOptions{})
	default:
		return fmt.Errorf("no create for %T", o)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
