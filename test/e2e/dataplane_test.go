//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/syncer/controller"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// dataPlaneApp is what each tenant runs: the same namespace, names and
// Secret name in both tenants, with values that tell the tenants apart.
const dataPlaneApp = `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: app}
data: {message: hello-%[1]s}
---
apiVersion: v1
kind: Secret
metadata: {name: greeting, namespace: app}
stringData: {value: secret-%[1]s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: capn.dev/capn-testserver:dev
        args: [serve]
        env:
        - name: GREETING
          valueFrom: {secretKeyRef: {name: greeting, key: value}}
        volumeMounts: [{name: config, mountPath: /config}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
      volumes:
      - name: config
        configMap: {name: web-config}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`

// dataPlaneClient reaches the Service by its ClusterIP and leaves the
// answer in its termination message, which the syncer up-syncs to the
// tenant pod's status (kubectl logs is a later issue).
const dataPlaneClient = `apiVersion: batch/v1
kind: Job
metadata: {name: client, namespace: app}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: client
        image: capn.dev/capn-testserver:dev
        args: [get, "http://%s/", --timeout=90s, --out=/dev/termination-log]
`

// dnsJob resolves the web Service by its full and its short name through
// the tenant's CoreDNS, gets NXDOMAIN (not a hang) for a name outside the
// cluster, and reaches web by name. The init containers run in order, so
// the Job completes only if all three do.
const dnsJob = `apiVersion: batch/v1
kind: Job
metadata: {name: dns, namespace: app}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      initContainers:
      - name: resolve
        image: capn.dev/capn-testserver:dev
        args: [lookup, --timeout=60s, web.app.svc.cluster.local, web]
      - name: outside
        image: capn.dev/capn-testserver:dev
        args: [lookup, --timeout=30s, --nxdomain, capn-e2e.example.com]
      containers:
      - name: get
        image: capn.dev/capn-testserver:dev
        args: [get, "http://web/", --timeout=60s, --out=/dev/termination-log]
`

// refusedPods each ask for something the workload namespace's Pod
// Security forbids, or name a control-plane Secret.
var refusedPods = map[string]string{
	"host-network": `{hostNetwork: true, containers: [{name: c, image: capn.dev/capn-testserver:dev, args: [serve]}]}`,
	"privileged":   `{containers: [{name: c, image: capn.dev/capn-testserver:dev, args: [serve], securityContext: {privileged: true}}]}`,
	"host-path":    `{containers: [{name: c, image: capn.dev/capn-testserver:dev, args: [serve]}], volumes: [{name: h, hostPath: {path: /etc}}]}`,
}

type dataPlaneTenant struct {
	name, workloads, controlPlane string
	tk                            framework.Kubectl
}

