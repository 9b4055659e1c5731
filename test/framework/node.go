package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOptions says how to run a node: containerd + kubelet + kube-proxy on
// this machine, registered with a Cluster.
type NodeOptions struct {
	Kubelet, KubeProxy string
	// KubeRouter is the NetworkPolicy engine's binary (netpol.go); empty
	// means $KUBE_ROUTER, which the Makefile sets beside the others.
	KubeRouter string
	// Images are docker-archive tarballs imported into the node's
	// containerd before kubelet starts: no registry is reachable, so every
	// image a pod uses (and the pause image) must come from here.
	Images []string
	// PodSubnet is the node's share of the cluster's pod CIDR, served by
	// the CNI bridge. Default: the first /24 of the pod CIDR.
	PodSubnet string
	// ReadyTimeout bounds each start step and the wait for the Node to be
	// Ready (default 2m).
	ReadyTimeout time.Duration
}

// Node is a real node on this machine: a private containerd (runc,
// overlayfs, CNI bridge), a kubelet, a kube-proxy in iptables mode and a
// NetworkPolicy engine (netpol.go). Only
// one runs per machine at a time (kube-proxy's chains are global); StartNode
// waits for a node of another test process to go away.
type Node struct {
	Name string
	IP   net.IP
	// Dir holds everything the node writes that can be placed: containerd
	// root and state, kubelet root, pod logs, CNI config and IPAM data.
	Dir string
	// ContainerdSocket is the private containerd's address, for ctr.
	ContainerdSocket string
	// Bridge is the CNI bridge (pod gateway); PodSubnet its network.
	Bridge, PodSubnet string
	// Ready is the time from StartNode to the Node's Ready condition.
	Ready time.Duration

	Containerd, Kubelet, KubeProxy *Process
	// NetworkPolicy is the NetworkPolicy engine (netpol.go).
	NetworkPolicy *Process

	c  *Cluster
	st *nodeState
	// afterTeardown runs, last first, once the node is gone: for host
	// state its pods used (hostPath volumes).
	afterTeardown []func() error
}

// AfterTeardown registers f to run at cleanup after the node's teardown,
// when no container can use what f removes any more.
func (n *Node) AfterTeardown(f func() error) {
	n.afterTeardown = append(n.afterTeardown, f)
}

