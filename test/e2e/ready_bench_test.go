//go:build e2e

package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/provisioner/builders"
	"capn.dev/capn/test/framework"
)

// BenchmarkReady measures create→Ready of one NestedCluster at a time on
// an idle real node (images present, EmptyDir etcd, the example manifest),
// broken down by phase: when each component's pod was created, its
// container started and the pod became Ready, and when each condition
// turned True, as first seen by a poll every 200 ms (framework.Eventually),
// which is the resolution of every number. Each run's cluster is deleted,
// and its namespace gone, before the next is created.
//
// The baseline is measured in the same run: capn first runs with
// --template-revision=CAPN_BENCH_READY_BASELINE_REVISION (default 1, the
// pod templates before revisions; "0" skips it) for CAPN_BENCH_READY_RUNS
// runs (default 5), then at the latest revision for as many. Per-phase
// medians and their ratio are printed and written, with every run, to
// CAPN_BENCH_OUT/ready.csv.
func BenchmarkReady(b *testing.B) {
	runs := 5
	if v := os.Getenv("CAPN_BENCH_READY_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CAPN_BENCH_READY_RUNS=%q: want a positive integer", v)
		}
		runs = n
	}
	baseline := 1
	if v := os.Getenv("CAPN_BENCH_READY_BASELINE_REVISION"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= builders.LatestTemplateRevision {
			b.Fatalf("CAPN_BENCH_READY_BASELINE_REVISION=%q: want 0 (none) to %d", v, builders.LatestTemplateRevision-1)
		}
		baseline = n
	}
	revisions := []int{builders.LatestTemplateRevision}
	if baseline > 0 {
		revisions = []int{baseline, builders.LatestTemplateRevision}
	}
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	images := env(b, "CAPN_IMAGES")
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{images}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	deployed := framework.DeployCapnWith(b, c, node, admin, repoFile(b, ""),
		framework.CapnDeployOptions{ExtraArgs: []string{revisionFlag(revisions[0])}})
	admin.Namespace = "default"
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	capn, err := versioned.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	example, err := os.ReadFile(repoFile(b, "artifacts/examples/nestedcluster.yaml"))
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	type result struct {
		revision int
		phases   map[string]time.Duration
	}
	var all []result
	pod := deployed.Pod.Name
	for _, rev := range revisions {
		if rev != revisions[0] {
			pod = setTemplateRevision(b, c, admin, pod, revisions[0], rev)
		}
		for i := range runs {
			name := fmt.Sprintf("ready-r%d-%d", rev, i)
			manifest := strings.Replace(string(example), "name: demo", "name: "+name, 1)
			phases := measureReady(b, c, capn, admin, name, manifest)
			all = append(all, result{rev, phases})
			b.Logf("revision %d, run %d: Ready after %s", rev, i, phases["Ready"].Round(time.Millisecond))
		}
	}
	b.StopTimer()

	var phases []map[string]time.Duration
	for _, r := range all {
		phases = append(phases, r.phases)
	}
	names := phaseOrder(phases)
	rows := [][]string{append([]string{"revision", "run"}, names...)}
	for i, r := range all {
		row := []string{strconv.Itoa(r.revision), strconv.Itoa(i % runs)}
		for _, n := range names {
			row = append(row, msOrEmpty(r.phases, n))
		}
		rows = append(rows, row)
	}
	med := map[int]map[string]time.Duration{}
	for _, rev := range revisions {
		med[rev] = map[string]time.Duration{}
		row := []string{strconv.Itoa(rev), "median"}
		for _, n := range names {
			var ds []time.Duration
			for _, r := range all {
				if d, ok := r.phases[n]; ok && r.revision == rev {
					ds = append(ds, d)
				}
			}
			if len(ds) == 0 {
				row = append(row, "")
				continue
			}
			slices.Sort(ds)
			med[rev][n] = ds[len(ds)/2]
			row = append(row, strconv.FormatInt(med[rev][n].Milliseconds(), 10))
		}
		rows = append(rows, row)
	}
	latest := builders.LatestTemplateRevision
	fmt.Printf("\ncreate→phase, median of %d runs per template revision, idle node, EmptyDir etcd:\n", runs)
	fmt.Printf("  %-44s", "phase")
	for _, rev := range revisions {
		fmt.Printf(" %10s", fmt.Sprintf("rev %d", rev))
	}
	if baseline > 0 {
		fmt.Printf(" %8s", "ratio")
	}
	fmt.Println()
	for _, n := range names {
		fmt.Printf("  %-44s", n)
		for _, rev := range revisions {
			fmt.Printf(" %8.1f s", med[rev][n].Seconds())
		}
		if base := med[baseline][n]; baseline > 0 && base > 0 {
			fmt.Printf(" %7.2f×", float64(med[latest][n])/float64(base))
		}
		fmt.Println()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(out, "ready.csv"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := csv.NewWriter(f).WriteAll(rows); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(med[latest]["Ready"].Milliseconds()), "ms-create-to-ready")
	if baseline > 0 {
		b.ReportMetric(float64(med[baseline]["Ready"].Milliseconds()), "ms-create-to-ready-baseline")
	}
}