// testDataPlaneOnNode drives two Shared tenants (demo and mem, created by
// TestProvisionerOnNode) as a tenant would, with kubectl through their
// /kubeconfig credentials, and checks the management side as the admin.
func testDataPlaneOnNode(t *testing.T, admin, k framework.Kubectl, node *framework.Node, tenantNames ...string) {
	var tenants []dataPlaneTenant
	// Deferred, not a Cleanup: the tenant kubeconfigs live in temporary
	// directories whose own cleanups run first.
	defer func() {
		if t.Failed() {
			dumpDataPlane(t, admin, tenants)
		}
	}()
	for _, name := range tenantNames {
		tk := framework.Kubectl{Bin: k.Bin, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
		wns := k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.status.workloadNamespace}")
		require.NotEmpty(t, wns, "status.workloadNamespace of %s", name)
		tenants = append(tenants, dataPlaneTenant{name: name, workloads: wns, controlPlane: mgmtNamespace(t, admin, name), tk: tk})
		assert.Equal(t, string(v1alpha1.DataPlaneShared), k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.spec.dataPlane.mode}"))
		assert.Equal(t, "True", k.MustRun(t, "", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="SyncerAvailable")].status}`))
	}

	// 1. A Ready virtual node mirroring the real one.
	for _, tn := range tenants {
		framework.Eventually(t, 2*time.Minute, tn.name+": virtual node "+node.Name+" Ready", func() (bool, string) {
			r := tn.tk.Run("", "get", "node", node.Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.capacity.cpu}`)
			return r.Err == nil && strings.HasPrefix(r.Stdout, "True ") && !strings.HasSuffix(r.Stdout, " "), r.Stdout + r.Stderr
		})
	}

	// 2-3. The same app in both tenants; each client gets its own tenant's
	// values and identity back through the Service's ClusterIP, which the
	// syncer's webhook took from the host (registered first, so the
	// Service's create goes through it).
	for _, tn := range tenants {
		framework.Eventually(t, time.Minute, tn.name+": the syncer's Service webhook registered", func() (bool, string) {
			r := tn.tk.Run("", "get", "mutatingwebhookconfiguration", controller.WebhookConfigurationName, "-o", "jsonpath={.webhooks[0].clientConfig.url}")
			return r.Err == nil && strings.HasSuffix(r.Stdout, ":10271"+controller.ServiceWebhookPath), r.Stdout + r.Stderr
		})
	}
	for _, tn := range tenants {
		tn.tk.MustRun(t, fmt.Sprintf(dataPlaneApp, tn.name), "apply", "-f", "-")
	}
	for _, tn := range tenants {
		waitCondition(t, tn, "deployment/web", "Available", "")
		out := tn.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "app=web", "-o",
			`jsonpath={range .items[*]}{.status.phase}/{.status.podIP}/{.status.conditions[?(@.type=="Ready")].status} {end}`)
		pods := strings.Fields(out)
		require.Len(t, pods, 2, tn.name+" pods: %s", out)
		for _, p := range pods {
			f := strings.Split(p, "/")
			assert.Equal(t, "Running", f[0], p)
			assert.NotEmpty(t, f[1], "podIP of %s", p)
			assert.Equal(t, "True", f[2], p)
		}
		ip := tn.tk.MustRun(t, "", "get", "svc", "-n", "app", "web", "-o", "jsonpath={.spec.clusterIP}")
		assert.Equal(t, ip, admin.MustRun(t, "", "get", "svc", "-n", tn.workloads, names.Host("app", "web"), "-o", "jsonpath={.spec.clusterIP}"),
			"the host Service has the tenant's ClusterIP")
		tn.tk.MustRun(t, fmt.Sprintf(dataPlaneClient, ip), "create", "-f", "-")
	}
	for _, tn := range tenants {
		waitCondition(t, tn, "job/client", "Complete", "Failed")
		msg := tn.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "job-name=client", "-o",
			"jsonpath={.items[0].status.containerStatuses[0].state.terminated.message}")
		var got struct{ File, Env, Whoami string }
		require.NoError(t, json.Unmarshal([]byte(msg), &got), "client answer: %s", msg)
		assert.Equal(t, "hello-"+tn.name, strings.TrimSpace(got.File), tn.name+": the ConfigMap file")
		assert.Equal(t, "secret-"+tn.name, got.Env, tn.name+": the Secret env var")
		assert.Equal(t, "system:serviceaccount:app:default", got.Whoami, tn.name+": the tenant ServiceAccount's identity")
	}

	testTenantDNS(t, k, tenants)
	t.Run("network boundary", func(t *testing.T) { testNetworkBoundary(t, admin, node, tenants[0], tenants[1]) })
	t.Run("tenant network policies", func(t *testing.T) { testTenantNetworkPolicies(t, admin, node, tenants[0]) })
	t.Run("cached images", func(t *testing.T) { testCachedImageRefused(t, admin, tenants[0]) })
	t.Run("delete grace capped", func(t *testing.T) { testDeleteGraceCapped(t, admin, node, tenants[0]) })
	t.Run("kubelet API", func(t *testing.T) { testKubeletAPI(t, admin, tenants[0]) })
	t.Run("pod updates", func(t *testing.T) { testPodUpdates(t, tenants[0]) })
	// mem keeps the StatefulSet for its sleep and wake (testSleepWake).
	t.Run("storage", func(t *testing.T) { t.Logf("numbers: storage: %s", testTenantStorage(t, admin, tenants[1])) })
	t.Run("selectorless endpoints", func(t *testing.T) { testSelectorlessEndpoints(t, admin, tenants[0], tenants[1]) })
	t.Run("metrics", func(t *testing.T) {
		t.Logf("numbers: metrics: %s", testTenantMetrics(t, tenants[0], tenants[1]))
		testMetricsOff(t, k, tenants[0])
	})

	a := tenants[0]
	hostPods := func(tn dataPlaneTenant) []string {
		out := admin.MustRun(t, "", "get", "pods", "-n", tn.workloads, "-l", appWebHost, "-o",
			"jsonpath={range .items[?(@.metadata.deletionTimestamp)]}deleting {end}{range .items[*]}{.metadata.annotations.capn\\.dev/tenant-name} {end}")
		return strings.Fields(out)
	}
	tenantPods := func(tn dataPlaneTenant) []string {
		return strings.Fields(tn.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "app=web", "-o",
			`jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {end}`))
	}
	follows := func(tn dataPlaneTenant, n int) {
		framework.Eventually(t, 2*time.Minute, fmt.Sprintf("%s: %d host pods for %d tenant pods, no duplicates", tn.name, n, n), func() (bool, string) {
			h, tp := hostPods(tn), tenantPods(tn)
			seen := map[string]bool{}
			for _, p := range h {
				seen[p] = true
			}
			ok := len(h) == n && len(seen) == n && len(tp) == n
			for _, p := range tp {
				ok = ok && seen[p]
			}
			return ok, fmt.Sprintf("host %v tenant %v", h, tp)
		})
	}

	// 4. Scale 2→3→0 and a ConfigMap update: the host follows.
	a.tk.MustRun(t, "", "scale", "-n", "app", "deploy/web", "--replicas=3")
	follows(a, 3)
	a.tk.MustRun(t, "", "patch", "-n", "app", "configmap", "web-config", "-p", `{"data":{"message":"hello-again"}}`)
	framework.Eventually(t, time.Minute, "the host copy of web-config follows", func() (bool, string) {
		out := admin.MustRun(t, "", "get", "configmaps", "-n", a.workloads, "-l", names.TenantNamespaceLabel+"=app", "-o", "jsonpath={.items[*].data.message}")
		return strings.Contains(out, "hello-again"), out
	})

	// 7. Kill the syncer mid-change, and delete a host pod by hand.
	a.tk.MustRun(t, "", "scale", "-n", "app", "deploy/web", "--replicas=2")
	admin.MustRun(t, "", "delete", "pods", "-n", a.controlPlane, "-l", v1alpha1.ComponentLabel+"="+v1alpha1.ComponentSyncer, "--wait=false")
	follows(a, 2)
	victim := hostPodName(t, admin, a)
	before := tenantPods(a)
	admin.MustRun(t, "", "delete", "pod", "-n", a.workloads, victim, "--wait=false")
	framework.Eventually(t, 2*time.Minute, "the ReplicaSet replaces the pod whose host pod was deleted", func() (bool, string) {
		now := tenantPods(a)
		replaced := len(now) == 2
		for _, p := range before {
			if names.Host("app", p) == victim {
				replaced = replaced && !strings.Contains(" "+strings.Join(now, " ")+" ", " "+p+" ")
			}
		}
		return replaced && len(hostPods(a)) == 2, fmt.Sprintf("before %v now %v host %v", before, now, hostPods(a))
	})
	a.tk.MustRun(t, "", "scale", "-n", "app", "deploy/web", "--replicas=0")
	follows(a, 0)

	// 5. Pods the workload namespace's policy forbids: Failed with the
	// reason in the tenant, and nothing on the host.
	for name, spec := range refusedPods {
		a.tk.MustRun(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: app}\nspec: %s\n", name, spec), "create", "-f", "-")
	}
	for name := range refusedPods {
		framework.Eventually(t, time.Minute, name+" refused in the tenant", func() (bool, string) {
			r := a.tk.Run("", "get", "pod", "-n", "app", name, "-o", "jsonpath={.status.phase}/{.status.reason}: {.status.message}")
			return r.Err == nil && strings.HasPrefix(r.Stdout, "Failed/SyncRefused: "), r.Stdout + r.Stderr
		})
		r := admin.Run("", "get", "pod", "-n", a.workloads, names.Host("app", name), "-o", "name")
		assert.Contains(t, r.Stderr, "NotFound", "no host pod for %s", name)
	}

	// 6. The tenants stay apart: no tenant pod can mount a control-plane
	// Secret (a tenant name resolves only in the tenant, and its copy
	// lives in the workload namespace), and neither syncer can read the
	// other's namespaces or a control plane's Secrets.
	a.tk.MustRun(t, `apiVersion: v1
kind: Pod
metadata: {name: steal, namespace: app}
spec:
  containers: [{name: c, image: capn.dev/capn-testserver:dev, args: [serve]}]
  volumes: [{name: s, secret: {secretName: `+provisioner.SecretCA+`}}]
`, "create", "-f", "-")
	for _, tn := range tenants {
		sa := "system:serviceaccount:" + tn.controlPlane + ":" + provisioner.SyncerName
		for _, other := range tenants {
			can := func(verb, res, ns string) string {
				return strings.TrimSpace(admin.Run("", "auth", "can-i", verb, res, "-n", ns, "--as="+sa).Stdout)
			}
			assert.Equal(t, "no", can("get", "secrets", other.controlPlane), "%s's syncer reads %s's control-plane Secrets", tn.name, other.name)
			want := "no"
			if other.name == tn.name {
				want = "yes"
			}
			assert.Equal(t, want, can("create", "pods", other.workloads), "%s's syncer creates pods in %s's workload namespace", tn.name, other.name)
			assert.Equal(t, want, can("watch", "events", other.workloads), "%s's syncer watches Events in %s's workload namespace (to mirror them)", tn.name, other.name)
		}
		assert.Equal(t, "no", strings.TrimSpace(admin.Run("", "auth", "can-i", "get", "secrets", "-n", tn.controlPlane,
			"--as=system:serviceaccount:"+tn.workloads+":default").Stdout), "a tenant pod's host identity reads control-plane Secrets")
	}
	// The pod is bound and synced, but its Secret is the tenant's "ca",
	// which does not exist: the host copy is never made from the
	// control plane's.
	framework.Eventually(t, time.Minute, "steal bound in the tenant", func() (bool, string) {
		r := a.tk.Run("", "get", "pod", "-n", "app", "steal", "-o", "jsonpath={.spec.nodeName}")
		return r.Err == nil && r.Stdout == node.Name, r.Stdout + r.Stderr
	})
	out := admin.MustRun(t, "", "get", "secrets", "-n", a.workloads, "-o", "jsonpath={.items[*].metadata.annotations.capn\\.dev/tenant-name}")
	assert.NotContains(t, strings.Fields(out), provisioner.SecretCA, "a host copy named after the tenant's missing Secret")
	assert.NotEqual(t, "Running", a.tk.MustRun(t, "", "get", "pod", "-n", "app", "steal", "-o", "jsonpath={.status.phase}"))
	t.Logf("numbers: data plane: %s and %s ran the same app with the same names apart", tenants[0].name, tenants[1].name)
}

