//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/test/framework"
)

// kwokNodePods is each kwok node's pod capacity: room for every
// control-plane pod, four per cluster, with the LimitRange's default
// requests.
const kwokNodePods = 250

// kwokCapn is a management control plane with kwok nodes (no real node)
// and capn-apiserver, provisioner on, as a host process behind the
// aggregator: what bench-scale and the fault matrix drive.
type kwokCapn struct {
	c     *framework.Cluster
	capn  *framework.AggregatedServer
	admin framework.Kubectl
}

func startKwokCapn(t testing.TB, nodes int, capnArgs ...string) *kwokCapn {
	t.Helper()
	opts := clusterOptions(t)
	// The management cluster's own limits, raised so that capn is what is
	// measured: kube-controller-manager's client defaults to 20 QPS (a
	// thousand clusters are ~7,000 ReplicaSets and Pods to create), and on
	// a saturated 2-core machine kwok's node heartbeats arrive late, which
	// the node lifecycle controller would take for dead nodes and flap
	// every pod's readiness.
	opts.ControllerManagerArgs = []string{"--kube-api-qps=200", "--kube-api-burst=400", "--node-monitor-grace-period=10m"}
	opts.SchedulerArgs = []string{"--kube-api-qps=200", "--kube-api-burst=400"}
	c := framework.StartCluster(t, opts)
	t.Setenv("KUBECACHEDIR", t.TempDir())
	c.StartKwok(t, framework.KwokOptions{Bin: env(t, "KWOK"), StageDir: env(t, "KWOK_STAGES"), Nodes: nodes,
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4000"), corev1.ResourceMemory: resource.MustParse("16Ti"),
			corev1.ResourcePods: resource.MustParse(strconv.Itoa(kwokNodePods)),
		}})
	admin := framework.Kubectl{Bin: env(t, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}
	admin.MustRun(t, "", "create", "namespace", capnNS)
	admin.MustRun(t, "", "create", "serviceaccount", capnSA, "-n", capnNS)
	admin.MustRun(t, "", "apply", "-k", repoFile(t, "artifacts/deploy/rbac"))
	// The management client is capn's own service account, as in a pod.
	sa, err := c.Client.CoreV1().ServiceAccounts(capnNS).CreateToken(context.Background(), capnSA,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mgmtKubeconfig := c.TokenKubeconfig("capn-management", sa.Status.Token)
	capn := c.StartAggregatedServer(t, env(t, "CAPN_APISERVER"), capnNS, capnSA, capnSvc, append([]string{
		"--embedded-etcd-data-dir=" + filepath.Join(c.Dir, "capn-etcd"),
		"--provisioner=pods", "--management-kubeconfig=" + mgmtKubeconfig,
		"--control-plane-node-selector=type=kwok", "--control-plane-tolerations=kwok.x-k8s.io/node:NoSchedule",
		"--orphan-sweep=false"}, capnArgs...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := capn.Expose(ctx); err != nil {
		t.Fatal(err)
	}
	if err := capn.RegisterAPIService(ctx, "capn.dev", "v1alpha1", 1000, 15); err != nil {
		t.Fatal(err)
	}
	admin.MustRun(t, "", "wait", "--for=condition=Available", "apiservice/v1alpha1.capn.dev", "--timeout=2m")
	return &kwokCapn{c: c, capn: capn, admin: admin}
}