func revisionFlag(rev int) string { return "--template-revision=" + strconv.Itoa(rev) }

// setTemplateRevision swaps capn's --template-revision from one revision to
// another and waits for the new capn pod (Recreate: the old one is gone
// first) and the APIService; it returns the new pod's name.
func setTemplateRevision(b *testing.B, c *framework.Cluster, admin framework.Kubectl, oldPod string, from, to int) string {
	b.Helper()
	k := admin
	k.Namespace = framework.CapnNamespace
	var args []string
	if err := json.Unmarshal([]byte(k.MustRun(b, "", "get", "deployment/capn-apiserver", "-o", "jsonpath={.spec.template.spec.containers[0].args}")), &args); err != nil {
		b.Fatalf("capn-apiserver args: %v", err)
	}
	i := slices.Index(args, revisionFlag(from))
	if i < 0 {
		b.Fatalf("capn-apiserver args %v have no %s", args, revisionFlag(from))
	}
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/args/%d","value":%q}]`, i, revisionFlag(to))
	k.MustRun(b, "", "patch", "deployment/capn-apiserver", "--type=json", "-p", patch)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := framework.WaitCapnPod(ctx, b, c, oldPod)
	framework.WaitCapnAPIServiceAvailable(ctx, b, c)
	return p.Name
}

// measureReady creates one NestedCluster, polls it and its pods until
// Ready, records when each phase was first seen, then deletes it and waits
// until its management namespace is gone.
func measureReady(b *testing.B, c *framework.Cluster, capn versioned.Interface, admin framework.Kubectl, name, manifest string) map[string]time.Duration {
	ctx := context.Background()
	start := time.Now()
	admin.MustRun(b, manifest, "create", "-f", "-")
	phases := map[string]time.Duration{}
	seen := func(phase string) {
		if _, ok := phases[phase]; !ok {
			phases[phase] = time.Since(start)
		}
	}
	var ns string
	framework.Eventually(b, 3*time.Minute, name+" Ready", func() (bool, string) {
		nc, err := capn.CapnV1alpha1().NestedClusters("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, typ := range []string{v1alpha1.ConditionEtcdReady, v1alpha1.ConditionAPIServerAvailable,
			v1alpha1.ConditionControllerManagerAvailable, v1alpha1.ConditionSchedulerAvailable,
			v1alpha1.ConditionTenantBootstrapped, v1alpha1.ConditionReady} {
			if meta.IsStatusConditionTrue(nc.Status.Conditions, typ) {
				seen(typ)
			}
		}
		pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ClusterLabel + "=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			comp := p.Labels[v1alpha1.ComponentLabel]
			if comp == "" || p.Labels["capn.dev/cluster-namespace"] != "default" {
				continue
			}
			ns = p.Namespace
			seen(comp + " pod created")
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == comp && s.State.Running != nil {
					seen(comp + " container running")
				}
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					seen(comp + " pod Ready")
				}
			}
		}
		_, ready := phases[v1alpha1.ConditionReady]
		return ready, fmt.Sprint(nc.Status.Conditions)
	})
	admin.MustRun(b, "", "delete", "nc", name, "--wait=false")
	framework.Eventually(b, 3*time.Minute, "namespace of "+name+" gone", func() (bool, string) {
		if ns == "" {
			return true, ""
		}
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	return phases
}

// phaseOrder lists every phase seen, by median time.
func phaseOrder(all []map[string]time.Duration) []string {
	sum := map[string]time.Duration{}
	for _, ph := range all {
		for n, d := range ph {
			sum[n] += d
		}
	}
	var names []string
	for n := range sum {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(sum[a] - sum[b]) })
	return names
}

func msOrEmpty(ph map[string]time.Duration, n string) string {
	if d, ok := ph[n]; ok {
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	return ""
}
