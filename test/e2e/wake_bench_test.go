//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/test/framework"
)

// BenchmarkWake measures wake on request on the real node: for a tenant
// (the example NestedCluster, with spec.sleep.afterInactivity 30s) asleep
// for inactivity, the time from a GET of a namespace, sent with a
// kubeconfig issued before it slept, to the first byte of the answer. The
// waker holds the connection while the tenant wakes. The baseline is the
// same request to the same tenant right after, awake. CAPN_BENCH_WAKE_RUNS
// (default 10) wakes; rows go to CAPN_BENCH_OUT/wake.csv.
func BenchmarkWake(b *testing.B) {
	runs := 10
	if v := os.Getenv("CAPN_BENCH_WAKE_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CAPN_BENCH_WAKE_RUNS=%q: want a positive count", v)
		}
		runs = n
	}
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{env(b, "CAPN_IMAGES")}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	// Activity is read every 5 s, so a run's tenant falls asleep 30-35 s
	// after its last request; tenant apiservers may reach the pool etcd
	// the cost phase runs (sleepCost), as a provider lists its own.
	framework.DeployCapnWith(b, c, node, admin, repoFile(b, ""), framework.CapnDeployOptions{ExtraArgs: []string{
		"--activity-check-interval=5s", "--tenant-apiserver-egress-namespaces=" + poolNS}})
	k := admin
	k.Namespace = "default"
	admin.MustRun(b, "", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "-n", "default")
	const name = "wake"
	k.MustRun(b, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: "+name+"}\nspec: {sleep: {afterInactivity: 30s}}\n", "create", "-f", "-")
	framework.Eventually(b, 5*time.Minute, name+" Ready", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return r.Stdout == "True", r.Stdout + r.Stderr
	})
	get := firstByteClient(b, tenantKubeconfig(b, k, "", name, "alice"))
	ns := mgmtNamespace(b, k, name)

	b.ResetTimer()
	rows := [][]string{{"run", "asleep_first_byte_s", "awake_first_byte_s"}}
	var asleep, awake []time.Duration
	for i := range runs {
		framework.Eventually(b, 3*time.Minute, fmt.Sprintf("run %d: %s asleep for inactivity", i, name), func() (bool, string) {
			r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Inactive")].status} {.status.conditions[?(@.type=="Sleeping")].reason}`)
			return r.Err == nil && r.Stdout == "True Asleep", r.Stdout + r.Stderr
		})
		framework.Eventually(b, time.Minute, "the waker's EndpointSlice", func() (bool, string) {
			r := admin.Run("", "get", "endpointslice", "-n", ns, "kube-apiserver-waker", "-o", "name")
			return r.Err == nil, r.Stderr
		})
		slept := get()
		reason := k.MustRun(b, "", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Inactive")].reason}`)
		if reason != v1alpha1.ReasonConnectionReceived {
			b.Fatalf("run %d: Inactive's reason is %q after the request, want %s", i, reason, v1alpha1.ReasonConnectionReceived)
		}
		woke := get()
		asleep, awake = append(asleep, slept), append(awake, woke)
		b.Logf("run %d: asleep %s, awake %s", i, slept.Round(time.Millisecond), woke.Round(time.Millisecond))
		rows = append(rows, []string{strconv.Itoa(i), fmt.Sprintf("%.3f", slept.Seconds()), fmt.Sprintf("%.4f", woke.Seconds())})
	}
	b.StopTimer()
	p50, p99 := percentile(asleep, 0.5), percentile(asleep, 0.99)
	a50, a99 := percentile(awake, 0.5), percentile(awake, 0.99)
	b.ReportMetric(p50.Seconds(), "s-p50-asleep")
	b.ReportMetric(p99.Seconds(), "s-p99-asleep")
	b.ReportMetric(a50.Seconds(), "s-p50-awake")
	b.Logf("numbers: wake: request->first byte over %d wakes: asleep p50 %s p99 %s; awake p50 %s p99 %s (p50 %.0fx)",
		runs, p50.Round(time.Millisecond), p99.Round(time.Millisecond), a50.Round(time.Millisecond), a99.Round(time.Millisecond),
		p50.Seconds()/a50.Seconds())
	b.Logf("wrote %s", saveCSV(b, out, "wake.csv", rows))
	if os.Getenv("CAPN_BENCH_WAKE_COST") == "1" {
		b.Logf("wrote %s", saveCSV(b, out, "sleep-cost.csv", sleepCost(b, c, node, admin, k)))
	}
}

