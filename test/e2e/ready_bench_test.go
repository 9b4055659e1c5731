//go:build e2e

package e2e

import (
	"context"
	"encoding/csv"
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
	"capn.dev/capn/test/framework"
)

// BenchmarkReady measures create→Ready of one NestedCluster at a time on
// an idle real node (images present, EmptyDir etcd, the example manifest),
// broken down by phase: when each component's pod was created, its
// container started and the pod became Ready, and when each condition
// turned True, as first seen by a poll every 200 ms (framework.Eventually),
// which is the resolution of every number. Each run's cluster is deleted, and its namespace gone,
// before the next is created. CAPN_BENCH_READY_RUNS runs (default 5);
// per-phase medians are printed and written, with every run, to
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
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	images := env(b, "CAPN_IMAGES")
	c := framework.StartCluster(b, clusterOptions(b))
	node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{images}})
	admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	framework.DeployCapn(b, c, node, admin, repoFile(b, ""))
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
	var all []map[string]time.Duration
	for i := range runs {
		name := fmt.Sprintf("ready-%d", i)
		manifest := strings.Replace(string(example), "name: demo", "name: "+name, 1)
		phases := measureReady(b, c, capn, admin, name, manifest)
		all = append(all, phases)
		b.Logf("run %d: Ready after %s", i, phases["Ready"].Round(time.Millisecond))
	}
	b.StopTimer()

	names := phaseOrder(all)
	rows := [][]string{append([]string{"run"}, names...)}
	for i, ph := range all {
		row := []string{strconv.Itoa(i)}
		for _, n := range names {
			row = append(row, msOrEmpty(ph, n))
		}
		rows = append(rows, row)
	}
	med := map[string]time.Duration{}
	fmt.Printf("\ncreate→phase, median of %d runs (max), idle node, EmptyDir etcd:\n", runs)
	for _, n := range names {
		var ds []time.Duration
		for _, ph := range all {
			if d, ok := ph[n]; ok {
				ds = append(ds, d)
			}
		}
		slices.Sort(ds)
		med[n] = ds[len(ds)/2]
		fmt.Printf("  %-44s %8.1f s  (%.1f)\n", n, med[n].Seconds(), ds[len(ds)-1].Seconds())
	}
	medRow := []string{"median"}
	for _, n := range names {
		medRow = append(medRow, strconv.FormatInt(med[n].Milliseconds(), 10))
	}
	rows = append(rows, medRow)
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
	b.ReportMetric(float64(med["Ready"].Milliseconds()), "ms-create-to-ready")
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
