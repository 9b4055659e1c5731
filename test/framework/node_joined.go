package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// JoinedKubeletOptions say how to run a second kubelet on the node's
// machine that joins another cluster (a tenant) with a bootstrap token.
type JoinedKubeletOptions struct {
	Kubelet string
	// Name is the Node name it registers (--hostname-override); it must
	// not be the management node's.
	Name string
	// BootstrapKubeconfig is the kubelet's --bootstrap-kubeconfig
	// (endpoint, CA, bootstrap token).
	BootstrapKubeconfig []byte
	// NodeLabels are set with --node-labels (NodeRestriction allows a
	// kubelet its own labels outside the kubernetes.io namespaces).
	NodeLabels string
	// RegisterWithTaints are the Node's taints at registration.
	RegisterWithTaints []corev1.Taint
	// Timeout bounds each start step (default 2m).
	Timeout time.Duration
}

// JoinedKubelet is a kubelet that joined a cluster through TLS bootstrap,
// beside the management node on the same machine.
//
// It has its own containerd (private root, state and socket, the same
// registry sink), its own root dir, cert dir, ports, pod-log dir, and a
// cgroup root nested in the management node's, so neither kubelet ever
// sees, garbage-collects or kills the other's pods or cgroups. Its
// containerd has no CNI network: pods cannot start there and the Node
// stays NotReady (NetworkReady=false), which is enough to test TLS
// bootstrap, registration and scheduling. A second pod network beside
// the node's (bridge, IPAM, iptables isolation and their teardown while
// the node's kube-proxy keeps adding chains) is left out on purpose.
//
// One path is shared: the kubelet's device-plugin socket directory
// (/var/lib/kubelet/device-plugins) is hard-coded. The joined kubelet
// replaces the management kubelet's registration socket there; nothing
// uses device plugins on these machines, and the node's teardown removes
// the unbound socket.
type JoinedKubelet struct {
	Name string
	Dir  string
	// Kubeconfig is written by the kubelet once its client certificate is
	// issued; CertDir holds the certificate (kubelet-client-current.pem).
	Kubeconfig, CertDir string
	Containerd, Kubelet *Process

	node *Node
}

