//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// metricsLoad is N idle pods for the syncer to sync and metrics-server
// to scrape, each as small as the node can pack.
const metricsLoad = `apiVersion: v1
kind: Namespace
metadata: {name: load}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: idle, namespace: load}
spec:
  replicas: %d
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: idle
        image: capn.dev/capn-testserver:dev
        args: [serve]
        resources:
          requests: {cpu: 1m, memory: 8Mi, ephemeral-storage: 8Mi}
          limits: {cpu: 20m, memory: 32Mi, ephemeral-storage: 16Mi}
`

// BenchmarkMetrics measures what the metrics addon costs, on a real node,
// in one run: two tenants, "mon" with the addon (metrics-server scraping
// its virtual Node every 15 s) and "moff" with spec.metrics.mode None,
// each idle and then with CAPN_BENCH_METRICS_PODS (default 50) pods.
// Each phase idles for CAPN_BENCH_METRICS_SETTLE (default 90s); the
// syncer's RSS at its end and its CPU over it are read from its process,
// and so are metrics-server's. The pods run in one tenant at a time, so
// both are measured at the same count on the same node. Rows go to
// CAPN_BENCH_OUT/metrics.csv.
func BenchmarkMetrics(b *testing.B) {
	settle := durationEnv(b, "CAPN_BENCH_METRICS_SETTLE", 90*time.Second)
	pods := 50
	if s := os.Getenv("CAPN_BENCH_METRICS_PODS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("CAPN_BENCH_METRICS_PODS: %v", err)
		}
		pods = n
	}
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{env(b, "CAPN_IMAGES")}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	framework.DeployCapnWith(b, c, node, admin, repoFile(b, ""), framework.CapnDeployOptions{})
	k := admin
	k.Namespace = "default"
	// alice asks for the tenant kubeconfigs, as a user of the edit role.
	admin.MustRun(b, "", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "-n", "default")

	b.ResetTimer()
	// Room for the load beside the addons in the workload quota.
	quota := fmt.Sprintf("dataPlane: {quota: {pods: %q}}", strconv.Itoa(pods+10))
	variants := []struct{ name, spec string }{{"mon", "{" + quota + "}"}, {"moff", "{" + quota + ", metrics: {mode: None}}"}}
	tenants := map[string]dataPlaneTenant{}
	for _, v := range variants {
		k.MustRun(b, fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec: %s\n", v.name, v.spec), "create", "-f", "-")
	}
	for _, v := range variants {
		framework.Eventually(b, 5*time.Minute, v.name+" Ready", func() (bool, string) {
			r := k.Run("", "get", "nc", v.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return r.Stdout == "True", r.Stdout + r.Stderr
		})
		tk := framework.Kubectl{Bin: k.Bin, Kubeconfig: tenantKubeconfig(b, k, "", v.name, "alice")}
		tenants[v.name] = dataPlaneTenant{name: v.name, tk: tk, controlPlane: mgmtNamespace(b, k, v.name),
			workloads: k.MustRun(b, "", "get", "nc", v.name, "-o", "jsonpath={.status.workloadNamespace}")}
	}
	mon := tenants["mon"]
	framework.Eventually(b, 5*time.Minute, "mon: kubectl top nodes", func() (bool, string) {
		r := mon.tk.Run("", "top", "nodes", "--no-headers")
		return r.Err == nil && !strings.Contains(r.Stdout, "unknown"), r.Stdout + r.Stderr
	})

	rows := [][]string{{"phase", "tenant", "process", "rss_mib", "cpu_millicores"}}
	type sample struct{ rss, cpu float64 }
	results := map[string]sample{}
	measure := func(phase string) {
		start := map[string]float64{}
		for _, v := range variants {
			start[v.name] = podsCPUSeconds(b, admin, node, tenants[v.name].controlPlane)[v1alpha1.ComponentSyncer]
		}
		msStart := metricsServerSample(b, admin, node, mon, cpuSeconds)
		window := time.Now()
		time.Sleep(settle) // the measurement window itself, not a wait for a state
		elapsed := time.Since(window).Seconds()
		for _, v := range variants {
			tn := tenants[v.name]
			rss := float64(podsRSS(b, admin, node, tn.controlPlane)[v1alpha1.ComponentSyncer]) / 1024
			cpu := (podsCPUSeconds(b, admin, node, tn.controlPlane)[v1alpha1.ComponentSyncer] - start[v.name]) / elapsed * 1000
			results[phase+"/"+v.name] = sample{rss, cpu}
			rows = append(rows, []string{phase, v.name, "capn-syncer", fmt.Sprintf("%.1f", rss), fmt.Sprintf("%.1f", cpu)})
		}
		msRSS := metricsServerSample(b, admin, node, mon, func(pid int) (float64, error) {
			kib, err := framework.RSSKiB(pid)
			return float64(kib) / 1024, err
		})
		msCPU := (metricsServerSample(b, admin, node, mon, cpuSeconds) - msStart) / elapsed * 1000
		results[phase+"/metrics-server"] = sample{msRSS, msCPU}
		rows = append(rows, []string{phase, "mon", "metrics-server", fmt.Sprintf("%.1f", msRSS), fmt.Sprintf("%.1f", msCPU)})
	}
	loaded := func(tn dataPlaneTenant, n int) {
		tn.tk.MustRun(b, fmt.Sprintf(metricsLoad, n), "apply", "-f", "-")
		framework.Eventually(b, 10*time.Minute, fmt.Sprintf("%s: %d load pods Ready", tn.name, n), func() (bool, string) {
			r := tn.tk.Run("", "get", "deployment", "-n", "load", "idle", "-o", "jsonpath={.status.readyReplicas}")
			return r.Stdout == strconv.Itoa(n) || (n == 0 && r.Stdout == ""), r.Stdout + r.Stderr
		})
	}

	measure("idle")
	// The load runs in one tenant at a time; the other idles, so each
	// syncer is measured loaded against the other's idle in the same
	// window, and then the other way round.
	loaded(mon, pods)
	measure("mon-loaded")
	loaded(mon, 0)
	loaded(tenants["moff"], pods)
	measure("moff-loaded")
	b.StopTimer()

	idleOn, idleOff := results["idle/mon"], results["idle/moff"]
	loadOn, loadOff := results["mon-loaded/mon"], results["moff-loaded/moff"]
	b.Logf("numbers: metrics: syncer idle: on %.1f MiB %.1f m, off %.1f MiB %.1f m (RSS %.2fx, CPU +%.1f m)",
		idleOn.rss, idleOn.cpu, idleOff.rss, idleOff.cpu, idleOn.rss/idleOff.rss, idleOn.cpu-idleOff.cpu)
	b.Logf("numbers: metrics: syncer with %d pods: on %.1f MiB %.1f m, off %.1f MiB %.1f m (RSS %.2fx, CPU +%.1f m)",
		pods, loadOn.rss, loadOn.cpu, loadOff.rss, loadOff.cpu, loadOn.rss/loadOff.rss, loadOn.cpu-loadOff.cpu)
	ms, msLoaded := results["idle/metrics-server"], results["mon-loaded/metrics-server"]
	b.Logf("numbers: metrics: metrics-server idle %.1f MiB %.1f m; with %d pods %.1f MiB %.1f m", ms.rss, ms.cpu, pods, msLoaded.rss, msLoaded.cpu)
	b.ReportMetric(loadOn.rss-loadOff.rss, "syncer-extra-MiB")
	b.ReportMetric(msLoaded.rss, "metrics-server-MiB")
	b.Logf("wrote %s", saveCSV(b, out, "metrics.csv", rows))
}

// metricsServerSample reads read(pid) of the metrics-server container of
// tn's addon, through its host pod.
func metricsServerSample(b *testing.B, admin framework.Kubectl, node *framework.Node, tn dataPlaneTenant, read func(int) (float64, error)) float64 {
	b.Helper()
	var v float64
	framework.Eventually(b, time.Minute, tn.name+": metrics-server's process", func() (bool, string) {
		pod := tn.tk.Run("", "get", "pods", "-n", names.MetricsNamespace, "-l", names.MetricsAppLabel+"="+names.MetricsAppValue,
			"--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}")
		if pod.Err != nil || pod.Stdout == "" {
			return false, pod.Stdout + pod.Stderr
		}
		id := admin.Run("", "get", "pod", "-n", tn.workloads, names.Host(names.MetricsNamespace, pod.Stdout), "-o", "jsonpath={.status.containerStatuses[0].containerID}")
		if id.Err != nil || id.Stdout == "" {
			return false, id.Stdout + id.Stderr
		}
		pid, err := node.ContainerPID(id.Stdout)
		if err != nil {
			return false, err.Error()
		}
		if v, err = read(pid); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return v
}