// testTenantDNS checks each tenant's DNS addon: Available, at the same
// address on both sides, and serving a tenant Job (dnsJob). It logs how
// long after the cluster's Ready the addon was Available.
func testTenantDNS(t *testing.T, k framework.Kubectl, tenants []dataPlaneTenant) {
	for _, tn := range tenants {
		framework.Eventually(t, 3*time.Minute, tn.name+": the DNS addon Available", func() (bool, string) {
			r := tn.tk.Run("", "get", "-n", names.DNSNamespace, "deployment", names.DNSName, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return r.Stdout == "True", r.Stdout + r.Stderr
		})
		ready := k.MustRun(t, "", "get", "nc", tn.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].lastTransitionTime}`)
		available := tn.tk.MustRun(t, "", "get", "-n", names.DNSNamespace, "deployment", names.DNSName, "-o",
			`jsonpath={.status.conditions[?(@.type=="Available")].lastTransitionTime}`)
		if r, err1 := time.Parse(time.RFC3339, ready); err1 == nil {
			if a, err2 := time.Parse(time.RFC3339, available); err2 == nil {
				t.Logf("numbers: %s: DNS addon Available %s after the cluster's Ready", tn.name, a.Sub(r))
			}
		}
		tn.tk.MustRun(t, dnsJob, "create", "-f", "-")
	}
	for _, tn := range tenants {
		waitCondition(t, tn, "job/dns", "Complete", "Failed")
		msg := tn.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "job-name=dns", "-o",
			"jsonpath={.items[0].status.containerStatuses[0].state.terminated.message}")
		var got struct{ File string }
		require.NoError(t, json.Unmarshal([]byte(msg), &got), "answer through http://web/: %s", msg)
		assert.Equal(t, "hello-"+tn.name, strings.TrimSpace(got.File), tn.name+": web reached by name")
	}

	// spec.dns.mode None: the syncer, rolled with the new flag, removes
	// the addon it made.
	last := tenants[len(tenants)-1]
	k.MustRun(t, "", "patch", "nc", last.name, "--type=merge", "-p", `{"spec":{"dns":{"mode":"None"}}}`)
	framework.Eventually(t, 3*time.Minute, last.name+": the DNS addon removed with spec.dns.mode None", func() (bool, string) {
		r := last.tk.Run("", "get", "-n", names.DNSNamespace, "deployments,services,configmaps", "-l", "app.kubernetes.io/name="+names.DNSName, "-o", "name")
		return r.Err == nil && strings.TrimSpace(r.Stdout) == "", r.Stdout + r.Stderr
	})
}

// hostAppWeb selects the host pods of tenant pods labelled app=web: the
// syncer carries a tenant's label keys under its own domain (red-team
// finding 8), never as they are.
var hostAppWeb = names.TenantLabelKey("app") + "=web"

// appWebHost selects the host pods of the app namespace's web pods: the
// workload namespace also holds other tenant namespaces' pods (the
// tenant-boundary checks run a web Deployment in "work").
var appWebHost = hostAppWeb + "," + names.TenantNamespaceLabel + "=app"

// hostPodName is one of a's host pods for app=web.
func hostPodName(t *testing.T, admin framework.Kubectl, a dataPlaneTenant) string {
	t.Helper()
	out := strings.Fields(admin.MustRun(t, "", "get", "pods", "-n", a.workloads, "-l", appWebHost, "-o", "jsonpath={.items[*].metadata.name}"))
	require.NotEmpty(t, out)
	return out[0]
}

// waitCondition waits up to 3 minutes (kubectl's own runs are bounded by
// one) for condition of obj in the tenant's app namespace, and stops at
// failed.
func waitCondition(t *testing.T, tn dataPlaneTenant, obj, condition, failed string) {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, tn.name+": "+obj+" "+condition, func() (bool, string) {
		r := tn.tk.Run("", "get", "-n", "app", obj, "-o", `jsonpath={range .status.conditions[*]}{.type}={.status} {end}`)
		if failed != "" && strings.Contains(" "+r.Stdout, " "+failed+"=True") {
			t.Fatalf("%s: %s is %s: %s", tn.name, obj, failed, r.Stdout)
		}
		return r.Err == nil && strings.Contains(" "+r.Stdout, " "+condition+"=True"), r.Stdout + r.Stderr
	})
}

// dumpDataPlane logs both sides of each tenant's data plane.
func dumpDataPlane(t *testing.T, admin framework.Kubectl, tenants []dataPlaneTenant) {
	for _, tn := range tenants {
		for _, args := range [][]string{
			{"get", "nodes,pods,services,endpointslices", "-A", "-o", "wide"},
			{"get", "events", "-A", "--sort-by=.lastTimestamp"},
			{"get", "pods", "-n", "app", "-o", "yaml"},
		} {
			r := tn.tk.Run("", args...)
			t.Logf("%s tenant: kubectl %s:\n%s%s", tn.name, strings.Join(args, " "), r.Stdout, r.Stderr)
		}
		for _, args := range [][]string{
			{"get", "pods,services,configmaps,secrets,resourcequota", "-n", tn.workloads, "-o", "wide"},
			{"get", "events", "-n", tn.workloads, "--sort-by=.lastTimestamp"},
			{"logs", "-n", tn.controlPlane, "-l", v1alpha1.ComponentLabel + "=" + v1alpha1.ComponentSyncer, "--tail=100"},
		} {
			r := admin.Run("", args...)
			t.Logf("%s host: kubectl %s:\n%s%s", tn.name, strings.Join(args, " "), r.Stdout, r.Stderr)
		}
	}
}
