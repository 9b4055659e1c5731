//go:build e2e

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/provisioner/access"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// joinAnswer is the part of a NestedClusterJoinTokenRequest answer the
// test reads.
type joinAnswer struct {
	Spec struct {
		ExpirationSeconds int64 `json:"expirationSeconds"`
	} `json:"spec"`
	Status struct {
		Endpoint            string      `json:"endpoint"`
		CACertHashes        []string    `json:"caCertHashes"`
		Token               string      `json:"token"`
		ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`
		BootstrapKubeconfig string      `json:"bootstrapKubeconfig"`
	} `json:"status"`
}

// tokenCacheTTL is how long kube-apiserver keeps a successful token
// authentication (TokenSuccessCacheTTL in k8s.io/kubernetes
// pkg/kubeapiserver/options): an expired or deleted token may work that
// much longer.
const tokenCacheTTL = 10 * time.Second

func joinTokenPath(ns, name string) string {
	return "/apis/capn.dev/v1alpha1/namespaces/" + ns + "/nestedclusters/" + name + "/jointoken"
}

// joinPods run in the tenant: one steered to the joined node by its label
// (tolerating its taints; it cannot start there: no pod network), one to a
// virtual node. Each reads a Secret of its own.
const joinPods = `apiVersion: v1
kind: Namespace
metadata: {name: joinchk}
---
apiVersion: v1
kind: Secret
metadata: {name: mine, namespace: joinchk}
stringData: {v: for-the-joined-node}
---
apiVersion: v1
kind: Secret
metadata: {name: other, namespace: joinchk}
stringData: {v: for-the-virtual-node}
---
apiVersion: v1
kind: Pod
metadata: {name: on-joined, namespace: joinchk}
spec:
  nodeSelector: {e2e.capn.dev/pool: joined}
  tolerations:
  - {key: capn.dev/joined, operator: Exists}
  - {key: node.kubernetes.io/not-ready, operator: Exists}
  containers:
  - name: c
    image: capn.dev/capn-testserver:dev
    args: [serve]
    env: [{name: S, valueFrom: {secretKeyRef: {name: mine, key: v}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: on-virtual, namespace: joinchk}
spec:
  nodeSelector: {capn.dev/virtual-node: "true"}
  containers:
  - name: c
    image: capn.dev/capn-testserver:dev
    args: [serve]
    env: [{name: S, valueFrom: {secretKeyRef: {name: other, key: v}}}]
`

// testJoinOnNode joins a real kubelet to a Shared tenant (created by
// TestProvisionerOnNode) with a token from nestedclusters/jointoken, as a
// tenant owner would: the token is minted with the plugin, the kubelet's
// client CSR is auto-approved, the Node registers beside the tenant's
// virtual Nodes, and the tenant scheduler places pods on either by node
// selector. The token does nothing else, the node identity reads only its
// own pods' Secrets, and tokens stop working when they expire or are
// deleted.
func testJoinOnNode(t *testing.T, admin, k framework.Kubectl, node *framework.Node, plugin, kubelet, name string, short joinAnswer) {
	tk := framework.Kubectl{Bin: k.Bin, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
	// Not a management node's name: those are the virtual Nodes' names.
	const joined = "capn-joined-1"
	defer func() {
		if t.Failed() {
			for _, args := range [][]string{{"get", "nodes,csr", "-o", "wide"}, {"get", "pods", "-n", "joinchk", "-o", "wide"},
				{"get", "events", "-n", "joinchk"}, {"describe", "node", joined}} {
				r := tk.Run("", args...)
				t.Logf("tenant: kubectl %s:\n%s%s", strings.Join(args, " "), r.Stdout, r.Stderr)
			}
		}
	}()
	dir := t.TempDir()

	// Who may ask: view may not (RBAC, before capn creates anything).
	errOut := k.MustFail(t, `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterJoinTokenRequest"}`,
		"create", "--raw", joinTokenPath("default", name), "-f", "-", "--as=victor")
	assert.Contains(t, strings.ToLower(errOut), "forbidden", "victor's join token request")

	// 1. short, minted by mintExpiringJoinToken before the data-plane
	// tests, has expired or is about to: checked at the end.
	shortID, _, _ := strings.Cut(short.Status.Token, ".")

	// 2. The join token, as a user gets it: kubectl nested join.
	bootstrap := filepath.Join(dir, "bootstrap.kubeconfig")
	minted := time.Now()
	stdout, stderr, err := runNested(k.Bin, plugin, k.Kubeconfig, time.Minute, "join", name, "--ttl=10m",
		"--bootstrap-kubeconfig="+bootstrap, "--as=alice", "--namespace="+k.Namespace)
	require.NoError(t, err, "kubectl nested join: %s", stderr)
	tokenAt := time.Now()
	for _, want := range []string{"endpoint:       https://", "CA cert hash:   sha256:", "bootstrap kubeconfig: " + bootstrap, "delete secret bootstrap-token-"} {
		assert.Contains(t, stdout, want, "kubectl nested join's summary")
	}
	cfg, err := clientcmd.LoadFromFile(bootstrap)
	require.NoError(t, err)
	kctx := cfg.Contexts[cfg.CurrentContext]
	require.NotNil(t, kctx)
	token := cfg.AuthInfos[kctx.AuthInfo].Token
	endpoint := cfg.Clusters[kctx.Cluster].Server
	caPEM := cfg.Clusters[kctx.Cluster].CertificateAuthorityData
	id, _, _ := strings.Cut(token, ".")
	require.Regexp(t, `^[a-z0-9]{6}\.[a-z0-9]{16}$`, token)
	assert.Equal(t, short.Status.Endpoint, endpoint)
	sec := tk.MustRun(t, "", "get", "secret", "-n", "kube-system", "bootstrap-token-"+id, "-o",
		`jsonpath={.type} {.data.expiration} {.data.auth-extra-groups}`)
	f := strings.Fields(sec)
	require.Len(t, f, 3, sec)
	assert.Equal(t, "bootstrap.kubernetes.io/token", f[0])
	assert.Equal(t, access.JoinGroup, b64(t, f[2]))
	if exp, err := time.Parse(time.RFC3339, b64(t, f[1])); assert.NoError(t, err) {
		assert.WithinDuration(t, minted.Add(10*time.Minute), exp, 30*time.Second, "the token's expiration")
	}

	// 3. Discovery: anonymous may read cluster-info, signed for the token
	// by bootstrapsigner, and nothing else.
	anon := anonymousClient(t, caPEM)
	framework.Eventually(t, time.Minute, "cluster-info signed for token "+id, func() (bool, string) {
		code, body := httpGet(anon, endpoint+"/api/v1/namespaces/kube-public/configmaps/cluster-info")
		var cm corev1.ConfigMap
		_ = json.Unmarshal([]byte(body), &cm)
		return code == http.StatusOK && strings.Contains(cm.Data["kubeconfig"], "server: "+endpoint) &&
			cm.Data["jws-kubeconfig-"+id] != "", fmt.Sprintf("%d %.300s", code, body)
	})
	for _, path := range []string{"/api/v1/namespaces/kube-public/configmaps", "/api/v1/namespaces/kube-system/secrets", "/api/v1/nodes"} {
		code, body := httpGet(anon, endpoint+path)
		assert.Equal(t, http.StatusUnauthorized, code, "anonymous GET %s: %.200s", path, body)
	}

	// 4. The token registers nodes and does nothing else.
	bk := framework.Kubectl{Bin: k.Bin, Kubeconfig: bootstrap}
	who := bk.MustRun(t, "", "auth", "whoami", "-o", "json")
	assert.Contains(t, who, `"system:bootstrap:`+id+`"`)
	assert.Contains(t, who, `"`+access.JoinGroup+`"`)
	assert.Equal(t, "yes", strings.TrimSpace(bk.Run("", "auth", "can-i", "create", "certificatesigningrequests").Stdout))
	for _, args := range [][]string{
		{"get", "secrets", "-A"}, {"get", "secret", "-n", "kube-system", "bootstrap-token-" + id},
		{"get", "nodes"}, {"get", "pods", "-A"}, {"get", "configmaps", "-n", "kube-system"},
		{"create", "namespace", "from-a-token"},
	} {
		errOut := bk.MustFail(t, "", args...)
		assert.Contains(t, errOut, "Forbidden", "the bootstrap token: kubectl %s", strings.Join(args, " "))
	}

	// 5. A real kubelet joins with it: its client CSR is approved, and it
	// registers its Node, labelled and tainted as a user would.
	data, err := os.ReadFile(bootstrap)
	require.NoError(t, err)
	j := node.StartJoinedKubelet(t, framework.JoinedKubeletOptions{Kubelet: kubelet, Name: joined, BootstrapKubeconfig: data,
		NodeLabels:         "e2e.capn.dev/pool=joined",
		RegisterWithTaints: []corev1.Taint{{Key: "capn.dev/joined", Effect: corev1.TaintEffectNoSchedule}}})
	healthy := time.Since(tokenAt)
	var approved time.Duration
	framework.Eventually(t, 2*time.Minute, "the joined kubelet's client CSR approved and issued", func() (bool, string) {
		r := tk.Run("", "get", "csr", "-o", "json")
		var list certificatesv1.CertificateSigningRequestList
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
			return false, r.Stderr
		}
		for _, csr := range list.Items {
			if csr.Spec.Username != "system:bootstrap:"+id {
				continue
			}
			state := fmt.Sprintf("%s by %s: %v, %d bytes issued", csr.Name, csr.Spec.SignerName, csr.Status.Conditions, len(csr.Status.Certificate))
			if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
				t.Fatalf("the bootstrap token asked for another signer: %s", state)
			}
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
					t.Fatalf("the kubelet's CSR was not approved: %s", state)
				}
				if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue && len(csr.Status.Certificate) > 0 {
					if approved == 0 {
						approved = time.Since(tokenAt)
					}
					return c.Reason == "AutoApproved", state
				}
			}
			return false, state
		}
		return false, "no CSR from system:bootstrap:" + id + " yet"
	})
	framework.Eventually(t, 2*time.Minute, "Node "+joined+" registered", func() (bool, string) {
		r := tk.Run("", "get", "node", joined, "-o", "jsonpath={.metadata.labels.e2e\\.capn\\.dev/pool} {.spec.taints[*].key}")
		return r.Err == nil && strings.HasPrefix(r.Stdout, "joined ") && strings.Contains(r.Stdout, "capn.dev/joined"), r.Stdout + r.Stderr
	})
	registered := time.Since(tokenAt)
	t.Logf("numbers: join token -> Node registered %s (token minted by kubectl nested join in %s; kubelet and its containerd started, healthy %s after the token; client CSR approved and issued %s after)",
		registered.Round(time.Millisecond), tokenAt.Sub(minted).Round(time.Millisecond), healthy.Round(time.Millisecond), approved.Round(time.Millisecond))

	// 6. Virtual and joined Nodes in one tenant: the tenant scheduler
	// places each pod by its node selector; the syncer runs only the one
	// on a virtual Node on the host.
	tk.MustRun(t, joinPods, "apply", "-f", "-")
	for pod, want := range map[string]string{"on-joined": joined, "on-virtual": node.Name} {
		framework.Eventually(t, time.Minute, pod+" bound to "+want, func() (bool, string) {
			r := tk.Run("", "get", "pod", "-n", "joinchk", pod, "-o", "jsonpath={.spec.nodeName}")
			return r.Err == nil && r.Stdout == want, r.Stdout + r.Stderr
		})
	}
	wns := k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.status.workloadNamespace}")
	framework.Eventually(t, 2*time.Minute, "on-virtual Running on the host", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", "joinchk", "on-virtual", "-o", "jsonpath={.status.phase}")
		return r.Stdout == "Running", r.Stdout + r.Stderr
	})
	// The joined kubelet took on-joined (it reports the pod's status,
	// which NodeRestriction allows only for its own pods); the host has no
	// copy of it.
	framework.Eventually(t, time.Minute, "the joined kubelet reporting on-joined", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", "joinchk", "on-joined", "-o", "jsonpath={.status.hostIP} {.status.phase}")
		return r.Stdout == node.IP.String()+" Pending", r.Stdout + r.Stderr
	})
	assert.Contains(t, admin.Run("", "get", "pod", "-n", wns, names.Host("joinchk", "on-joined"), "-o", "name").Stderr, "NotFound",
		"a host pod for the pod on the joined node")
	admin.MustRun(t, "", "get", "pod", "-n", wns, names.Host("joinchk", "on-virtual"), "-o", "name")

	// 7. The node's identity: Node authorization and NodeRestriction. It
	// reads the Secret of the pod bound to it, not the other's, lists
	// none, and cannot change another Node.
	framework.Eventually(t, time.Minute, "the joined kubelet's kubeconfig", func() (bool, string) {
		_, err := os.Stat(j.Kubeconfig)
		return err == nil, fmt.Sprint(err)
	})
	nk := framework.Kubectl{Bin: k.Bin, Kubeconfig: j.Kubeconfig}
	who = nk.MustRun(t, "", "auth", "whoami", "-o", "json")
	assert.Contains(t, who, `"system:node:`+joined+`"`)
	assert.Contains(t, who, `"system:nodes"`)
	framework.Eventually(t, time.Minute, "the joined node reads the Secret of its own pod", func() (bool, string) {
		r := nk.Run("", "get", "secret", "-n", "joinchk", "mine", "-o", "jsonpath={.metadata.name}")
		return r.Err == nil && r.Stdout == "mine", r.Stdout + r.Stderr
	})
	errOut = nk.MustFail(t, "", "get", "secret", "-n", "joinchk", "other")
	assert.Contains(t, errOut, "Forbidden", "the joined node reads the Secret of a pod on another node")
	assert.Contains(t, errOut, "no relationship found between node", "refused by the Node authorizer")
	for _, args := range [][]string{
		{"get", "secrets", "-n", "joinchk"},
		{"label", "node", node.Name, "e2e.capn.dev/touched=yes"},
		{"delete", "pod", "-n", "joinchk", "on-virtual"},
	} {
		assert.Contains(t, nk.MustFail(t, "", args...), "Forbidden", "the joined node: kubectl %s", strings.Join(args, " "))
	}

	// 8. Revoking: deleting the token's Secret in the tenant ends it
	// (within tokenCacheTTL); the joined node keeps its certificate.
	tk.MustRun(t, "", "delete", "secret", "-n", "kube-system", "bootstrap-token-"+id)
	revoked := time.Now()
	framework.Eventually(t, tokenCacheTTL+20*time.Second, "the deleted token refused", func() (bool, string) {
		code, body := httpGetAs(anon, endpoint+"/api", token)
		return code == http.StatusUnauthorized, fmt.Sprintf("%d %.200s", code, body)
	})
	t.Logf("numbers: a deleted join token refused %s after the delete", time.Since(revoked).Round(100*time.Millisecond))
	nk.MustRun(t, "", "get", "node", joined, "-o", "name")

	// 9. Expiry: the 60 s token is refused once it expires, and
	// kube-controller-manager's tokencleaner deletes it. kube-apiserver
	// caches a successful token authentication for 10 s (its
	// TokenSuccessCacheTTL, not a flag), so a token that was just used
	// may work that much longer.
	expires := short.Status.ExpirationTimestamp.Time
	framework.Eventually(t, max(time.Until(expires), 0)+time.Minute, "the 60 s token refused after it expired", func() (bool, string) {
		code, body := httpGetAs(anon, endpoint+"/api", short.Status.Token)
		if code == http.StatusOK && time.Now().After(expires.Add(tokenCacheTTL+2*time.Second)) {
			t.Fatalf("the 60 s token still works %s after its expirationTimestamp", time.Since(expires))
		}
		return code == http.StatusUnauthorized, fmt.Sprintf("%d %.200s", code, body)
	})
	refused := time.Since(expires)
	framework.Eventually(t, max(time.Until(expires), 0)+2*time.Minute, "the expired token's Secret deleted by tokencleaner", func() (bool, string) {
		r := tk.Run("", "get", "secret", "-n", "kube-system", "bootstrap-token-"+shortID, "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	// When the data-plane tests ran in between, it expired long ago and
	// these are only upper bounds.
	t.Logf("numbers: a 60 s join token refused %s and deleted %s after its expirationTimestamp (1 s resolution; an upper bound if it had long expired)",
		refused.Round(time.Second), time.Since(expires).Round(time.Second))

	// The end: the kubelet stops and its Node goes, so nothing else in
	// the tenant sees it.
	j.Kubelet.Stop()
	tk.MustRun(t, "", "delete", "node", joined)
	tk.MustRun(t, "", "delete", "namespace", "joinchk", "--wait=false")
}

// b64 decodes a Secret value as kubectl's jsonpath prints it.
func b64(t *testing.T, s string) string {
	t.Helper()
	out, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return string(out)
}

// mintExpiringJoinToken mints a 60 s join token for name and checks that
// it authenticates as its bootstrap user. TestProvisionerOnNode mints it
// before the data-plane tests, so testJoinOnNode finds it expired instead
// of waiting a minute for it.
func mintExpiringJoinToken(t *testing.T, k framework.Kubectl, name string) joinAnswer {
	t.Helper()
	short := mintJoinToken(t, k, name, 60)
	if d := time.Until(short.Status.ExpirationTimestamp.Time); d < 40*time.Second || d > 61*time.Second {
		t.Errorf("the 60 s token expires in %s", d)
	}
	id, _, _ := strings.Cut(short.Status.Token, ".")
	path := filepath.Join(t.TempDir(), "short.kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(short.Status.BootstrapKubeconfig), 0o600))
	sk := framework.Kubectl{Bin: k.Bin, Kubeconfig: path}
	assert.Equal(t, "system:bootstrap:"+id, strings.TrimSpace(sk.MustRun(t, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")))
	return short
}

// mintJoinToken asks for a join token as alice with kubectl create --raw.
func mintJoinToken(t *testing.T, k framework.Kubectl, name string, seconds int64) joinAnswer {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterJoinTokenRequest","spec":{"expirationSeconds":%d}}`, seconds)
	raw := k.MustRun(t, body, "create", "--raw", joinTokenPath(k.Namespace, name), "-f", "-", "--as=alice")
	var a joinAnswer
	require.NoError(t, json.Unmarshal([]byte(raw), &a), raw)
	require.Equal(t, seconds, a.Spec.ExpirationSeconds)
	require.NotEmpty(t, a.Status.Token)
	require.NotEmpty(t, a.Status.CACertHashes)
	return a
}

// anonymousClient trusts the tenant CA and sends no credentials.
func anonymousClient(t *testing.T, caPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func httpGet(c *http.Client, url string) (int, string) { return httpGetAs(c, url, "") }

// httpGetAs GETs url with a bearer token (none if empty).
func httpGetAs(c *http.Client, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}
