//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/test/framework"
)

// leanVariant is one tenant of BenchmarkLean: the example cluster with
// spec added, rendered at revision.
type leanVariant struct {
	name, spec string
	revision   int
}

// leanGoEnv sets the lean Go runtime env on the three kube-* components
// through spec (etcd has no env in the API: only revision 4 gives it one).
func leanGoEnv(env string) string {
	return fmt.Sprintf("  apiServer: {env: %[1]s}\n  controllerManager: {env: %[1]s}\n  scheduler: {env: %[1]s}\n", env)
}

// leanVariants: the baseline (the last revision before the lean
// defaults), each candidate setting alone on that baseline through the
// spec, and the lean revision itself. Six: each tenant requests 250m of
// CPU, and the one 2-CPU node fits seven beside capn (the density limit
// BenchmarkDensity reports).
var leanVariants = []leanVariant{
	{"base", "", builders.LeanTemplateRevision - 1},
	{"gogc50", leanGoEnv(`[{name: GOGC, value: "50"}]`), builders.LeanTemplateRevision - 1},
	{"memlimit-request", leanGoEnv(`[{name: GOMEMLIMIT, valueFrom: {resourceFieldRef: {resource: requests.memory}}}]`), builders.LeanTemplateRevision - 1},
	{"kcm-trim", "  controllerManager: {extraArgs: {allocate-node-cidrs: \"false\", controllers: \"*,bootstrap-signer-controller,token-cleaner-controller," +
		"-node-ipam-controller,-resourceclaim-controller,-device-taint-eviction-controller,-ttl-controller\"}}\n", builders.LeanTemplateRevision - 1},
	{"no-watch-cache", "  apiServer: {extraArgs: {watch-cache: \"false\"}}\n", builders.LeanTemplateRevision - 1},
	{"lean", "", builders.LeanTemplateRevision},
}

// BenchmarkLean measures the idle cost of one tenant control plane per
// setting, on a real node, all in one run: each variant of leanVariants
// is created and made Ready, then every tenant idles for
// CAPN_BENCH_LEAN_SETTLE (default 2m) and each component's RSS and CPU
// over that window are read from its container's process. Ratios are
// against "base", measured in the same window. Rows go to
// CAPN_BENCH_OUT/lean.csv.
func BenchmarkLean(b *testing.B) {
	settle := durationEnv(b, "CAPN_BENCH_LEAN_SETTLE", 2*time.Minute)
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{env(b, "CAPN_IMAGES")}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	rev := leanVariants[0].revision
	deployed := framework.DeployCapnWith(b, c, node, admin, repoFile(b, ""),
		framework.CapnDeployOptions{ExtraArgs: []string{revisionFlag(rev)}})
	k := admin
	k.Namespace = "default"
	pod := deployed.Pod.Name

	b.ResetTimer()
	for _, v := range leanVariants {
		if v.revision != rev {
			pod = setTemplateRevision(b, c, admin, pod, rev, v.revision)
			rev = v.revision
		}
		manifest := fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec:\n%s", v.name, v.spec)
		if v.spec == "" {
			manifest += "  {}\n"
		}
		framework.Eventually(b, 30*time.Second, "create "+v.name, func() (bool, string) {
			r := k.Run(manifest, "create", "-f", "-")
			return r.Err == nil, r.Stdout + r.Stderr
		})
		framework.Eventually(b, 5*time.Minute, v.name+" Ready", func() (bool, string) {
			r := k.Run("", "get", "nc", v.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return r.Err == nil && r.Stdout == "True", r.Stdout + r.Stderr
		})
		b.Logf("%s (revision %d) Ready", v.name, v.revision)
	}
	// Every tenant idles through the same window; CPU is what each
	// container used in it.
	namespaces := map[string]string{}
	for _, v := range leanVariants {
		namespaces[v.name] = mgmtNamespace(b, k, v.name)
	}
	startCPU := map[string]map[string]float64{}
	for _, v := range leanVariants {
		startCPU[v.name] = podsCPUSeconds(b, admin, node, namespaces[v.name])
	}
	window := time.Now()
	time.Sleep(settle) // the measurement window itself, not a wait for a state
	elapsed := time.Since(window).Seconds()
	b.StopTimer()

	components := []string{v1alpha1.ComponentEtcd, v1alpha1.ComponentAPIServer, v1alpha1.ComponentControllerManager,
		v1alpha1.ComponentScheduler, v1alpha1.ComponentSyncer}
	rows := [][]string{{"variant", "revision", "component", "rss_mib", "cpu_millicores"}}
	totals := map[string]float64{}
	perComponent := map[string]map[string]float64{}
	for _, v := range leanVariants {
		rss := podsRSS(b, admin, node, namespaces[v.name])
		cpu := podsCPUSeconds(b, admin, node, namespaces[v.name])
		perComponent[v.name] = map[string]float64{}
		for _, comp := range components {
			mib := float64(rss[comp]) / 1024
			milli := (cpu[comp] - startCPU[v.name][comp]) / elapsed * 1000
			perComponent[v.name][comp] = mib
			totals[v.name] += mib
			rows = append(rows, []string{v.name, strconv.Itoa(v.revision), comp, fmt.Sprintf("%.1f", mib), fmt.Sprintf("%.1f", milli)})
		}
	}
	base := leanVariants[0].name
	for _, v := range leanVariants {
		var parts []string
		for _, comp := range components {
			got, was := perComponent[v.name][comp], perComponent[base][comp]
			parts = append(parts, fmt.Sprintf("%s %.0f MiB (%.2fx)", comp, got, got/was))
		}
		b.Logf("numbers: lean: %-16s total %.0f MiB (%.2fx %s): %s", v.name, totals[v.name], totals[v.name]/totals[base], base, strings.Join(parts, ", "))
		b.ReportMetric(totals[v.name], v.name+"-MiB")
	}
	b.Logf("wrote %s (%d rows; window %.0f s)", saveCSV(b, out, "lean.csv", rows), len(rows)-1, elapsed)
}

// saveCSV writes rows to dir/name (writeCSV) and returns the path.
func saveCSV(t testing.TB, dir, name string, rows [][]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := writeCSV(path, rows); err != nil {
		t.Fatal(err)
	}
	return path
}

// podsCPUSeconds is the CPU time (user + system) each component's
// containers in ns have used, by the pod's capn.dev/component label.
func podsCPUSeconds(t testing.TB, admin framework.Kubectl, node *framework.Node, ns string) map[string]float64 {
	t.Helper()
	cpu := map[string]float64{}
	for component, pids := range componentPIDs(t, admin, node, ns) {
		for _, pid := range pids {
			s, err := cpuSeconds(pid)
			if err != nil {
				t.Fatalf("%s cpu: %v", component, err)
			}
			cpu[component] += s
		}
	}
	return cpu
}

// cpuSeconds reads utime+stime of pid from /proc (USER_HZ is 100 on Linux).
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command may contain spaces: fields start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %v %v", pid, err1, err2)
	}
	return (utime + stime) / 100, nil
}
