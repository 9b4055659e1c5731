//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

// Users of the security checks, in their own namespace: mallory has the
// aggregated edit role (NestedClusters, Secrets, everything a team gets);
// nelly may manage NestedClusters (capn-edit) but not read Secrets.
const (
	hostileNS = "hostile"
	mallory   = "mallory"
	nelly     = "nelly"
)

// checkTenantBoundary tries what a hostile tenant would, through kubectl
// and the aggregator, and asserts each is refused with the field path and
// the HTTP status a Kubernetes client expects. victim is a NestedCluster
// of another namespace (default) whose control plane the attacker must not
// reach.
func checkTenantBoundary(t *testing.T, admin, victim framework.Kubectl) {
	t.Helper()
	admin.MustRun(t, "", "create", "namespace", hostileNS)
	admin.MustRun(t, "", "create", "rolebinding", "mallory-edit", "--clusterrole=edit", "--user="+mallory, "-n", hostileNS)
	admin.MustRun(t, "", "create", "rolebinding", "nelly-capn", "--clusterrole=capn-edit", "--user="+nelly, "-n", hostileNS)
	k := admin
	k.Namespace = hostileNS

	t.Run("scheduling escapes", func(t *testing.T) {
		for field, tpl := range map[string]string{
			"spec.apiServer.podTemplate.spec.nodeName":          `{nodeName: the-providers-node}`,
			"spec.apiServer.podTemplate.spec.hostNetwork":       `{hostNetwork: true}`,
			"spec.apiServer.podTemplate.spec.tolerations":       `{tolerations: [{operator: Exists}]}`,
			"spec.apiServer.podTemplate.spec.priorityClassName": `{priorityClassName: system-node-critical}`,
		} {
			m := fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: escape}\nspec:\n  apiServer:\n    podTemplate:\n      spec: %s\n", tpl)
			expectRefused(t, k, m, 422, field, "create", "-f", "-", "--as="+mallory)
		}
		expectRefused(t, k, "", 404, "", "get", "nc", "escape", "--as="+mallory) // nothing partial
	})

	t.Run("secret reference", func(t *testing.T) {
		admin.MustRun(t, "", "create", "secret", "generic", "providers-etcd", "-n", hostileNS, "--from-literal=ca.crt=x")
		m := "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: exfil}\nspec:\n  etcd:\n    external:\n      endpoints: [\"https://10.0.0.1:2379\"]\n      prefix: /x\n      caSecretRef: {name: providers-etcd}\n      clientSecretRef: {name: providers-etcd}\n"
		out := expectRefused(t, k, m, 422, "spec.etcd.external.caSecretRef.name", "create", "-f", "-", "--as="+nelly)
		assert.Contains(t, out, `lacks permission "get" on secrets "providers-etcd"`)
		// mallory may read the Secret, so she may reference it (dry run: no tenant).
		k.MustRun(t, m, "create", "-f", "-", "--dry-run=server", "--as="+mallory)
	})

	// capn's informers select on its managed-by label cluster-wide; the
	// policies in artifacts/deploy/rbac/reserved-labels.yaml keep the label
	// capn's, so a tenant cannot have capn cache what it makes.
	t.Run("reserved label", func(t *testing.T) {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: spoof, labels: {" + provisioner.ManagedByLabel + ": " + provisioner.ManagedByValue + "}}\n"
		out := expectRefused(t, k, cm, 422, "metadata.labels["+provisioner.ManagedByLabel+"]", "create", "-f", "-", "--as="+mallory)
		assert.Contains(t, out, "capn-reserved-label")
		k.MustRun(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n", "create", "-f", "-", "--as="+mallory)
		expectRefused(t, k, "", 422, "metadata.labels["+provisioner.ManagedByLabel+"]", "label", "configmap", "plain",
			provisioner.ManagedByLabel+"="+provisioner.ManagedByValue, "--as="+mallory)
		// Not even the provider's admin labels a namespace as capn's.
		ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: capn-fake, labels: {" + provisioner.ManagedByLabel + ": " + provisioner.ManagedByValue + "}}\n"
		out = expectRefused(t, admin, ns, 422, "", "create", "-f", "-")
		assert.Contains(t, out, "capn-reserved-namespace-label")
	})

	// The quota: the management cluster's kube-controller-manager counts
	// NestedClusters (discovered through the aggregator) and capn's own
	// admission chain charges each create.
	// kube-controller-manager counts a resource once its discovery (every
	// 30 s) has seen it; a quota made before that is counted at its next
	// full resync (5 min) or when its spec.hard changes, so the wait
	// changes an unrelated limit.
	admin.MustRun(t, "", "create", "quota", "clusters", "-n", hostileNS, "--hard=count/nestedclusters.capn.dev=1")
	nudge, nudged := 0, time.Now()
	framework.Eventually(t, 2*time.Minute, "the quota's usage to be counted", func() (bool, string) {
		r := admin.Run("", "get", "quota", "clusters", "-n", hostileNS, "-o", `jsonpath={.status.used.count/nestedclusters\.capn\.dev}`)
		if r.Err == nil && r.Stdout == "0" {
			return true, ""
		}
		if time.Since(nudged) > 5*time.Second {
			nudge, nudged = nudge+1, time.Now()
			admin.Run("", "patch", "quota", "clusters", "-n", hostileNS, "--type=merge", fmt.Sprintf(`-p={"spec":{"hard":{"configmaps":"%d"}}}`, 1000+nudge))
		}
		return false, r.Stdout + r.Stderr
	})
	k.MustRun(t, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: first}\n", "create", "-f", "-", "--as="+mallory)
	t.Run("quota", func(t *testing.T) {
		out := expectRefused(t, k, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: second}\n", 403, "", "create", "-f", "-", "--as="+mallory)
		assert.Contains(t, out, "exceeded quota: clusters")
	})

	// Wait until capn has made "first" a namespace of its own.
	var ns string
	framework.Eventually(t, 2*time.Minute, "first's management namespace", func() (bool, string) {
		uid := k.MustRun(t, "", "get", "nc", "first", "-o", "jsonpath={.metadata.uid}")
		// The control-plane namespace: a Shared cluster's workload
		// namespace carries the same owner UID.
		r := admin.Run("", "get", "namespaces", "-l", provisioner.OwnerUIDLabel+"="+uid+",!"+provisioner.WorkloadNamespaceLabel, "-o", "jsonpath={.items[*].metadata.name}")
		ns = strings.TrimSpace(r.Stdout)
		return r.Err == nil && ns != "", r.Stdout + r.Stderr
	})

	// first is Shared: its workload namespace is capn's too.
	var wns string
	framework.Eventually(t, time.Minute, "first's status.workloadNamespace", func() (bool, string) {
		wns = k.MustRun(t, "", "get", "nc", "first", "-o", "jsonpath={.status.workloadNamespace}")
		return wns != "", wns
	})

	t.Run("cross-tenant credentials", func(t *testing.T) {
		// A name that starts like the victim's does not buy its namespace:
		// management names carry the whole UID.
		victimUID := victim.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.metadata.uid}")
		assert.NotContains(t, ns, strings.ReplaceAll(victimUID, "-", ""))
		// mallory cannot ask for the victim's kubeconfig, and hers is
		// worthless against the victim's apiserver: another CA signed it.
		expectRefused(t, victim, `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterKubeconfigRequest"}`, 403, "",
			"create", "--raw", kubeconfigPath("default", "demo"), "-f", "-", "--as="+mallory)
		var mine string
		framework.Eventually(t, 2*time.Minute, "a kubeconfig for first", func() (bool, string) {
			r := k.Run(`{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterKubeconfigRequest"}`, "create", "--raw", kubeconfigPath(hostileNS, "first"), "-f", "-", "--as="+mallory)
			mine = r.Stdout
			return r.Err == nil, r.Stderr
		})
		require.Contains(t, mine, "client-certificate-data")
		// The endpoint is in status from the first sync, long before the
		// apiserver behind it answers: wait for that, or a refused
		// connection would stand in for the refused credential.
		victim.MustRun(t, "", "wait", "nc/demo", "--for=condition=APIServerAvailable", "--timeout=3m")
		victimURL := victim.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.status.endpoint}")
		require.NotEmpty(t, victimURL)
		path := filepath.Join(t.TempDir(), "mallory.kubeconfig")
		require.NoError(t, os.WriteFile(path, []byte(kubeconfigOf(t, mine)), 0o600))
		tk := framework.Kubectl{Bin: admin.Bin, Kubeconfig: path}
		out := tk.MustFail(t, "", "get", "--raw", "/api", "--server="+victimURL, "--insecure-skip-tls-verify")
		assert.Contains(t, out, "Unauthorized")
	})

	t.Run("finalizer", func(t *testing.T) {
		framework.Eventually(t, time.Minute, "capn's finalizer on first", func() (bool, string) {
			out := k.MustRun(t, "", "get", "nc", "first", "-o", "jsonpath={.metadata.finalizers}")
			return strings.Contains(out, "capn.dev/provisioner"), out
		})
		expectRefused(t, k, "", 422, "metadata.finalizers", "patch", "nc", "first", "--type=json",
			`-p=[{"op":"remove","path":"/metadata/finalizers"}]`, "--as="+mallory)
		// The provider's break-glass path (system:masters) may; the
		// namespace it leaves behind goes to the orphan sweep. capn re-adds
		// its finalizer to a live object, so the delete is conditional on
		// the patched resourceVersion, and retried until it wins the race.
		cfg, err := clientcmd.BuildConfigFromFlags("", admin.Kubeconfig)
		require.NoError(t, err)
		ncs := versioned.NewForConfigOrDie(cfg).CapnV1alpha1().NestedClusters(hostileNS)
		framework.Eventually(t, time.Minute, "a break-glass delete of first without capn's finalizer", func() (bool, string) {
			rv := k.MustRun(t, "", "patch", "nc", "first", "--type=merge", `-p={"metadata":{"finalizers":null}}`, "-o", "jsonpath={.metadata.resourceVersion}")
			err := ncs.Delete(context.Background(), "first", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
			return err == nil, fmt.Sprint(err)
		})
		for _, n := range []string{ns, wns} {
			framework.Eventually(t, 3*time.Minute, "the orphan sweep to delete "+n, func() (bool, string) {
				r := admin.Run("", "get", "namespace", n, "-o", "jsonpath={.status.phase}")
				return (r.Err != nil && strings.Contains(r.Stderr, "NotFound")) || r.Stdout == "Terminating", r.Stdout + r.Stderr
			})
		}
		// The recorder sends Events asynchronously.
		framework.Eventually(t, time.Minute, "the sweep's OrphanDeleted Event", func() (bool, string) {
			ev := admin.MustRun(t, "", "get", "events", "-A", "--field-selector=reason=OrphanDeleted", "-o", "jsonpath={.items[*].message}")
			return strings.Contains(ev, "deleted management namespace "+ns), ev
		})
	})
}

