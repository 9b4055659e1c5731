//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
	"capn.dev/capn/test/netprobe"
)

// netpolPods are the tenant pods of testTenantNetworkPolicies: a server
// in np-a (which also says app.kubernetes.io/name=capn-apiserver, the
// label of finding 8), and clients in np-a (one labelled role=client, one
// not) and np-b, each its own capn-testserver.
func netpolPods() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: np-a, labels: {team: a}}\n---\n")
	b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: np-b, labels: {team: b}}\n")
	for _, p := range []struct{ ns, name, labels string }{
		{"np-a", "server", "app: server, app.kubernetes.io/name: capn-apiserver"},
		{"np-a", "client", "role: client"},
		{"np-a", "other", "role: other"},
		{"np-b", "client", "role: client"},
	} {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  containers:
  - {name: c, image: "capn.dev/capn-testserver:dev", args: [serve], resources: {limits: {cpu: 100m, memory: 64Mi}}, readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}}
`, p.name, p.ns, p.labels)
	}
	return b.String()
}

// testTenantNetworkPolicies is issue 30 §3 on the real node: a tenant's
// own NetworkPolicies, applied with kubectl in the tenant, are enforced by
// the management cluster's engine through the syncer's translation, and
// they narrow what capn's baseline lets the tenant's pods do. It also
// shows red-team finding 8 on the host: the server pod says
// app.kubernetes.io/name=capn-apiserver in the tenant, and no host
// selector on that label finds it.
func testTenantNetworkPolicies(t *testing.T, admin framework.Kubectl, node *framework.Node, a dataPlaneTenant) {
	a.tk.MustRun(t, netpolPods(), "apply", "-f", "-")
	defer a.tk.Run("", "delete", "namespace", "np-a", "np-b", "--wait=false")
	for _, ns := range []string{"np-a", "np-b"} {
		a.tk.MustRun(t, "", "wait", "-n", ns, "pods", "--all", "--for=condition=Ready", "--timeout=2m")
	}
	ip := func(ns, pod string) string {
		return a.tk.MustRun(t, "", "get", "pod", "-n", ns, pod, "-o", "jsonpath={.status.podIP}")
	}
	server := net.JoinHostPort(ip("np-a", "server"), "8080")
	clients := map[string]string{"np-a/client": ip("np-a", "client"), "np-a/other": ip("np-a", "other"), "np-b/client": ip("np-b", "client")}
	for c, cip := range clients {
		framework.Eventually(t, time.Minute, "the engine judges "+c, func() (bool, string) {
			err := node.NetworkPolicyJudges(cip)
			return err == nil, fmt.Sprint(err)
		})
	}
	// dial is the verdict of one connect from client ("ns/pod") to the
	// server.
	dial := func(client string) string {
		ns, pod, _ := strings.Cut(client, "/")
		r := a.tk.Run("", "exec", "-n", ns, pod, "--", "capn-testserver", "dial", "--timeout="+probeTimeout.String(), server)
		if r.Err != nil {
			return "exec failed: " + r.Stderr
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			return "bad verdicts: " + r.Stdout
		}
		return got[server]
	}
	// expect polls until every client's verdict is as wanted: the syncer
	// and the engine converge in seconds, not at once.
	expect := func(step string, want map[string]bool) {
		t.Helper()
		started := time.Now()
		framework.Eventually(t, 90*time.Second, step, func() (bool, string) {
			var wrong []string
			for c, open := range want {
				v := dial(c)
				if (v == netprobe.Open) != open || (!open && !netprobe.Blocked(v)) {
					wrong = append(wrong, c+": "+v)
				}
			}
			return len(wrong) == 0, strings.Join(wrong, ", ")
		})
		t.Logf("numbers: %s: in force %s after the change", step, time.Since(started).Round(time.Millisecond))
	}
	all := func(open bool) map[string]bool {
		return map[string]bool{"np-a/client": open, "np-a/other": open, "np-b/client": open}
	}

	expect("without policies, every client reaches the server", all(true))

	a.tk.MustRun(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: np-a}
spec:
  podSelector: {}
  policyTypes: [Ingress]
`, "apply", "-f", "-")
	expect("a default-deny in np-a blocks what worked before", all(false))

	a.tk.MustRun(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server-from-clients, namespace: np-a}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from:
    - podSelector: {matchLabels: {role: client}}
    ports:
    - {protocol: TCP, port: 8080}
`, "apply", "-f", "-")
	expect("an allow by label lets np-a's client through, and only it", map[string]bool{"np-a/client": true, "np-a/other": false, "np-b/client": false})

	a.tk.MustRun(t, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server-from-team-b, namespace: np-a}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: b}}
      podSelector: {matchLabels: {role: client}}
`, "apply", "-f", "-")
	expect("a namespace-selector rule lets np-b's client through", map[string]bool{"np-a/client": true, "np-a/other": false, "np-b/client": true})

	// The host side: the translated policies, the isolation marker, and
	// no tenant key as it is (finding 8).
	hostPolicies := admin.MustRun(t, "", "get", "networkpolicies", "-n", a.workloads, "-l", names.TenantNamespaceLabel+"=np-a", "-o", "name")
	assert.Len(t, strings.Fields(hostPolicies), 3, "host copies of np-a's policies: %s", hostPolicies)
	hostServer := admin.MustRun(t, "", "get", "pods", "-n", a.workloads, "-l", names.TenantLabelKey("app")+"=server", "-o",
		`jsonpath={range .items[*]}{.metadata.labels.capn\.dev/ingress-isolated}{end}`)
	assert.Equal(t, "true", hostServer, "the server's host pod is marked isolated for ingress")
	for _, sel := range []string{"app.kubernetes.io/name=capn-apiserver", "app=server", "team=a"} {
		out := admin.MustRun(t, "", "get", "pods", "-A", "-l", sel+","+names.TenantNamespaceLabel+"=np-a", "-o", "name")
		assert.Empty(t, strings.TrimSpace(out), "a host selector on the tenant's %s finds its pods", sel)
	}

	a.tk.MustRun(t, "", "delete", "networkpolicy", "-n", "np-a", "--all")
	expect("with the policies deleted, every client reaches the server again", all(true))
	framework.Eventually(t, time.Minute, "np-a's host policies removed", func() (bool, string) {
		out := admin.MustRun(t, "", "get", "networkpolicies", "-n", a.workloads, "-l", names.TenantNamespaceLabel+"=np-a", "-o", "name")
		return strings.TrimSpace(out) == "", out
	})
}
