//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/test/framework"
)

// devEtcdDir is the dev overlay's hostPath volume (artifacts/deploy/overlays/dev/volume.yaml).
const devEtcdDir = "/var/lib/capn-dev/etcd"

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
	clusterOpts := framework.ClusterOptions{
		KubeAPIServer:         env(t, "KUBE_APISERVER"),
		KubeControllerManager: env(t, "KUBE_CONTROLLER_MANAGER"),
		KubeScheduler:         env(t, "KUBE_SCHEDULER"),
		Etcd:                  env(t, "ETCD"),
	}
	nodeOpts := framework.NodeOptions{Kubelet: env(t, "KUBELET"), KubeProxy: env(t, "KUBE_PROXY"), Images: []string{images}}
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("CAPN_IMAGES: %v (build it with `make images`)", err)
	}
	// kubectl's discovery cache, otherwise left in ~/.kube/cache.
	t.Setenv("KUBECACHEDIR", t.TempDir())
	// Before the node: its cleanup must run after the pod using it is gone.
	prepareDevEtcdDir(t)
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

	// capn-apiserver as a pod, from a copy of the manifests.
	deployDir := filepath.Join(t.TempDir(), "deploy")
	copyTree(t, repoFile(t, "artifacts/deploy"), deployDir)
	servingCA := writeServingCerts(t, filepath.Join(deployDir, "overlays", "dev", "certs"))
	applied = time.Now()
	admin.MustRun(t, "", "apply", "-k", filepath.Join(deployDir, "overlays", "dev"))
	capnPod := waitCapnPod(ctx, t, c, "")
	capnReady := time.Since(applied)
	dyn := dynamicClient(t, c)
	waitAPIServiceAvailable(ctx, t, dyn)
	available := time.Since(applied)
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
	admin.MustRun(t, "", "delete", "pod", "-l", "app.kubernetes.io/name=capn-apiserver", "-n", capnNS)
	capnPod = waitCapnPod(ctx, t, c, capnPod.Name)
	waitAPIServiceAvailable(ctx, t, dyn)
	framework.Eventually(t, 30*time.Second, "the NestedCluster after the restart", func() (bool, string) {
		r := k.Run("", "get", "nc", "demo", "-o", "jsonpath={.metadata.uid}")
		return r.Err == nil && r.Stdout == uid, fmt.Sprintf("uid %q (want %q) %s", r.Stdout, uid, r.Stderr)
	})
	recovered := time.Since(restarted)

	testClusterIPNeedsFrontProxy(ctx, t, c, servingCA)

	rss := "unknown"
	if len(capnPod.Status.ContainerStatuses) == 1 {
		if pid, err := node.ContainerPID(capnPod.Status.ContainerStatuses[0].ContainerID); err != nil {
			t.Logf("capn-apiserver container pid: %v", err)
		} else if kib, err := framework.RSSKiB(pid); err == nil {
			rss = fmt.Sprintf("%.1f MiB", float64(kib)/1024)
		}
	}
	t.Logf("numbers: node Ready %s | pause Deployment(2) Ready %s after apply | capn pod Ready %s after apply | APIService Available %s after apply | restart recovered in %s | capn RSS %s",
		node.Ready.Round(time.Millisecond), pauseReady.Round(time.Millisecond), capnReady.Round(time.Millisecond),
		available.Round(time.Millisecond), recovered.Round(time.Millisecond), rss)
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

// waitCapnPod waits for a Ready capn-apiserver pod other than notName.
func waitCapnPod(ctx context.Context, t *testing.T, c *framework.Cluster, notName string) *corev1.Pod {
	t.Helper()
	var ready *corev1.Pod
	framework.Eventually(t, 3*time.Minute, "a Ready capn-apiserver pod", func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(capnNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=capn-apiserver"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i, p := range pods.Items {
			seen = append(seen, p.Name+":"+string(p.Status.Phase))
			if p.Name == notName || p.DeletionTimestamp != nil {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready = &pods.Items[i]
					return true, ""
				}
			}
		}
		return false, strings.Join(seen, ", ")
	})
	return ready
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

func dynamicClient(t *testing.T, c *framework.Cluster) dynamic.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return dynamic.NewForConfigOrDie(cfg)
}

func waitAPIServiceAvailable(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, "APIService v1alpha1.capn.dev Available", func() (bool, string) {
		obj, err := dyn.Resource(apiServices).Get(ctx, "v1alpha1.capn.dev", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Available" {
				return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		}
		return false, "no Available condition"
	})
}

// writeServingCerts writes capn's serving certificate, for the Service's
// DNS name, and its CA where the dev overlay's secretGenerator reads them.
func writeServingCerts(t *testing.T, dir string) *framework.CA {
	t.Helper()
	ca, err := framework.NewCA(t.TempDir(), "capn-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.ServingCert("capn-apiserver", []string{capnSvc + "." + capnNS + ".svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM, "ca.crt": ca.CertPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca
}

// prepareDevEtcdDir gives the dev overlay's hostPath volume a fresh, empty
// directory owned by capn-apiserver's uid, and removes it at cleanup. Data
// left by an earlier run is removed: the test needs an empty store.
func prepareDevEtcdDir(t *testing.T) {
	t.Helper()
	parent := filepath.Dir(devEtcdDir)
	if entries, _ := os.ReadDir(devEtcdDir); len(entries) > 0 {
		t.Logf("removing data left in %s by an earlier run", devEtcdDir)
	}
	if err := os.RemoveAll(parent); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(devEtcdDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(devEtcdDir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(parent); err != nil {
			t.Errorf("removing %s: %v", parent, err)
		}
	})
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
}
