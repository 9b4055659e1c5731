package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ctr runs ctr against the node's containerd in the CRI namespace.
func (n *Node) ctr(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return exec.CommandContext(ctx, "ctr", append([]string{"--address", n.ContainerdSocket, "--namespace", criNamespace}, args...)...).CombinedOutput()
}

// removeContainers kills and deletes every task and container of the
// node's containerd, pod sandboxes included. crictl is not available, and
// kubelet (already stopped) would recreate what is removed under it.
func (n *Node) removeContainers() error {
	out, err := n.ctr("containers", "list", "--quiet")
	if err != nil {
		return fmt.Errorf("ctr containers list: %v: %s", err, out)
	}
	var errs []string
	for _, id := range hostLines(out) {
		// "No such task" is fine: the container was not running.
		_, _ = n.ctr("tasks", "delete", "--force", id)
		// "not found" is fine too: the container went between the list
		// and this delete (seen once in bench-lean's teardown, among
		// containerd's CRI plugin handling sandbox exits); gone is the goal.
		if out, err := n.ctr("containers", "delete", id); err != nil && !strings.Contains(string(out), ": not found") {
			errs = append(errs, fmt.Sprintf("ctr containers delete %s: %v: %s", id, err, out))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// ContainerPID is the host PID of a running container's init process;
// containerID may carry the CRI's "containerd://" prefix.
func (n *Node) ContainerPID(containerID string) (int, error) {
	return containerPID(n.ContainerdSocket, containerID)
}

// containerPID finds a running container's host PID with `ctr tasks list`.
func containerPID(socket, containerID string) (int, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := exec.Command("ctr", "--address", socket, "--namespace", criNamespace, "tasks", "list").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ctr tasks list: %v: %s", err, out)
	}
	for _, line := range hostLines(out) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == id {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no task for container %s", id)
}

// RSSKiB reads a process's resident set size from /proc.
func RSSKiB(pid int) (int, error) {
	return procStatusKiB(pid, "VmRSS:")
}

// PeakRSSKiB reads a process's peak resident set size (VmHWM) from /proc.
func PeakRSSKiB(pid int) (int, error) {
	return procStatusKiB(pid, "VmHWM:")
}

// CPUSeconds reads the user plus system CPU time a process has used, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from its ")".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err := strconv.ParseFloat(f[11], 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseFloat(f[12], 64)
	if err != nil {
		return 0, err
	}
	return (utime + stime) / 100, nil
}

// procStatusKiB reads a "<key> N kB" line of /proc/<pid>/status.
func procStatusKiB(pid int, key string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// randomID is a short lower-case hex id: it names the node, the bridge
// (interface names are at most 15 bytes) and the cgroup root.
func randomID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RunningContainersIn lists the node's running containers (pod sandboxes
// included) whose pod is in one of namespaces, by the label the CRI
// plugin puts on every container, as "namespace: container-id".
func (n *Node) RunningContainersIn(namespaces ...string) ([]string, error) {
	out, err := n.ctr("tasks", "list")
	if err != nil {
		return nil, fmt.Errorf("ctr tasks list: %v: %s", err, out)
	}
	running := map[string]bool{}
	for _, line := range hostLines(out) {
		if f := strings.Fields(line); len(f) >= 3 && f[2] == "RUNNING" {
			running[f[0]] = true
		}
	}
	var found []string
	for _, ns := range namespaces {
		out, err := n.ctr("containers", "list", "--quiet", fmt.Sprintf(`labels."io.kubernetes.pod.namespace"==%s`, ns))
		if err != nil {
			return nil, fmt.Errorf("ctr containers list in %s: %v: %s", ns, err, out)
		}
		for _, id := range hostLines(out) {
			if running[id] {
				found = append(found, ns+": "+id)
			}
		}
	}
	return found, nil
}
