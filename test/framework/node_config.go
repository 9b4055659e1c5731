package framework

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// cniBinDir is where Debian's containernetworking-plugins installs.
	cniBinDir = "/usr/lib/cni"
	// criNamespace is containerd's namespace for everything the CRI runs.
	criNamespace = "k8s.io"
	// pauseImage must be among the imported images: it cannot be pulled.
	pauseImage = "registry.k8s.io/pause:3.10"
)

func (n *Node) path(elem ...string) string { return filepath.Join(append([]string{n.Dir}, elem...)...) }

// writeConfigs writes containerd's configuration and the CNI network.
func (n *Node) writeConfigs() error {
	for _, d := range []string{"cni", "pod-logs", "kubelet", "volume-plugins"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(n.path("containerd.toml"), []byte(n.containerdConfig()), 0o644); err != nil {
		return err
	}
	if err := n.writeRegistryHosts(); err != nil {
		return err
	}
	return os.WriteFile(n.path("cni", "10-capn.conflist"), n.cniConfig(), 0o644)
}

// containerdConfig is the node's containerd configuration: everything
// under n.Dir, its CNI networks in n.Dir/cni, pulls sent to RegistrySink.
func (n *Node) containerdConfig() string {
	// Root, state and socket are private, so nothing lands in
	// /var/lib/containerd or /run/containerd (except the shims' sockets,
	// whose directory containerd 1.6 hard-codes; see teardown).
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[3]q

[debug]
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  # Root lacks CAP_SYS_RESOURCE here: without this runc fails every
  # sandbox ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  # Network namespaces are bind-mounted under the state dir, not /run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state, otherwise under /run/containerd/runc.
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
  # Every registry host resolves to RegistrySink (see registryHosts).
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
`, n.path("containerd", "root"), n.path("containerd", "state"), n.ContainerdSocket,
		n.path("containerd", "opt"), pauseImage, n.path("containerd", "runc"), cniBinDir, n.path("cni"),
		n.path(registryHostsDir))
}

// RegistrySink is where the node's containerd sends every image pull, for
// any registry: a loopback port nothing listens on, so a pull of an image
// that was not imported fails at once with "connection refused" and no
// packet leaves the machine, whatever imagePullPolicy a pod asks for.
const RegistrySink = "127.0.0.1:1"

// registryHostsDir, under the node's directory, is containerd's registry
// config_path.
const registryHostsDir = "certs.d"

// RegistryHostsFile is the hosts.toml for every registry host without a
// directory of its own (containerd's "_default"). containerd before 1.7
// ignores "_default"; there the proxy variables StartNode gives containerd
// are what send pulls to the sink.
func (n *Node) RegistryHostsFile() string {
	return n.path(registryHostsDir, "_default", "hosts.toml")
}

// writeRegistryHosts points the default registry namespace at RegistrySink
// as its server, not as a mirror: containerd falls back from failed mirrors
// to the server, and the server here is the sink itself. The containerd
// process also gets proxy variables to the sink (see StartNode), in case a
// code path ignores hosts.toml.
func (n *Node) writeRegistryHosts() error {
	hosts := fmt.Sprintf(`# Written by capn's test framework: no registry is reachable from this
# machine and none may be tried, so every registry resolves to a local port
# that refuses connections.
server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, RegistrySink)
	if err := os.MkdirAll(filepath.Dir(n.RegistryHostsFile()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(n.RegistryHostsFile(), []byte(hosts), 0o644)
}

// cniConfig is a bridge network on the node's pod subnet. Pods get routes
// to the pod and service CIDRs and the node IP only, never a default
// route: a pod cannot send to any other host (see the network-safety notes).
// Loopback is not listed: containerd sets up lo itself with the loopback
// plugin from bin_dir.
func (n *Node) cniConfig() []byte {
	routes := []map[string]string{{"dst": n.c.PodCIDR}, {"dst": n.c.ServiceCIDR}}
	if !n.IP.IsLoopback() {
		routes = append(routes, map[string]string{"dst": n.IP.String() + "/32"})
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       n.st.CNINetwork,
		"plugins": []map[string]any{
			{
				"type": "bridge", "bridge": n.Bridge, "isGateway": true,
				// No masquerade: pod traffic never leaves the machine.
				"ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type": "host-local", "ranges": [][]map[string]string{{{"subnet": n.PodSubnet}}},
					"routes": routes,
					// Allocations live in the run dir, not /var/lib/cni/networks.
					"dataDir": n.path("cni-ipam"),
				},
			},
			{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return b
}

// kubeletArgs writes the kubelet's credentials and configuration and
// returns its flags and healthz URL.
func (n *Node) kubeletArgs() ([]string, string, error) {
	client, err := n.c.CA.ClientCert("system:node:"+n.Name, "system:nodes")
	if err != nil {
		return nil, "", err
	}
	// The node IP in the SANs: kube-apiserver verifies the kubelet's
	// certificate when it connects for logs/exec/port-forward.
	serving, err := n.c.CA.ServingCert("kubelet-"+n.Name, []string{n.Name, "localhost"}, []net.IP{n.IP, loopback})
	if err != nil {
		return nil, "", err
	}
	kubeconfig := n.c.certKubeconfig("kubelet-"+n.Name, client)
	port, healthzPort := freePortOn(n.c.t, n.IP), freePortOn(n.c.t, loopback)
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine runs cgroup v1 (with v2 mounted alongside) and no systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
# A private cgroup root: its kubepods tree is this node's alone to remove.
cgroupRoot: /%[1]s
containerRuntimeEndpoint: unix://%[2]s
podLogsDir: %[3]q
volumePluginDir: %[4]q
address: %[5]s
port: %[6]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[7]d
tlsCertFile: %[8]q
tlsPrivateKeyFile: %[9]q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[10]q}
authorization:
  mode: Webhook
# No clusterDNS (nothing would answer) and no host resolv.conf for pods.
resolvConf: ""
failSwapOn: false
# A test node must not garbage-collect imported images (they cannot be
# pulled again) or evict pods because the shared disk is fairly full.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
serializeImagePulls: false
# A tenant's control plane is five to seven pods (make bench-density), so
# the default 110 would stop a node at about fifteen tenants while CPU and
# memory have room; 250 fills the node's /24 of pod addresses.
maxPods: 250
`, n.st.CgroupRoot, n.ContainerdSocket, n.path("pod-logs"), n.path("volume-plugins"), n.IP, port, healthzPort,
		serving.CertFile, serving.KeyFile, n.c.CA.CertFile)
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(cfg), 0o644); err != nil {
		return nil, "", err
	}
	args := []string{
		"--config=" + n.path("kubelet.yaml"), "--kubeconfig=" + kubeconfig,
		"--root-dir=" + n.path("kubelet"), "--cert-dir=" + n.path("kubelet", "pki"),
		"--hostname-override=" + n.Name, "--node-ip=" + n.IP.String(), "--v=1",
	}
	return args, "http://127.0.0.1:" + strconv.Itoa(healthzPort) + "/healthz", nil
}

// kubeProxyArgs returns kube-proxy's flags and healthz URL.
func (n *Node) kubeProxyArgs() ([]string, string, error) {
	client, err := n.c.CA.ClientCert("system:kube-proxy") // bound to system:node-proxier by default
	if err != nil {
		return nil, "", err
	}
	kubeconfig := n.c.certKubeconfig("kube-proxy", client)
	healthz := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePortOn(n.c.t, loopback)))
	metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePortOn(n.c.t, loopback)))
	args := []string{
		"--kubeconfig=" + kubeconfig, "--hostname-override=" + n.Name,
		"--proxy-mode=iptables", "--cluster-cidr=" + n.c.PodCIDR,
		// --bind-address binds nothing: it is kube-proxy's idea of the
		// node's primary IP, so it must be the node IP, not 127.0.0.1.
		"--bind-address=" + n.IP.String(),
		"--healthz-bind-address=" + healthz, "--metrics-bind-address=" + metrics,
		// NodePorts only on the node IP: no route_localnet sysctl, no
		// listener on other addresses.
		"--nodeport-addresses=primary", "--iptables-localhost-nodeports=false",
		// Leave the machine's conntrack sysctls alone.
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		"--v=1",
	}
	return args, "http://" + healthz + "/healthz", nil
}

// hostLines returns the non-empty lines of out.
func hostLines(out []byte) []string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
