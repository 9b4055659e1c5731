//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/test/framework"
)

// BenchmarkDensity packs tenants onto the one real node, old defaults
// against new in one run: for the revision before the idle-sized requests
// (builders.IdleRequestsTemplateRevision) and then the latest, it creates the example NestedCluster (Shared data plane,
// EmptyDir etcd, DNS addon) one at a time until the next one is not Ready
// within CAPN_BENCH_DENSITY_READY_TIMEOUT (default 2m), the machine's
// memory in use reaches 80%, or CAPN_BENCH_DENSITY_MAX tenants (default 0:
// no cap). It then lets them idle for CAPN_BENCH_DENSITY_SETTLE (default
// 1m) and reads every tenant pod's RSS and CPU over that window (control
// plane and workload namespaces, so the DNS addon counts). A tenant that
// is not Ready names what stopped the packing: the scheduler's reason for
// a Pending pod (CPU, memory, the node's pod limit) or else the timeout.
// Before deleting them all for the next revision it counts control-plane
// container restarts: a component squeezed by its requests into failing
// its probes restarts. Rows go to CAPN_BENCH_OUT/density.csv.
func BenchmarkDensity(b *testing.B) {
	readyTimeout := durationEnv(b, "CAPN_BENCH_DENSITY_READY_TIMEOUT", 2*time.Minute)
	settle := durationEnv(b, "CAPN_BENCH_DENSITY_SETTLE", time.Minute)
	limit := 0
	if v := os.Getenv("CAPN_BENCH_DENSITY_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("CAPN_BENCH_DENSITY_MAX=%q: want a count", v)
		}
		limit = n
	}
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	revisions := []int{builders.IdleRequestsTemplateRevision - 1, builders.LatestTemplateRevision}
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{env(b, "CAPN_IMAGES")}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	deployed := framework.DeployCapnWith(b, c, node, admin, repoFile(b, ""),
		framework.CapnDeployOptions{ExtraArgs: []string{revisionFlag(revisions[0])}})
	k := admin
	k.Namespace = "default"
	pod := deployed.Pod.Name
	admin.MustRun(b, "", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "-n", "default")

	b.ResetTimer()
	rows := [][]string{{"revision", "tenants", "stopped_by", "rss_per_tenant_mib", "cpu_per_tenant_millicores", "memory_used_pct", "restarts"}}
	for i, rev := range revisions {
		if i > 0 {
			pod = setTemplateRevision(b, c, admin, pod, revisions[i-1], rev)
		}
		var names []string
		stop := ""
		for stop == "" {
			if limit > 0 && len(names) == limit {
				stop = "max"
				break
			}
			if used := memoryUsedPct(b); used >= 80 {
				stop = fmt.Sprintf("memory %.0f%%", used)
				break
			}
			name := fmt.Sprintf("d%d-%d", rev, len(names))
			manifest := fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec: {}\n", name)
			framework.Eventually(b, 30*time.Second, "create "+name, func() (bool, string) {
				r := k.Run(manifest, "create", "-f", "-")
				return r.Err == nil, r.Stdout + r.Stderr
			})
			start := time.Now()
			ready := false
			for time.Since(start) < readyTimeout {
				r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
				if ready = r.Err == nil && r.Stdout == "True"; ready {
					break
				}
				time.Sleep(time.Second) // polling a condition with its own deadline (readyTimeout)
			}
			names = append(names, name)
			if !ready {
				stop = fmt.Sprintf("%s not Ready in %s", name, readyTimeout)
				if why := pendingReason(b, admin, mgmtNamespace(b, k, name)); why != "" {
					stop += ": " + why
				}
				break
			}
			b.Logf("revision %d: %s Ready in %s (memory %.0f%%)", rev, name, time.Since(start).Round(time.Millisecond), memoryUsedPct(b))
		}
		// Only the Ready ones are measured.
		fits := len(names)
		if strings.Contains(stop, "not Ready") {
			fits--
		}
		var namespaces []string
		for _, n := range names[:fits] {
			// A packed node can make capn-apiserver miss a readiness probe
			// and the aggregator answer 503 for a moment: retry the read.
			nc := &v1alpha1.NestedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n}}
			framework.Eventually(b, 2*time.Minute, "the UID of "+n, func() (bool, string) {
				r := k.Run("", "get", "nc", n, "-o", "jsonpath={.metadata.uid}")
				nc.UID = types.UID(r.Stdout)
				return r.Err == nil && r.Stdout != "", r.Stderr
			})
			namespaces = append(namespaces, provisioner.ManagementNamespace(nc), provisioner.WorkloadNamespace(nc))
		}
		// Ready does not wait for what the syncer starts after it (the DNS
		// addon): measure once every pod's first container runs.
		for _, ns := range namespaces {
			framework.Eventually(b, 2*time.Minute, "every pod in "+ns+" running", func() (bool, string) {
				out := admin.MustRun(b, "", "get", "pods", "-n", ns, "--no-headers", "-o",
					"custom-columns=N:.metadata.name,R:.status.containerStatuses[0].state.running.startedAt")
				return !strings.Contains(out, "<none>"), out
			})
		}
		cpu0 := map[string]float64{}
		for _, ns := range namespaces {
			for comp, s := range podsCPUSeconds(b, admin, node, ns) {
				cpu0[ns+"/"+comp] = s
			}
		}
		window := time.Now()
		time.Sleep(settle) // the measurement window itself
		elapsed := time.Since(window).Seconds()
		var rssKiB int
		var cpuSec float64
		for _, ns := range namespaces {
			for _, kib := range podsRSS(b, admin, node, ns) {
				rssKiB += kib
			}
			for comp, s := range podsCPUSeconds(b, admin, node, ns) {
				// A component that restarted in the window counts from zero.
				cpuSec += s - min(cpu0[ns+"/"+comp], s)
			}
		}
		used := memoryUsedPct(b)
		if fits > 0 {
			loadTenant(b, k, names[0])
		}
		restarts := 0
		for _, ns := range namespaces {
			restarts += containerRestarts(b, admin, ns)
		}
		per, milli := 0.0, 0.0
		if fits > 0 {
			per, milli = float64(rssKiB)/1024/float64(fits), cpuSec/elapsed*1000/float64(fits)
		}
		b.Logf("numbers: density: revision %d: %d tenants fit (stopped by: %s); %.0f MiB RSS and %.1f millicores idle per tenant; memory in use %.0f%%; %d container restarts",
			rev, fits, stop, per, milli, used, restarts)
		rows = append(rows, []string{strconv.Itoa(rev), strconv.Itoa(fits), stop, fmt.Sprintf("%.1f", per), fmt.Sprintf("%.1f", milli), fmt.Sprintf("%.0f", used), strconv.Itoa(restarts)})
		b.ReportMetric(float64(fits), fmt.Sprintf("tenants-rev%d", rev))
		saveCSV(b, out, "density.csv", rows) // each revision's row as soon as it is measured
		for _, n := range names {
			k.MustRun(b, "", "delete", "nc", n, "--wait=false")
		}
		for _, n := range names {
			framework.Eventually(b, 10*time.Minute, n+" deleted", func() (bool, string) {
				r := k.Run("", "get", "nc", n, "-o", "name")
				return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
			})
		}
	}
	b.StopTimer()
	b.Logf("wrote %s", saveCSV(b, out, "density.csv", rows))
}

