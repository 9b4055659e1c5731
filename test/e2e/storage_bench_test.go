//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"capn.dev/capn/test/framework"
)

// BenchmarkStorage is `make bench-storage`, the number of issue 32 §6: a
// StatefulSet of CAPN_BENCH_STORAGE_REPLICAS (default 10) pods with a
// claim each, created → every pod Ready, in a tenant against the same
// StatefulSet created directly in a management namespace, taking turns,
// CAPN_BENCH_STORAGE_RUNS times (default 3), on one real node with the
// local cluster's provisioner. Each run starts with no volume of the
// previous one left. storage.csv goes to CAPN_BENCH_OUT.
func BenchmarkStorage(b *testing.B) {
	if os.Getenv("CAPN_BENCH_STORAGE") != "1" {
		b.Skip("CAPN_BENCH_STORAGE=1 runs it (make bench-storage)")
	}
	runs, replicas := envInt(b, "CAPN_BENCH_STORAGE_RUNS", 3), envInt(b, "CAPN_BENCH_STORAGE_REPLICAS", 10)
	out := os.Getenv("CAPN_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		c := framework.StartCluster(b, clusterOptions(b))
		node := c.StartNode(b, framework.NodeOptions{Kubelet: env(b, "KUBELET"), KubeProxy: env(b, "KUBE_PROXY"), Images: []string{env(b, "CAPN_IMAGES")}})
		admin := framework.Kubectl{Bin: env(b, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
		framework.DeployStorage(b, c, node, admin, repoFile(b, ""))
		framework.DeployCapn(b, c, node, admin, repoFile(b, ""))
		admin.Namespace = "default"
		cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
		if err != nil {
			b.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 100, 200
		host := kubernetes.NewForConfigOrDie(cfg)
		n := strconv.Itoa(replicas + 5)
		manifest := fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec:\n  dataPlane:\n    mode: Shared\n    quota: {pods: %q, persistentvolumeclaims: %q, requests.storage: 100Gi}\n", dpCluster, n, n)
		framework.Eventually(b, time.Minute, "kubectl create of NestedCluster "+dpCluster, func() (bool, string) {
			res := admin.Run(manifest, "create", "-f", "-")
			return res.Err == nil, res.Stdout + res.Stderr
		})
		framework.Eventually(b, 5*time.Minute, dpCluster+" Ready", func() (bool, string) {
			r := admin.Run("", "get", "nc", dpCluster, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return r.Stdout == "True", r.Stdout + r.Stderr
		})
		tenant := kubernetes.NewForConfigOrDie(benchTenantConfig(b, admin, dpCluster))
		framework.Eventually(b, 2*time.Minute, "the tenant's StorageClass and virtual Node", func() (bool, string) {
			_, err := tenant.StorageV1().StorageClasses().Get(ctx, framework.StorageClass, metav1.GetOptions{})
			nodes, nerr := tenant.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err == nil && nerr == nil && len(nodes.Items) > 0, fmt.Sprint(err, nerr)
		})

		rows := [][]string{{"run", "target", "replicas", "seconds"}}
		times := map[string][]time.Duration{}
		for run := 1; run <= runs; run++ {
			for _, target := range []struct {
				name   string
				client kubernetes.Interface
				ns     string
			}{{"tenant", tenant, dpTenantNS}, {"direct", host, dpDirectNS}} {
				d := statefulSetToReady(b, ctx, target.client, target.ns, replicas)
				times[target.name] = append(times[target.name], d)
				rows = append(rows, []string{strconv.Itoa(run), target.name, strconv.Itoa(replicas), fmt.Sprintf("%.3f", d.Seconds())})
				b.Logf("run %d %s: StatefulSet(%d) with a claim each -> all Ready %s", run, target.name, replicas, d.Round(time.Millisecond))
			}
		}
		ten, dir := medianOf(times["tenant"]), medianOf(times["direct"])
		b.Logf("numbers: StatefulSet(%d) with a claim each, create -> all Ready, median of %d: tenant %s, direct %s, ratio %.2fx",
			replicas, runs, ten.Round(time.Millisecond), dir.Round(time.Millisecond), ten.Seconds()/dir.Seconds())
		b.ReportMetric(ten.Seconds(), "tenant-s")
		b.ReportMetric(dir.Seconds(), "direct-s")
		b.ReportMetric(ten.Seconds()/dir.Seconds(), "ratio")
		if err := os.MkdirAll(out, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := writeCSV(filepath.Join(out, "storage.csv"), rows); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}

// storageBenchImage is what the benchmark's pods run.
const storageBenchImage = "capn.dev/capn-testserver:dev"

// statefulSetToReady creates namespace ns and a StatefulSet of replicas
// test-server pods with a claim each (podManagementPolicy Parallel, so the
// number is the data plane's and the provisioner's, not the ordered
// roll's), returns the time from its create to every pod Ready as the
// StatefulSet reports it, then deletes namespace and waits until its
// volumes are gone.
func statefulSetToReady(b *testing.B, ctx context.Context, c kubernetes.Interface, ns string, replicas int) time.Duration {
	b.Helper()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	labels := map[string]string{"app": "bench-storage"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(replicas)),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					// The test server, which the dev overlay lists as cached:
					// a tenant pulls every other image, and nothing is
					// reachable to pull from.
					Containers: []corev1.Container{{Name: "c", Image: storageBenchImage, Args: []string{"serve"}, ImagePullPolicy: corev1.PullIfNotPresent,
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Mi")}}},
			}},
		},
	}
	w, err := c.AppsV1().StatefulSets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "db").String()})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	deadline := time.After(10 * time.Minute)
	var took time.Duration
	for took == 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("the StatefulSet watch closed")
			}
			if s, isSTS := ev.Object.(*appsv1.StatefulSet); isSTS && ev.Type != watch.Deleted && s.Status.ReadyReplicas == int32(replicas) {
				took = time.Since(start)
			}
		case <-deadline:
			b.Fatalf("%s: StatefulSet(%d) not Ready in 10 minutes", ns, replicas)
		}
	}
	w.Stop()
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	framework.Eventually(b, 5*time.Minute, ns+" and its volumes gone", func() (bool, string) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, "namespace still there"
		}
		pvs, err := c.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		// The namespace's: the management cluster has capn's own.
		left := 0
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d PVs left", left)
	})
	return took
}
