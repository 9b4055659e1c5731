package framework

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// teardown removes everything a node created, whether its processes
// stopped cleanly or its test process died: processes, container
// processes, mounts, bridges, chains, cgroups, files outside the run dir,
// changed sysctls and the run dir itself. It keeps going past errors.
func teardown(st *nodeState) []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Shims (re-parented, so not stopped with containerd) and any process
	// of the node still running, found by the node's unique paths.
	killMatching(func(cmdline string) bool {
		return strings.Contains(cmdline, st.ContainerdSocket) || strings.Contains(cmdline, st.Dir+"/")
	})
	add(killCgroup(st.CgroupRoot))
	add(unmountUnder(st.Dir))
	for _, br := range []string{st.Bridge, st.SinkBridge} {
		if _, err := os.Stat("/sys/class/net/" + br); err == nil {
			if out, err := exec.Command("ip", "link", "del", br).CombinedOutput(); err != nil {
				add(fmt.Errorf("ip link del %s: %v: %s", br, err, out))
			}
		}
	}
	errs = append(errs, deleteNewChains(st.Chains)...)
	errs = append(errs, destroyNewIPSets(st.IPSets)...)
	errs = append(errs, deleteNewEmptyTables(st.NftTables)...)
	add(removeCgroups(st.CgroupRoot))
	add(removeHostFiles(st))
	for p, v := range st.Sysctls {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) != v {
			add(os.WriteFile(p, []byte(v), 0o644))
		}
	}
	add(os.RemoveAll(st.Dir))
	if len(errs) == 0 {
		_ = os.Remove(st.file())
	}
	return errs
}

// killMatching SIGKILLs, by PID, the processes whose command line matches.
func killMatching(match func(cmdline string) bool) {
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && match(strings.ReplaceAll(string(b), "\x00", " ")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killCgroup SIGKILLs every process in the node's pods' cgroups (the pids
// hierarchy holds them all) until none is left.
func killCgroup(root string) error {
	base := filepath.Join("/sys/fs/cgroup/pids", root)
	for range 50 {
		var pids []int
		_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
			}
			return nil
		})
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("processes remain in cgroup %s", base)
}

// unmountUnder detaches every mount point under dir, deepest first: rootfs
// overlays, sandbox shm, network namespace bind mounts and kubelet's
// volume tmpfs.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(unescapeMount(fields[4]), dir+"/") {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var failed []string
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			failed = append(failed, fmt.Sprintf("%s: %v", p, err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("unmount: %s", strings.Join(failed, "; "))
	}
	return nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
	if err != nil {
		return s
	}
	return r
}

// removeCgroups removes the cgroup root's tree in every hierarchy, the
// unified one included (runc also creates there on hybrid hosts).
func removeCgroups(root string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	var failed []string
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := syscall.Rmdir(d); err != nil && err != syscall.ENOENT {
				failed = append(failed, fmt.Sprintf("%s: %v", d, err))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("rmdir cgroups: %s", strings.Join(failed, "; "))
	}
	return nil
}

// removeHostFiles removes what kubelet, CNI and the shims leave outside the
// run dir, then those host directories that did not exist before, if empty.
func removeHostFiles(st *nodeState) error {
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, st.Dir+"/") {
			_ = os.Remove(l)
		}
	}
	// libcni caches each attachment as /var/lib/cni/results/<network>-
	// <sandbox id>-<ifname>, for the bridge network and for the loopback
	// one containerd adds; no CNI DEL ran for sandboxes that ctr removed.
	sandboxes, _ := filepath.Glob(filepath.Join(st.Dir, "containerd", "*", "io.containerd.grpc.v1.cri", "sandboxes", "*"))
	for _, sb := range sandboxes {
		results, _ := filepath.Glob("/var/lib/cni/results/*-" + filepath.Base(sb) + "-*")
		for _, r := range results {
			_ = os.Remove(r)
		}
	}
	results, _ := filepath.Glob("/var/lib/cni/results/" + st.CNINetwork + "-*")
	for _, r := range results {
		_ = os.Remove(r)
	}
	_ = os.RemoveAll("/var/lib/cni/networks/" + st.CNINetwork)
	// A shim's socket outlives a killed shim, kubelet's device-plugin
	// socket outlives kubelet; one nobody has bound is garbage.
	bound := boundUnixSockets()
	socks, _ := filepath.Glob("/run/containerd/s/*")
	socks = append(socks, "/var/lib/kubelet/device-plugins/kubelet.sock")
	for _, s := range socks {
		if _, err := os.Stat(s); err == nil && !bound[s] {
			_ = os.Remove(s)
		}
	}
	for d, existed := range st.HostDirs {
		if !existed {
			removeEmptyTree(d)
		}
	}
	return nil
}

// boundUnixSockets lists the paths of bound unix sockets in this network
// namespace.
func boundUnixSockets() map[string]bool {
	bound := map[string]bool{}
	b, _ := os.ReadFile("/proc/net/unix")
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 8 {
			bound[f[7]] = true
		}
	}
	return bound
}

// removeEmptyTree removes dir if it holds nothing but empty directories.
func removeEmptyTree(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeEmptyTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir) // fails, as it should, unless now empty
}