// sleepCost measures, in one run, what a tenant costs awake and asleep
// for each place its etcd can live: a managed etcd on EmptyDir (which
// keeps running asleep), one on a PersistentVolumeClaim (which stops), and
// a shared pool (spec.etcd.pool), whose etcd is read before the pooled
// tenant exists and again with it asleep. RSS and CPU are read from /proc
// for every pod of the tenant's management and workload namespaces, CPU
// over a 30 s window.
func sleepCost(b *testing.B, c *framework.Cluster, node *framework.Node, admin, k framework.Kubectl) [][]string {
	b.Helper()
	framework.DeployStorage(b, c, node, admin, repoFile(b, ""))
	pool := startPoolEtcd(b, c)
	poolRSS := func() float64 {
		id := admin.MustRun(b, "", "get", "pod", "etcd", "-n", pool.NS, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
		pid, err := node.ContainerPID(id)
		if err != nil {
			b.Fatal(err)
		}
		kib, err := framework.RSSKiB(pid)
		if err != nil {
			b.Fatal(err)
		}
		return float64(kib) / 1024
	}
	admin.MustRun(b, fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedEtcdPool\nmetadata: {name: shared}\nspec:\n  endpoints: [%q]\n  credentialsSecretRef: {namespace: %s, name: pool-credentials}\n",
		pool.Endpoint, poolNS), "create", "-f", "-")
	framework.Eventually(b, time.Minute, "pool shared Available", func() (bool, string) {
		out := admin.MustRun(b, "", "get", "nestedetcdpool", "shared", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return out == "True", out
	})
	poolBefore := poolRSS()
	tenants := []struct{ name, etcd string }{
		{"cost-emptydir", "{}"},
		{"cost-pvc", "{managed: {storage: {type: PersistentVolumeClaim, size: 1Gi}}}"},
		{"cost-pool", "{pool: shared}"},
	}
	for _, t := range tenants {
		k.MustRun(b, fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec: {etcd: %s}\n", t.name, t.etcd), "create", "-f", "-")
	}
	type cost struct{ rss, cpu float64 }
	measure := func(name string) cost {
		namespaces := []string{mgmtNamespace(b, k, name), k.MustRun(b, "", "get", "nc", name, "-o", "jsonpath={.status.workloadNamespace}")}
		cpu0 := map[string]float64{}
		for _, ns := range namespaces {
			for comp, v := range podsCPUSeconds(b, admin, node, ns) {
				cpu0[ns+"/"+comp] = v
			}
		}
		start := time.Now()
		time.Sleep(30 * time.Second) // the measurement window itself
		var out cost
		for _, ns := range namespaces {
			for _, kib := range podsRSS(b, admin, node, ns) {
				out.rss += float64(kib) / 1024
			}
			for comp, v := range podsCPUSeconds(b, admin, node, ns) {
				out.cpu += v - min(cpu0[ns+"/"+comp], v)
			}
		}
		out.cpu = out.cpu / time.Since(start).Seconds() * 1000
		return out
	}
	rows := [][]string{{"tenant", "etcd", "state", "rss_mib", "cpu_millicores", "pool_etcd_rss_mib"}}
	awake := map[string]cost{}
	for _, t := range tenants {
		framework.Eventually(b, 5*time.Minute, t.name+" Ready", func() (bool, string) {
			r := k.Run("", "get", "nc", t.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return r.Stdout == "True", r.Stdout + r.Stderr
		})
	}
	for _, t := range tenants {
		awake[t.name] = measure(t.name)
	}
	poolAwake := poolRSS()
	for _, t := range tenants {
		k.MustRun(b, "", "patch", "nc", t.name, "--type=merge", "-p", `{"spec":{"sleep":{"asleep":true}}}`)
	}
	for _, t := range tenants {
		framework.Eventually(b, 4*time.Minute, t.name+" asleep", func() (bool, string) {
			r := k.Run("", "get", "nc", t.name, "-o", `jsonpath={.status.conditions[?(@.type=="Sleeping")].reason}`)
			return r.Stdout == v1alpha1.ReasonAsleep, r.Stdout + r.Stderr
		})
	}
	poolAsleep := poolRSS()
	for _, t := range tenants {
		a, s := awake[t.name], measure(t.name)
		pa, ps := "", ""
		if t.name == "cost-pool" {
			pa, ps = fmt.Sprintf("%.1f", poolAwake-poolBefore), fmt.Sprintf("%.1f", poolAsleep-poolBefore)
		}
		rows = append(rows,
			[]string{t.name, t.etcd, "awake", fmt.Sprintf("%.1f", a.rss), fmt.Sprintf("%.1f", a.cpu), pa},
			[]string{t.name, t.etcd, "asleep", fmt.Sprintf("%.1f", s.rss), fmt.Sprintf("%.1f", s.cpu), ps})
		b.Logf("numbers: sleep cost: %s: awake %.0f MiB %.1f millicores; asleep %.0f MiB %.1f millicores (pool etcd +%s MiB awake, +%s asleep)",
			t.name, a.rss, a.cpu, s.rss, s.cpu, pa, ps)
	}
	return rows
}

// firstByteClient returns a GET of namespace default through the kubeconfig file
// that fails the benchmark unless it is answered 200 and returns the time
// to the answer's first byte. A fresh connection each time (no
// keep-alive) and a TLS handshake bound above the waker's hold, so the
// measurement is the wake's and not client-go's 10 s default.
func firstByteClient(b *testing.B, kubeconfig string) func() time.Duration {
	b.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		TLSClientConfig: tlsCfg.Clone(), TLSHandshakeTimeout: 90 * time.Second, DisableKeepAlives: true,
	}}
	url := strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/default"
	return func() time.Duration {
		var first time.Time
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s", url, resp.Status)
		}
		return first.Sub(start)
	}
}