// StartJoinedKubelet starts the joined kubelet and waits for its healthz,
// not for registration: that is what the caller measures. It is stopped
// and everything it made is removed at test cleanup.
func (n *Node) StartJoinedKubelet(t TB, opts JoinedKubeletOptions) *JoinedKubelet {
	t.Helper()
	if opts.Kubelet == "" || opts.Name == "" || len(opts.BootstrapKubeconfig) == 0 {
		t.Fatalf("JoinedKubeletOptions: Kubelet, Name and BootstrapKubeconfig are required")
	}
	if opts.Name == n.Name {
		t.Fatalf("the joined kubelet's name %q is the management node's", opts.Name)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	id := randomID()
	// Under the node's dir: the node's teardown (and the reaping of a
	// killed run) finds its processes, mounts and files too.
	j := &JoinedKubelet{Name: opts.Name, Dir: n.path("joined-" + id), node: n}
	j.CertDir, j.Kubeconfig = filepath.Join(j.Dir, "pki"), filepath.Join(j.Dir, "kubelet.kubeconfig")
	// A containerd of its own, configured like the node's but with an
	// empty CNI directory.
	jn := &Node{Name: opts.Name, IP: n.IP, Dir: j.Dir, ContainerdSocket: filepath.Join(j.Dir, "containerd.sock"), c: n.c}
	cgroupRoot := n.st.CgroupRoot + "/joined-" + id
	t.Cleanup(func() {
		for _, err := range []error{killCgroup(cgroupRoot), unmountUnder(j.Dir), removeCgroups(cgroupRoot), os.RemoveAll(j.Dir)} {
			if err != nil {
				t.Errorf("joined kubelet teardown: %v", err)
			}
		}
	})
	for _, d := range []string{"cni", "pod-logs", "kubelet", "volume-plugins", "pki"} {
		if err := os.MkdirAll(jn.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&nodeState{CgroupRoot: cgroupRoot}).createCgroupRoot(); err != nil {
		t.Fatalf("creating cgroup root %s: %v", cgroupRoot, err)
	}
	if err := os.WriteFile(jn.path("containerd.toml"), []byte(jn.containerdConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := jn.writeRegistryHosts(); err != nil {
		t.Fatal(err)
	}
	bootstrap := jn.path("bootstrap.kubeconfig")
	if err := os.WriteFile(bootstrap, opts.BootstrapKubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	// The kubelet authenticates the cluster's apiserver (logs, exec) by
	// the cluster CA, which the bootstrap kubeconfig carries.
	cfg, err := clientcmd.Load(opts.BootstrapKubeconfig)
	if err != nil {
		t.Fatalf("bootstrap kubeconfig: %v", err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil || len(cfg.Clusters[kctx.Cluster].CertificateAuthorityData) == 0 {
		t.Fatalf("the bootstrap kubeconfig names no cluster CA")
	}
	caFile := jn.path("ca.crt")
	if err := os.WriteFile(caFile, cfg.Clusters[kctx.Cluster].CertificateAuthorityData, 0o644); err != nil {
		t.Fatal(err)
	}

	sink := "http://" + RegistrySink
	proxyEnv := []string{"HTTP_PROXY=" + sink, "HTTPS_PROXY=" + sink, "http_proxy=" + sink, "https_proxy=" + sink, "NO_PROXY=", "no_proxy="}
	j.Containerd = StartProcessEnv(t, j.Dir, "containerd", "containerd", proxyEnv, "--config", jn.path("containerd.toml"))
	jn.waitFor(t, j.Containerd, opts.Timeout, "the joined kubelet's containerd", func() error { _, err := jn.ctr("version"); return err })
	t.Cleanup(func() {
		if err := jn.removeContainers(); err != nil {
			t.Errorf("removing the joined kubelet's containers: %v", err)
		}
	})

	port, healthzPort := freePortOn(n.c.t, n.IP), freePortOn(n.c.t, loopback)
	taints, err := json.Marshal(opts.RegisterWithTaints) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
# Nested in the management node's cgroup root, beside (not inside) its
# kubepods: each kubelet only ever cleans up its own pods' cgroups.
cgroupRoot: /%[1]s
containerRuntimeEndpoint: unix://%[2]s
podLogsDir: %[3]q
volumePluginDir: %[4]q
address: %[5]s
port: %[6]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[7]d
# The client certificate from TLS bootstrap is renewed through a CSR of
# the node itself (auto-approved: selfnodeclient). The serving certificate
# stays self-signed (no serverTLSBootstrap): see docs/join.md.
rotateCertificates: true
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[8]q}
authorization:
  mode: Webhook
# No clusterDNS (nothing would answer) and no host resolv.conf for pods.
resolvConf: ""
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
registerWithTaints: %[9]s
`, cgroupRoot, jn.ContainerdSocket, jn.path("pod-logs"), jn.path("volume-plugins"), n.IP, port, healthzPort, caFile, taints)
	if err := os.WriteFile(jn.path("kubelet.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--config=" + jn.path("kubelet.yaml"), "--bootstrap-kubeconfig=" + bootstrap, "--kubeconfig=" + j.Kubeconfig,
		"--root-dir=" + jn.path("kubelet"), "--cert-dir=" + j.CertDir,
		"--hostname-override=" + opts.Name, "--node-ip=" + n.IP.String(), "--v=1",
	}
	if opts.NodeLabels != "" {
		args = append(args, "--node-labels="+opts.NodeLabels)
	}
	j.Kubelet = StartProcess(t, j.Dir, "kubelet", opts.Kubelet, args...)
	if _, err := j.Kubelet.WaitHealthy(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(healthzPort)+"/healthz", opts.Timeout); err != nil {
		t.Fatal(err)
	}
	return j
}

// ClientCertificate is the path of the kubelet's current client
// certificate and key (one PEM file), once TLS bootstrap has issued it.
func (j *JoinedKubelet) ClientCertificate() string {
	return filepath.Join(j.CertDir, "kubelet-client-current.pem")
}
