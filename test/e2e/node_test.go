//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/test/framework"
)

const pauseDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: pause, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: pause}}
  template:
    metadata: {labels: {app: pause}}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      containers:
      - {name: pause, image: "registry.k8s.io/pause:3.10", imagePullPolicy: Never}
`

// TestCapnOnNode deploys capn-apiserver the way users do (kubectl apply -k
// of the dev overlay) onto a real node: containerd + runc + CNI bridge,
// kubelet and kube-proxy, registered with a real control plane.
func TestCapnOnNode(t *testing.T) {
	kubectl, images := env(t, "KUBECTL"), env(t, "CAPN_IMAGES")
	clusterOpts := clusterOptions(t)
	nodeOpts := framework.NodeOptions{Kubelet: env(t, "KUBELET"), KubeProxy: env(t, "KUBE_PROXY"), Images: []string{images}}
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("CAPN_IMAGES: %v (build it with `make images`)", err)
	}
	// kubectl's discovery cache, otherwise left in ~/.kube/cache.
	t.Setenv("KUBECACHEDIR", t.TempDir())
	c := framework.StartCluster(t, clusterOpts)
	if c.NodeIP.IsLoopback() {
		t.Fatalf("no non-loopback node IP: kubelet and pods need %s to be a real address", c.NodeIP)
	}
	node := c.StartNode(t, nodeOpts)
	admin := framework.Kubectl{Bin: kubectl, Kubeconfig: c.AdminKubeconfig}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Smoke: scheduling, sandboxes, CNI and readiness on the node.
	applied := time.Now()
	admin.MustRun(t, pauseDeployment, "apply", "-f", "-")
	admin.MustRun(t, "", "rollout", "status", "deployment/pause", "-n", "default", "--timeout=120s")
	pauseReady := time.Since(applied)

	// capn-apiserver as a pod, from a copy of the manifests (kubectl apply -k
	// of the dev overlay), until its APIService is Available.
	capn := framework.DeployCapn(t, c, node, admin, repoFile(t, ""))
	capnPod, servingCA := capn.Pod, capn.ServingCA
	capnReady, available := capn.PodReady, capn.Available
	if out := admin.MustRun(t, "", "logs", "-n", capnNS, capnPod.Name, "--tail=3"); strings.TrimSpace(out) == "" {
		t.Errorf("kubectl logs of %s printed nothing", capnPod.Name) // kube-apiserver -> kubelet, TLS verified
	}

	k := admin
	k.Namespace = "default"
	// Aggregated discovery can trail the APIService's Available condition.
	framework.Eventually(t, 30*time.Second, "kubectl create of the example NestedCluster", func() (bool, string) {
		r := k.Run("", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
		return r.Err == nil, r.Stdout + r.Stderr
	})
	if out := k.MustRun(t, "", "get", "nc"); !strings.Contains(out, "demo ") {
		t.Fatalf("kubectl get nc does not list demo:\n%s", out)
	}
	uid := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.metadata.uid}")

	// Restart: the new pod must find the embedded etcd's data on the volume.
	restarted := time.Now()
	admin.MustRun(t, "", "delete", "pod", "-l", framework.CapnPodSelector, "-n", capnNS)
	capnPod = framework.WaitCapnPod(ctx, t, c, capnPod.Name)
	framework.WaitCapnAPIServiceAvailable(ctx, t, c)
	framework.Eventually(t, 30*time.Second, "the NestedCluster after the restart", func() (bool, string) {
		r := k.Run("", "get", "nc", "demo", "-o", "jsonpath={.metadata.uid}")
		return r.Err == nil && r.Stdout == uid, fmt.Sprintf("uid %q (want %q) %s", r.Stdout, uid, r.Stderr)
	})
	recovered := time.Since(restarted)

	// capn was killed while it provisioned demo: the new pod must converge
	// on exactly one control plane, with nothing duplicated or left over.
	framework.Eventually(t, 5*time.Minute, "demo Ready after the capn restart", func() (bool, string) {
		r := k.Run("", "get", "nc", "demo", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return r.Stdout == "True", r.Stdout + r.Stderr
	})
	readyAfterRestart := time.Since(restarted)
	mgmtNS := mgmtNamespace(t, admin, "demo")
	objects := admin.MustRun(t, "", "get", "statefulsets,deployments,replicasets,pods", "-n", mgmtNS, "-o", "name")
	counts := map[string]int{}
	for _, o := range strings.Fields(objects) {
		counts[strings.SplitN(o, "/", 2)[0]]++
	}
	// One ReplicaSet per Deployment: the restarted provisioner re-rendered
	// identical templates (same spec hash), so nothing rolled.
	want := map[string]int{"statefulset.apps": 1, "deployment.apps": 3, "replicaset.apps": 3, "pod": 4}
	// A Shared cluster (the default at create) also runs its capn-syncer.
	if mode := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.spec.dataPlane.mode}"); mode == "Shared" {
		want["deployment.apps"]++
		want["replicaset.apps"]++
		want["pod"]++
	}
	for kind, n := range want {
		if counts[kind] != n {
			t.Errorf("after the restart %s has %d %s, want %d:\n%s", mgmtNS, counts[kind], kind, n, objects)
		}
	}

	// Someone deletes the management namespace by hand: capn sees it go
	// (it watches what it created) and builds the control plane again.
	nsUID := admin.MustRun(t, "", "get", "namespace", mgmtNS, "-o", "jsonpath={.metadata.uid}")
	deletedNS := time.Now()
	admin.MustRun(t, "", "delete", "namespace", mgmtNS, "--wait=false")
	framework.Eventually(t, 6*time.Minute, "the management namespace recreated and demo Ready again", func() (bool, string) {
		ns := admin.Run("", "get", "namespace", mgmtNS, "-o", "jsonpath={.metadata.uid}")
		r := k.Run("", "get", "nc", "demo", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return ns.Err == nil && ns.Stdout != nsUID && r.Stdout == "True", "namespace uid " + ns.Stdout + ns.Stderr + ", Ready=" + r.Stdout
	})
	repaired := time.Since(deletedNS)

	testClusterIPNeedsFrontProxy(ctx, t, c, servingCA)

	rss := "unknown"
	if len(capnPod.Status.ContainerStatuses) == 1 {
		if pid, err := node.ContainerPID(capnPod.Status.ContainerStatuses[0].ContainerID); err != nil {
			t.Logf("capn-apiserver container pid: %v", err)
		} else if kib, err := framework.RSSKiB(pid); err == nil {
			rss = fmt.Sprintf("%.1f MiB", float64(kib)/1024)
		}
	}
	t.Logf("numbers: node Ready %s | pause Deployment(2) Ready %s after apply | capn pod Ready %s after apply | APIService Available %s after apply | restart recovered in %s | demo Ready %s after the restart | namespace deleted by hand repaired in %s | capn RSS %s",
		node.Ready.Round(time.Millisecond), pauseReady.Round(time.Millisecond), capnReady.Round(time.Millisecond),
		available.Round(time.Millisecond), recovered.Round(time.Millisecond), readyAfterRestart.Round(time.Millisecond), repaired.Round(time.Millisecond), rss)
}

// testClusterIPNeedsFrontProxy calls capn-apiserver through its Service's
// ClusterIP (kube-proxy's rules, from the host): identity headers without
// the front-proxy client certificate are refused (401); with it they work,
// which shows the 401 is about credentials, not reachability.
func testClusterIPNeedsFrontProxy(ctx context.Context, t *testing.T, c *framework.Cluster, servingCA *framework.CA) {
	svc, err := c.Client.CoreV1().Services(capnNS).Get(ctx, capnSvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + net.JoinHostPort(svc.Spec.ClusterIP, "443") + "/apis/capn.dev/v1alpha1/namespaces/default/nestedclusters"
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(servingCA.CertPEM)
	get := func(cert *framework.KeyPair) (int, error) {
		cfg := &tls.Config{RootCAs: pool, ServerName: capnSvc + "." + capnNS + ".svc"}
		if cert != nil {
			pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
			if err != nil {
				return 0, err
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("X-Remote-User", "kubernetes-admin")
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// kube-proxy programs the restarted pod's endpoint asynchronously
	// (until then the Service has no endpoints and is REJECTed): a pod
	// being Ready does not mean its ClusterIP leads to it yet.
	framework.Eventually(t, 30*time.Second, "the capn-apiserver ClusterIP to answer", func() (bool, string) {
		_, err := get(nil)
		return err == nil, fmt.Sprint(err)
	})
	for _, tc := range []struct {
		name string
		cert *framework.KeyPair
		want int
	}{
		{"forged identity headers, no client certificate", nil, http.StatusUnauthorized},
		{"the same headers with the front-proxy certificate", &c.FrontProxyClient, http.StatusOK},
	} {
		if got, err := get(tc.cert); err != nil || got != tc.want {
			t.Errorf("GET %s, %s = %d (%v), want %d", url, tc.name, got, err, tc.want)
		}
	}
}
