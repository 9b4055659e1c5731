//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/test/framework"
)

// leanVariant is one tenant of BenchmarkLean: the example cluster with
// spec added, rendered at revision. offAPI is a group/version the setting
// turns off in the tenant apiserver: after the window the bench checks
// that the tenant no longer serves it.
type leanVariant struct {
	name, spec string
	revision   int
	offAPI     string
}

// leanGoEnv sets the lean Go runtime env on the three kube-* components
// through spec (etcd has no env in the API: only revision 4 gives it one).
func leanGoEnv(env string) string {
	return fmt.Sprintf("  apiServer: {env: %[1]s}\n  controllerManager: {env: %[1]s}\n  scheduler: {env: %[1]s}\n", env)
}

// leanVariants: the baseline (the last revision before the lean
// defaults), each candidate setting alone on that baseline through the
// spec, and the lean revision itself. Seven: each tenant requests 250m of
// CPU, and the one 2-CPU node fits seven beside capn (the density limit
// BenchmarkDensity reports). The revision-3 variants come first: capn
// switches revision once, before the last.
var leanVariants = []leanVariant{
	{name: "base", revision: builders.LeanTemplateRevision - 1},
	{name: "gogc50", spec: leanGoEnv(`[{name: GOGC, value: "50"}]`), revision: builders.LeanTemplateRevision - 1},
	{name: "memlimit-request", spec: leanGoEnv(`[{name: GOMEMLIMIT, valueFrom: {resourceFieldRef: {resource: requests.memory}}}]`), revision: builders.LeanTemplateRevision - 1},
	{name: "kcm-trim", spec: "  controllerManager: {extraArgs: {allocate-node-cidrs: \"false\", controllers: \"*,bootstrap-signer-controller,token-cleaner-controller," +
		"-node-ipam-controller,-resourceclaim-controller,-device-taint-eviction-controller,-ttl-controller\"}}\n", revision: builders.LeanTemplateRevision - 1},
	{name: "no-watch-cache", spec: "  apiServer: {extraArgs: {watch-cache: \"false\"}}\n", revision: builders.LeanTemplateRevision - 1},
	// The one built-in API group version a 1.37 kube-apiserver serves by
	// default that neither the tenant's control plane nor capn needs:
	// storagemigration.k8s.io/v1. Its only client is kube-controller-
	// manager's storage-version-migrator-controller, which would otherwise
	// retry a list the apiserver answers 404, so it goes too. Not
	// resource.k8s.io/v1 (DRA): DynamicResourceAllocation is locked on
	// since 1.35, and kube-scheduler waits for its ResourceClaim and
	// ResourceSlice informers to sync before it schedules anything. A 1.36
	// apiserver refuses this runtime-config (it has no storagemigration
	// v1), so the variant needs the default version, 1.37.
	{name: "runtime-config", spec: "  apiServer: {extraArgs: {runtime-config: \"storagemigration.k8s.io/v1=false\"}}\n" +
		"  controllerManager: {extraArgs: {controllers: \"*,bootstrap-signer-controller,token-cleaner-controller,-storage-version-migrator-controller\"}}\n",
		revision: builders.LeanTemplateRevision - 1, offAPI: "storagemigration.k8s.io/v1"},
	{name: "lean", revision: builders.LeanTemplateRevision},
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

	// After the window, so the numbers are of idle tenants: each tenant
	// still works with its setting.
	for _, v := range leanVariants {
		checkLeanTenant(b, admin, k, v, namespaces[v.name])
	}
}

// checkLeanTenant checks, through the tenant's own apiserver, what Ready
// does not show: that it is ready, that its scheduler binds a pod (capn
// probes kube-scheduler's /healthz, which stays ok while the scheduler
// waits for an informer of an API that is switched off), that
// v.offAPI is no longer served, and that neither kube-controller-manager
// nor kube-scheduler logs a request for a resource the apiserver does not
// have (a controller left running for an API turned off).
func checkLeanTenant(b *testing.B, admin, k framework.Kubectl, v leanVariant, ns string) {
	b.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(benchTenantConfig(b, k, v.name))
	if err != nil {
		b.Fatal(err)
	}
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(body) != "ok" {
		b.Errorf("%s: tenant /readyz = %q, %v", v.name, body, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "lean-check"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: dpPauseImage, ImagePullPolicy: corev1.PullNever}}},
	}
	// The default ServiceAccount may not exist yet; admission waits for it.
	framework.Eventually(b, time.Minute, v.name+": create a pod in the tenant", func() (bool, string) {
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	framework.Eventually(b, time.Minute, v.name+": the tenant scheduler binds the pod", func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "", fmt.Sprintf("%+v", p.Status.Conditions)
	})
	if v.offAPI != "" {
		_, err := cs.Discovery().ServerResourcesForGroupVersion(v.offAPI)
		if !apierrors.IsNotFound(err) {
			b.Errorf("%s: the tenant serves %s (discovery: %v), want NotFound", v.name, v.offAPI, err)
		}
	}
	comps := []string{v1alpha1.ComponentControllerManager, v1alpha1.ComponentScheduler}
	for _, comp := range comps {
		logs := admin.MustRun(b, "", "logs", "-n", ns, "-l", "capn.dev/component="+comp, "--all-containers", "--tail=-1")
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "could not find the requested resource") {
				b.Errorf("%s: %s asks for a resource its apiserver does not serve: %s", v.name, comp, line)
				break
			}
		}
	}
	b.Logf("%s: checked /readyz, a pod bound, %s logs, the API turned off (%q)", v.name, strings.Join(comps, " and "), v.offAPI)
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
	return sampleComponents(t, admin, node, ns, "CPU", cpuSeconds)
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