// loadTenant puts a modest API load on one tenant of the packed node (200
// ConfigMaps written, the list read 20 times, all deleted) while the others
// idle: the restarts counted afterwards would show a component squeezed
// into failing its probes, this tenant's or a neighbour's.
func loadTenant(b *testing.B, k framework.Kubectl, name string) {
	b.Helper()
	tk := framework.Kubectl{Bin: k.Bin, Kubeconfig: tenantKubeconfig(b, k, "", name, "alice")}
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range 200 {
		fmt.Fprintf(&manifest, "- {apiVersion: v1, kind: ConfigMap, metadata: {name: load-%d, namespace: default, labels: {load: \"yes\"}}, data: {k: %q}}\n", i, strings.Repeat("x", 1024))
	}
	start := time.Now()
	tk.MustRun(b, manifest.String(), "apply", "-f", "-")
	for range 20 {
		tk.MustRun(b, "", "get", "configmaps", "-n", "default", "-l", "load=yes", "-o", "name")
	}
	tk.MustRun(b, "", "delete", "configmaps", "-n", "default", "-l", "load=yes")
	b.Logf("load on %s: 200 ConfigMaps written, listed 20 times and deleted in %s", name, time.Since(start).Round(time.Millisecond))
}

// pendingReason is the scheduler's message for the first Pending pod in ns
// ("0/1 nodes are available: 1 Insufficient cpu"), or "".
func pendingReason(t testing.TB, admin framework.Kubectl, ns string) string {
	t.Helper()
	r := admin.Run("", "get", "pods", "-n", ns, "--field-selector=status.phase=Pending", "-o",
		`jsonpath={range .items[*]}{.metadata.name}: {.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}`)
	if r.Err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(r.Stdout), "\n")
	return line
}

// containerRestarts sums the restart counts of every container in ns.
func containerRestarts(t testing.TB, admin framework.Kubectl, ns string) int {
	t.Helper()
	n := 0
	for _, f := range strings.Fields(admin.MustRun(t, "", "get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.containerStatuses[*].restartCount}")) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("restart count %q in %s: %v", f, ns, err)
		}
		n += v
	}
	return n
}

func durationEnv(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// memoryUsedPct is how much of this machine's memory is in use (MemTotal
// less MemAvailable): the node is this machine.
func memoryUsedPct(t testing.TB) float64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 {
			v, err := strconv.ParseFloat(fields[1], 64)
			if err == nil {
				vals[strings.TrimSuffix(fields[0], ":")] = v
			}
		}
	}
	if vals["MemTotal"] == 0 {
		t.Fatal("/proc/meminfo has no MemTotal")
	}
	return 100 * (vals["MemTotal"] - vals["MemAvailable"]) / vals["MemTotal"]
}
