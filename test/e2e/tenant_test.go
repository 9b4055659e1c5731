//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/test/framework"
)

// tenantKubeconfig asks capn for a kubeconfig of NestedCluster name as user
// (impersonated through the management apiserver, so the request reaches
// capn the way a real user's does) and writes it to a file. With plugin set
// it goes through `kubectl nested kubeconfig`, else `kubectl create --raw`.
func tenantKubeconfig(t testing.TB, k framework.Kubectl, plugin, name, user string) string {
	t.Helper()
	var out string
	if plugin != "" {
		stdout, stderr, err := runNested(k.Bin, plugin, k.Kubeconfig, time.Minute,
			"kubeconfig", name, "--expiration=30m", "--as="+user, "--namespace="+k.Namespace)
		if err != nil {
			t.Fatalf("kubectl nested kubeconfig %s --as=%s: %v\n%s", name, user, err, stderr)
		}
		out = stdout
	} else {
		body := `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterKubeconfigRequest","spec":{"expirationSeconds":1800}}`
		raw := k.MustRun(t, body, "create", "--raw", kubeconfigPath(k.Namespace, name), "-f", "-", "--as="+user)
		var resp struct {
			Status struct {
				Kubeconfig          string      `json:"kubeconfig"`
				ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(raw), &resp); err != nil {
			t.Fatalf("decoding the kubeconfig answer: %v\n%s", err, raw)
		}
		if d := time.Until(resp.Status.ExpirationTimestamp.Time); d < 25*time.Minute || d > 31*time.Minute {
			t.Errorf("kubeconfig expires in %s, want about the 30m asked for", d)
		}
		out = resp.Status.Kubeconfig
	}
	if !strings.Contains(out, "client-certificate-data") || strings.Contains(out, "token:") {
		t.Fatalf("the answer is not a client-certificate kubeconfig:\n%s", out)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func kubeconfigPath(ns, name string) string {
	return "/apis/capn.dev/v1alpha1/namespaces/" + ns + "/nestedclusters/" + name + "/kubeconfig"
}

// useTenant is what a tenant does first with a new control plane: every
// check goes through the tenant's own apiserver with the issued kubeconfig.
func useTenant(t *testing.T, tk framework.Kubectl, user string, mode v1alpha1.DataPlaneMode) {
	t.Helper()
	if out := tk.MustRun(t, "", "get", "--raw", "/readyz"); out != "ok" {
		t.Errorf("tenant /readyz = %q, want ok", out)
	}
	who := tk.MustRun(t, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if !strings.HasPrefix(who, user+" ") || !strings.Contains(who, access.TenantAdminsGroup) {
		t.Errorf("tenant sees the request as %q, want user %s in group %s", who, user, access.TenantAdminsGroup)
	}
	tk.MustRun(t, "", "create", "namespace", "work")
	tk.MustRun(t, "", "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=2", "-n", "work")
	// With no data plane the tenant has no nodes: the kcm must still
	// create the ReplicaSet and its pods, and the scheduler must try them
	// and say why it cannot bind. With the Shared data plane they run on
	// the virtual node.
	// Shared: only that the kcm made both pods (their running is
	// DataPlaneOnNode's to check).
	want := "Unschedulable"
	if mode == v1alpha1.DataPlaneShared {
		want = "web-"
	}
	framework.Eventually(t, 2*time.Minute, "the tenant kcm and scheduler to act on Deployment web", func() (bool, string) {
		rs := tk.Run("", "get", "rs", "-n", "work", "-o", "name")
		pods := tk.Run("", "get", "pods", "-n", "work", "--no-headers",
			"-o", `custom-columns=NAME:.metadata.name,SCHED:.status.conditions[?(@.type=="PodScheduled")].reason,PHASE:.status.phase`)
		lines := strings.Split(strings.TrimSpace(pods.Stdout), "\n")
		ok := strings.TrimSpace(rs.Stdout) != "" && len(lines) == 2 && strings.Count(pods.Stdout, want) == 2
		return ok, "rs: " + rs.Stdout + rs.Stderr + "; pods:\n" + pods.Stdout + pods.Stderr
	})
	for _, lease := range []string{"kube-scheduler", "kube-controller-manager"} {
		framework.Eventually(t, 60*time.Second, "the tenant "+lease+" to hold its lease", func() (bool, string) {
			r := tk.Run("", "get", "lease", lease, "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}")
			return r.Err == nil && r.Stdout != "", r.Stdout + r.Stderr
		})
	}
}

// capnMetrics scrapes capn-apiserver's /metrics through its Service's
// ClusterIP with the front-proxy identity of the management admin (capn
// authorizes it with a SubjectAccessReview, as it would a user's).
func capnMetrics(ctx context.Context, t *testing.T, c *framework.Cluster, servingCA *framework.CA) string {
	t.Helper()
	svc, err := c.Client.CoreV1().Services(capnNS).Get(ctx, capnSvc, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(servingCA.CertPEM)
	pair, err := tls.X509KeyPair(c.FrontProxyClient.CertPEM, c.FrontProxyClient.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: capnSvc + "." + capnNS + ".svc", Certificates: []tls.Certificate{pair}}}}
	var body string
	framework.Eventually(t, 30*time.Second, "capn /metrics", func() (bool, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(svc.Spec.ClusterIP, "443")+"/metrics", nil)
		req.Header.Set("X-Remote-User", "kubernetes-admin")
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, err := client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return false, fmt.Sprintf("%d %v %.200s", resp.StatusCode, err, b)
		}
		body = string(b)
		return true, ""
	})
	return body
}

// promValue sums the samples of metric name (any labels) in a Prometheus
// text exposition.
func promValue(text, name string) (float64, bool) {
	return promSum(text, name, "")
}

// promLabelled sums the samples of name that carry label="value".
func promLabelled(text, name, label, value string) float64 {
	v, _ := promSum(text, name, label+`="`+value+`"`)
	return v
}

func promSum(text, name, pair string) (float64, bool) {
	sum, found := 0.0, false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		if pair != "" && !strings.Contains(line, pair) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}