// statusLine is how kubectl -v=6 logs a response: URL and HTTP status.
var statusLine = regexp.MustCompile(`url="([^"]+)" status="(\d{3}) `)

// expectRefused runs kubectl -v=6, expects it to fail with HTTP status
// code (of the last response from capn.dev or, failing that, from anyone:
// kubectl follows a 404 with a GET of the namespace) and, if field is set,
// an error naming field; it returns stderr.
func expectRefused(t *testing.T, k framework.Kubectl, stdin string, code int, field string, args ...string) string {
	t.Helper()
	r := k.Run(stdin, append(args, "-v=6")...)
	require.Error(t, r.Err, "kubectl %s succeeded:\n%s", strings.Join(args, " "), r.Stdout)
	var last, lastCapn string
	for _, m := range statusLine.FindAllStringSubmatch(r.Stderr, -1) {
		last = m[2]
		if strings.Contains(m[1], "/capn.dev/") {
			lastCapn = m[2]
		}
	}
	if lastCapn != "" {
		last = lastCapn
	}
	assert.Equal(t, fmt.Sprint(code), last, "kubectl %s: HTTP status\n%s", strings.Join(args, " "), r.Stderr)
	if field != "" {
		assert.Contains(t, r.Stderr, field, "kubectl %s", strings.Join(args, " "))
	}
	return r.Stderr
}

// kubeconfigOf extracts the kubeconfig from a NestedClusterKubeconfigRequest answer.
func kubeconfigOf(t *testing.T, answer string) string {
	t.Helper()
	var resp struct {
		Status struct {
			Kubeconfig string `json:"kubeconfig"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(answer), &resp))
	require.NotEmpty(t, resp.Status.Kubeconfig)
	return resp.Status.Kubeconfig
}
