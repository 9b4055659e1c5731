package framework

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// nodeStateDir records every live node, so that a node whose test process
// was killed (a go test timeout runs no cleanups) is removed by the next
// StartNode instead of leaking shims, mounts, chains and bridges.
const nodeStateDir = "/run/capn-e2e/nodes"

// nodeState is what teardown needs: names of everything the node creates
// outside its run dir, and the host state it found, to restore.
type nodeState struct {
	Owner            int    // PID of the test process
	Name, Dir        string // node name and run dir
	ContainerdSocket string
	CNINetwork       string // CNI network name (/var/lib/cni/results/<name>-*)
	Bridge           string // CNI bridge
	SinkBridge       string // portless bridge the service CIDR is routed to
	ServiceCIDR      string
	CgroupRoot       string // kubelet's cgroupRoot, in every hierarchy
	PodLogsDir       string
	// Chains are the KUBE-*/CNI-*/CAPN-* chains per "<command>/<table>"
	// that existed before the node started: teardown removes the others.
	Chains map[string][]string
	// NftTables are the nf_tables tables that existed before: iptables-nft
	// creates a table on first use and leaves it, empty, when its chains go.
	NftTables []string
	// IPSets are the ipsets that existed before: the NetworkPolicy engine
	// makes its own, which teardown destroys.
	IPSets []string
	// Sysctls are values found before start; teardown writes them back
	// (the bridge plugin enables forwarding, for instance).
	Sysctls map[string]string
	// HostDirs are directories outside Dir that kubelet, CNI or containerd
	// create if missing; those that were missing are removed when empty.
	HostDirs map[string]bool
}

// restoredSysctls are the host settings a node may change.
var restoredSysctls = []string{
	"/proc/sys/net/ipv4/ip_forward",
	"/proc/sys/net/ipv4/conf/all/route_localnet",
	"/proc/sys/net/bridge/bridge-nf-call-iptables",
	"/proc/sys/net/bridge/bridge-nf-call-ip6tables",
}

// hostDirs are where kubelet, CNI and containerd write regardless of the
// directories they are given.
// kubelet's device-plugin socket and libmount's /run/mount (kubelet mounts
// volumes with mount(8)) have fixed paths.
var hostDirs = []string{"/var/log/containers", "/var/log/pods", "/var/lib/cni", "/var/lib/kubelet",
	"/run/containerd", "/run/netns", "/run/mount"}

func newNodeState(n *Node, serviceCIDR string) (*nodeState, error) {
	id := strings.TrimPrefix(n.Name, "capn-node-")
	st := &nodeState{
		Owner: os.Getpid(), Name: n.Name, Dir: n.Dir, ContainerdSocket: n.ContainerdSocket,
		CNINetwork: "capn-" + id, Bridge: n.Bridge, SinkBridge: "capns" + id, ServiceCIDR: serviceCIDR,
		CgroupRoot: "capn-e2e-" + id, PodLogsDir: filepath.Join(n.Dir, "pod-logs"),
		Sysctls: map[string]string{}, HostDirs: map[string]bool{},
	}
	var err error
	if st.Chains, err = listChains(); err != nil {
		return nil, err
	}
	st.NftTables = listNftTables()
	st.IPSets = listIPSets()
	for _, p := range restoredSysctls {
		if b, err := os.ReadFile(p); err == nil {
			st.Sysctls[p] = strings.TrimSpace(string(b))
		}
	}
	for _, d := range hostDirs {
		_, err := os.Stat(d)
		st.HostDirs[d] = err == nil
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := st.createCgroupRoot(); err != nil {
		return nil, err
	}
	return st, st.save()
}

func (st *nodeState) file() string { return filepath.Join(nodeStateDir, st.Name+".json") }

func (st *nodeState) save() error {
	if err := os.MkdirAll(nodeStateDir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(st.file(), b, 0o600)
}

// sinkServiceCIDR routes the service CIDR to a bridge without ports. The
// cluster's `unreachable` route would make the kernel refuse a connect() to
// a ClusterIP before kube-proxy's DNAT in OUTPUT could rewrite it; the two
// half-prefix routes are more specific, so the host can reach ClusterIPs,
// while a ClusterIP without rules ends in ARP on an empty bridge: nothing
// leaves the machine. Deleting the bridge restores the unreachable route.
func (st *nodeState) sinkServiceCIDR() error {
	_, svc, err := net.ParseCIDR(st.ServiceCIDR)
	if err != nil {
		return err
	}
	ones, bits := svc.Mask.Size()
	if ones >= bits {
		return fmt.Errorf("service CIDR %s too small to split", st.ServiceCIDR)
	}
	lower := &net.IPNet{IP: svc.IP, Mask: net.CIDRMask(ones+1, bits)}
	upperIP := make(net.IP, len(svc.IP))
	copy(upperIP, svc.IP)
	upperIP[ones/8] |= 0x80 >> (ones % 8)
	upper := &net.IPNet{IP: upperIP, Mask: lower.Mask}
	for _, args := range [][]string{
		{"link", "add", st.SinkBridge, "type", "bridge"},
		{"link", "set", st.SinkBridge, "up"},
		{"route", "add", lower.String(), "dev", st.SinkBridge},
		{"route", "add", upper.String(), "dev", st.SinkBridge},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// createCgroupRoot creates kubelet's cgroup root in every v1 hierarchy
// (kubelet refuses a root that does not exist). cpuset needs its cpus and
// mems copied from the parent, or no task could join it.
func (st *nodeState) createCgroupRoot() error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if filepath.Base(h) == "unified" {
			continue // kubelet runs cgroup v1 here; runc adds what it needs
		}
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		dir := filepath.Join(h, st.CgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// lockNodes makes this test process the only one running a node, waiting
// up to timeout for another one to finish. The lock is released at test
// cleanup, after the node's teardown, or by the kernel if the process dies.
func lockNodes(t TB, timeout time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(nodeStateDir), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(nodeStateDir), "node.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	deadline, logged := time.Now().Add(timeout), false
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("another test process kept a node running on this machine for %s", timeout)
		}
		if !logged {
			t.Logf("waiting for another test process's node to go away (one node per machine: kube-proxy's chains are global)")
			logged = true
		}
		time.Sleep(time.Second)
	}
	t.Cleanup(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
}

// reapStaleNodes tears down nodes whose test process is gone. The caller
// holds the node lock, so none of them is in use.
func reapStaleNodes(t TB) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(nodeStateDir, "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var st nodeState
		if err := json.Unmarshal(b, &st); err != nil {
			t.Logf("ignoring unreadable node state %s: %v", f, err)
			continue
		}
		if st.Owner != os.Getpid() && syscall.Kill(st.Owner, 0) == nil {
			continue
		}
		t.Logf("removing node %s left behind by test process %d", st.Name, st.Owner)
		for _, err := range teardown(&st) {
			t.Logf("stale node %s: %v", st.Name, err)
		}
	}
}