// StartNode starts a node for c and waits until the Node is Ready. At test
// cleanup everything it created is removed (see teardown), so a later run
// starts clean; a node left behind by a killed test is removed by the next
// StartNode.
func (c *Cluster) StartNode(t TB, opts NodeOptions) *Node {
	t.Helper()
	begin := time.Now()
	if err := opts.defaults(c); err != nil {
		t.Fatalf("NodeOptions: %v", err)
	}
	for _, tool := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "iptables-save", "iptables-restore", "ip", "ipset"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install the Debian packages containerd runc containernetworking-plugins iptables iproute2 ipset (hack/install-deps.sh)", tool)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			t.Fatalf("CNI plugin %s missing in %s: install containernetworking-plugins", plugin, cniBinDir)
		}
	}

	lockNodes(t, opts.ReadyTimeout+5*time.Minute)
	reapStaleNodes(t)

	id := randomID()
	n := &Node{Name: "capn-node-" + id, IP: c.NodeIP, Dir: filepath.Join(c.Dir, "node-"+id),
		Bridge: "capn" + id, PodSubnet: opts.PodSubnet, c: c}
	n.ContainerdSocket = filepath.Join(n.Dir, "containerd.sock")
	st, err := newNodeState(n, c.ServiceCIDR)
	if err != nil {
		t.Fatalf("recording node state: %v", err)
	}
	n.st = st
	// Registered before anything starts, so it runs after every process
	// of the node has been stopped by its own cleanup.
	t.Cleanup(func() {
		for _, err := range teardown(st) {
			t.Errorf("node teardown: %v", err)
		}
		for i := len(n.afterTeardown) - 1; i >= 0; i-- {
			if err := n.afterTeardown[i](); err != nil {
				t.Errorf("after node teardown: %v", err)
			}
		}
	})

	if err := n.writeConfigs(); err != nil {
		t.Fatalf("writing node configuration: %v", err)
	}
	if err := st.sinkServiceCIDR(); err != nil {
		t.Fatalf("service CIDR sink: %v", err)
	}
	if err := st.isolatePods(); err != nil {
		t.Fatalf("isolating pods: %v", err)
	}

	// Belt and braces for the registry sink (writeRegistryHosts): any
	// HTTP(S) request containerd makes goes to the sink as its proxy, so no
	// registry host is even resolved.
	sink := "http://" + RegistrySink
	proxyEnv := []string{"HTTP_PROXY=" + sink, "HTTPS_PROXY=" + sink, "http_proxy=" + sink, "https_proxy=" + sink, "NO_PROXY=", "no_proxy="}
	n.Containerd = StartProcessEnv(t, n.Dir, "containerd", "containerd", proxyEnv, "--config", filepath.Join(n.Dir, "containerd.toml"))
	n.waitFor(t, n.Containerd, opts.ReadyTimeout, "containerd", func() error { _, err := n.ctr("version"); return err })
	// Runs after kubelet has stopped and before containerd stops: kubelet
	// would restart whatever is removed under it, and ctr needs containerd.
	t.Cleanup(func() {
		if err := n.removeContainers(); err != nil {
			t.Errorf("removing the node's containers: %v", err)
		}
	})
	for _, img := range opts.Images {
		importStart := time.Now()
		if out, err := n.ctr("images", "import", img); err != nil {
			t.Fatalf("importing %s: %v\n%s", img, err, out)
		}
		t.Logf("node: imported %s in %s", filepath.Base(img), time.Since(importStart).Round(time.Millisecond))
	}

	ctx, cancel := context.WithTimeout(context.Background(), opts.ReadyTimeout)
	defer cancel()
	if err := n.bindKubeletAPIAdmin(ctx); err != nil {
		t.Fatalf("binding %s to system:kubelet-api-admin: %v", KubeletClientName, err)
	}

	kubeletArgs, healthz, err := n.kubeletArgs()
	if err != nil {
		t.Fatalf("kubelet configuration: %v", err)
	}
	n.Kubelet = StartProcess(t, n.Dir, "kubelet", opts.Kubelet, kubeletArgs...)
	if _, err := n.Kubelet.WaitHealthy(http.DefaultClient, healthz, opts.ReadyTimeout); err != nil {
		t.Fatal(err)
	}
	proxyArgs, healthz, err := n.kubeProxyArgs()
	if err != nil {
		t.Fatalf("kube-proxy configuration: %v", err)
	}
	n.KubeProxy = StartProcess(t, n.Dir, "kube-proxy", opts.KubeProxy, proxyArgs...)
	if _, err := n.KubeProxy.WaitHealthy(http.DefaultClient, healthz, opts.ReadyTimeout); err != nil {
		t.Fatal(err)
	}

	n.waitFor(t, n.Kubelet, opts.ReadyTimeout, "node "+n.Name+" Ready", func() error {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("Ready=%s: %s", cond.Status, cond.Message)
			}
		}
		return fmt.Errorf("no Ready condition yet")
	})
	// The NetworkPolicy engine (netpol.go), before any test pod: every
	// pod the tests start runs under enforcement.
	if err := n.grantNetworkPolicyEngine(ctx); err != nil {
		t.Fatalf("RBAC of the NetworkPolicy engine: %v", err)
	}
	engineKubeconfig, err := n.engineKubeconfig()
	if err != nil {
		t.Fatalf("NetworkPolicy engine configuration: %v", err)
	}
	n.NetworkPolicy = StartProcess(t, n.Dir, networkPolicyEngineName, opts.KubeRouter, n.networkPolicyEngineArgs(engineKubeconfig)...)
	n.waitFor(t, n.NetworkPolicy, opts.ReadyTimeout, "the NetworkPolicy engine on "+n.Name, networkPolicyEngineReady)
	n.Ready = time.Since(begin)
	t.Logf("node %s Ready %s after StartNode (dir %s, bridge %s, pods %s)", n.Name, n.Ready.Round(time.Millisecond), n.Dir, n.Bridge, n.PodSubnet)
	return n
}

func (o *NodeOptions) defaults(c *Cluster) error {
	if o.KubeRouter == "" {
		o.KubeRouter = os.Getenv("KUBE_ROUTER")
	}
	if o.Kubelet == "" || o.KubeProxy == "" || o.KubeRouter == "" {
		return fmt.Errorf("kubelet, kube-proxy and kube-router binaries are required (KUBE_ROUTER: hack/build-tools.sh --print-path kube-router)")
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	_, podNet, err := net.ParseCIDR(c.PodCIDR)
	if err != nil {
		return fmt.Errorf("cluster pod CIDR: %w", err)
	}
	if o.PodSubnet == "" {
		o.PodSubnet = (&net.IPNet{IP: podNet.IP, Mask: net.CIDRMask(24, 32)}).String()
	}
	ip, _, err := net.ParseCIDR(o.PodSubnet)
	if err != nil || !podNet.Contains(ip) {
		return fmt.Errorf("pod subnet %q is not inside the cluster's pod CIDR %s", o.PodSubnet, c.PodCIDR)
	}
	return nil
}

// waitFor polls check every 200ms until it succeeds, p exits or timeout.
func (n *Node) waitFor(t TB, p *Process, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if exited, perr := p.Exited(); exited {
			t.Fatalf("%s exited while waiting for %s: %v (last: %v)", p.Name, what, perr, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bindKubeletAPIAdmin lets kube-apiserver's kubelet client use the kubelet
// API (logs, exec, port-forward); the kubelet authorizes it by webhook.
func (n *Node) bindKubeletAPIAdmin(ctx context.Context) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "capn-e2e:" + KubeletClientName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KubeletClientName}},
	}
	_, err := n.c.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
