//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/test/framework"
)

const capnNS, capnSA, capnSvc = "capn-system", "capn-apiserver", "capn-apiserver"

// aggregatedEnv is the running management cluster with capn-apiserver
// registered behind its aggregator.
type aggregatedEnv struct {
	cluster *framework.Cluster
	capn    *framework.AggregatedServer
	admin   framework.Kubectl
}

// TestAggregated runs capn-apiserver in its default (aggregated) mode behind
// a real kube-apiserver and drives it through the aggregator with kubectl.
func TestAggregated(t *testing.T) {
	kubectl, capnBin := env(t, "KUBECTL"), env(t, "CAPN_APISERVER")
	c := framework.StartCluster(t, clusterOptions(t))
	if c.NodeIP.IsLoopback() {
		t.Fatalf("no non-loopback node IP: an EndpointSlice cannot point at %s", c.NodeIP)
	}
	e := &aggregatedEnv{cluster: c, admin: framework.Kubectl{Bin: kubectl, Kubeconfig: c.AdminKubeconfig}}

	e.admin.MustRun(t, "", "create", "namespace", capnNS)
	e.admin.MustRun(t, "", "create", "serviceaccount", capnSA, "-n", capnNS)
	e.admin.MustRun(t, "", "apply", "-k", repoFile(t, "artifacts/deploy/rbac"))

	// API-only: this cluster has no node to run tenant pods on, and capn
	// runs as a host process without an in-cluster config.
	e.capn = c.StartAggregatedServer(t, capnBin, capnNS, capnSA, capnSvc,
		"--embedded-etcd-data-dir="+filepath.Join(c.Dir, "capn-etcd"), "--provisioner=none")
	t.Logf("capn-apiserver (aggregated) ready in %s", e.capn.Ready.Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.capn.Expose(ctx); err != nil {
		t.Fatalf("exposing capn-apiserver: %v", err)
	}
	registered := time.Now()
	if err := e.capn.RegisterAPIService(ctx, "capn.dev", "v1alpha1", 1000, 15); err != nil {
		t.Fatalf("creating APIService: %v", err)
	}
	e.admin.MustRun(t, "", "wait", "--for=condition=Available", "apiservice/v1alpha1.capn.dev", "--timeout=50s")
	t.Logf("APIService v1alpha1.capn.dev Available %s after creation", time.Since(registered).Round(time.Millisecond))

	for _, ns := range []string{"team-a", "team-b"} {
		e.admin.MustRun(t, "", "create", "namespace", ns)
	}
	t.Run("kubectl through the aggregator", e.testKubectl)
	t.Run("RBAC self-service", e.testRBAC)
	t.Run("direct requests need the front proxy", e.testDirect)
	// Last: it stops this capn.
	t.Run("one embedded etcd at a time", func(t *testing.T) { e.testEmbeddedEtcdLock(t, capnBin) })
}

// testEmbeddedEtcdLock starts a second capn-apiserver with an embedded
// etcd of its own, as a Deployment scaled to two would: it must not open
// its etcd or serve while the first holds the lock, and takes over once
// the first is gone. Two replicas serving would be two different truths
// behind one APIService.
func (e *aggregatedEnv) testEmbeddedEtcdLock(t *testing.T, capnBin string) {
	c := e.cluster
	holder := func() string {
		return e.admin.MustRun(t, "", "get", "lease", "capn-embedded-etcd", "-n", capnNS, "-o", "jsonpath={.spec.holderIdentity}")
	}
	first := holder()
	require.NotEmpty(t, first, "the serving capn holds the lock")
	second := c.LaunchAggregatedServer(t, capnBin, capnNS, capnSA, "capn-second",
		"--embedded-etcd-data-dir="+filepath.Join(c.Dir, "capn-etcd-second"), "--provisioner=none")
	logOf := func() string {
		b, err := os.ReadFile(second.Log)
		require.NoError(t, err)
		return string(b)
	}
	framework.Eventually(t, time.Minute, "the second capn waits for the lock", func() (bool, string) {
		l := logOf()
		return strings.Contains(l, "Waiting for the embedded-etcd lock"), l
	})
	assert.NotContains(t, logOf(), "Embedded etcd ready", "the second capn opened an etcd of its own")
	_, err := second.HTTPClient(nil).Get(second.URL + "/readyz")
	assert.Error(t, err, "the second capn serves")
	assert.Equal(t, first, holder())

	// The first goes (SIGTERM, as the kubelet stops a pod): it gives the
	// lock up once its etcd has stopped, and the second takes over.
	require.False(t, e.capn.Stop(), "the first capn stops within the grace period")
	_, err = second.WaitHealthy(second.HTTPClient(nil), second.URL+"/readyz", time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, first, holder())
}

func (e *aggregatedEnv) testKubectl(t *testing.T) {
	k := e.admin
	k.Namespace = "team-a"
	// Discovery is aggregated from capn asynchronously after Available.
	framework.Eventually(t, 30*time.Second, "api-resources to list nestedclusters", func() (bool, string) {
		r := k.Run("", "api-resources", "--api-group", "capn.dev", "--no-headers")
		// Sorted by name: nestedclusterbackups comes first.
		return r.Err == nil && slices.ContainsFunc(strings.Split(r.Stdout, "\n"), func(l string) bool { return strings.HasPrefix(l, "nestedclusters ") }),
			r.Stdout + r.Stderr
	})

	out := k.MustRun(t, "", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
	if strings.TrimSpace(out) != "nestedcluster.capn.dev/demo created" {
		t.Fatalf("unexpected create output %q", out)
	}
	lines := strings.Split(strings.TrimSpace(k.MustRun(t, "", "get", "nestedclusters")), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME VERSION PHASE APISERVERS ENDPOINT AGE" {
		t.Fatalf("header = %q", lines[0])
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "demo ") || !strings.Contains(lines[1], "v1.37.2") {
		t.Fatalf("unexpected rows:\n%s", strings.Join(lines, "\n"))
	}

	if out := k.MustRun(t, "", "describe", "nestedcluster", "demo"); !strings.Contains(out, "Name:         demo") || !strings.Contains(out, "Kind:         NestedCluster") {
		t.Fatalf("describe output:\n%s", out)
	}
	// The aggregator also fetches capn's OpenAPI v3 asynchronously: on a
	// cold, busy machine explain can ask before it has.
	framework.Eventually(t, 30*time.Second, "explain through the aggregator", func() (bool, string) {
		r := k.Run("", "explain", "nestedcluster.spec.apiServer.replicas")
		return r.Err == nil && strings.Contains(r.Stdout, "FIELD: replicas <integer>"), r.Stdout + r.Stderr
	})

	w := k.Start(t, "get", "nc", "demo", "-w", "-o", `jsonpath={.spec.apiServer.replicas}{"\n"}`)
	w.WaitFor(t, 30*time.Second, "the watch's initial object", func(l string) bool { return l == "1" })
	if out := k.MustRun(t, "", "scale", "nestedcluster/demo", "--replicas=2"); strings.TrimSpace(out) != "nestedcluster.capn.dev/demo scaled" {
		t.Fatalf("unexpected scale output %q", out)
	}
	w.WaitFor(t, 30*time.Second, "the watch to see replicas=2", func(l string) bool { return l == "2" })

	// Server-side apply through the aggregator: two managers, one field.
	ssa := func(manager, replicas string, extra ...string) framework.Result {
		doc := "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: ssa\nspec:\n  scheduler:\n    replicas: " + replicas + "\n"
		return k.Run(doc, append([]string{"apply", "--server-side", "--field-manager=" + manager, "-f", "-"}, extra...)...)
	}
	if r := ssa("alice", "2"); r.Err != nil {
		t.Fatalf("first apply: %v: %s", r.Err, r.Stderr)
	}
	if r := ssa("bob", "3"); r.Err == nil || !strings.Contains(r.Stderr, "conflict") || !strings.Contains(r.Stderr, ".spec.scheduler.replicas") {
		t.Fatalf("second manager's apply should conflict on .spec.scheduler.replicas; err=%v stderr=%s", r.Err, r.Stderr)
	}
	k.MustRun(t, "", "delete", "nestedcluster", "ssa")
	if got := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.spec.apiServer.replicas}"); got != "2" {
		t.Fatalf("replicas after scale = %q, want 2", got)
	}

	errOut := k.MustFail(t, upgradeBody("v1.36.3"), "create", "--raw", upgradePath("team-a", "demo"), "-f", "-")
	if !strings.Contains(errOut, "downgrade") {
		t.Fatalf("downgrade not refused clearly: %s", errOut)
	}
	if got := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.spec.version}"); got != "v1.37.2" {
		t.Fatalf("version after refused downgrade = %q", got)
	}

	if out := k.MustRun(t, "", "delete", "nestedcluster", "demo"); !strings.Contains(out, `nestedcluster.capn.dev "demo" deleted`) {
		t.Fatalf("delete output %q", out)
	}
	if errOut := k.MustFail(t, "", "get", "nc", "demo"); !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
		t.Fatalf("get after delete: %s", errOut)
	}
}

// testRBAC binds alice and bob as admins of their own team's namespace and
// viewer as a viewer in team-a, then does every request as every user in
// both namespaces: allowed exactly where the aggregated roles say, and
// every denial a 403 naming the resource.
func (e *aggregatedEnv) testRBAC(t *testing.T) {
	type binding struct{ user, role, ns string }
	bindings := []binding{{"alice", "admin", "team-a"}, {"bob", "admin", "team-b"}, {"viewer", "view", "team-a"}}
	users := map[string]framework.Kubectl{}
	for _, b := range bindings {
		e.admin.MustRun(t, "", "create", "rolebinding", b.user+"-"+b.role, "-n", b.ns, "--clusterrole="+b.role, "--user="+b.user)
		users[b.user] = framework.Kubectl{Bin: e.admin.Bin, Kubeconfig: e.cluster.Kubeconfig(b.user)}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		e.admin.MustRun(t, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: fixture\nspec:\n  version: v1.36.3\n", "create", "-n", ns, "-f", "-")
	}
	// The clusterrole-aggregation controller and RBAC's informers apply the
	// bindings asynchronously; wait until the least privileged grant shows.
	for _, b := range bindings {
		framework.Eventually(t, 30*time.Second, b.user+"'s rights in "+b.ns, func() (bool, string) {
			r := users[b.user].Run("", "auth", "can-i", "get", "nestedclusters.capn.dev", "-n", b.ns)
			return r.Err == nil, r.Stdout + r.Stderr
		})
	}

	type verb struct {
		name, canI string // canI: `kubectl auth can-i` arguments
		run        func(k framework.Kubectl, user, ns string) framework.Result
		readOnly   bool
	}
	verbs := []verb{
		{"get", "get nestedclusters.capn.dev", func(k framework.Kubectl, _, ns string) framework.Result {
			return k.Run("", "get", "nc", "fixture", "-n", ns)
		}, true},
		{"list", "list nestedclusters.capn.dev", func(k framework.Kubectl, _, ns string) framework.Result {
			return k.Run("", "get", "nc", "-n", ns)
		}, true},
		{"create", "create nestedclusters.capn.dev", func(k framework.Kubectl, user, ns string) framework.Result {
			return k.Run("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: "+user+"\n", "create", "-n", ns, "-f", "-")
		}, false},
		{"scale", "patch nestedclusters.capn.dev --subresource=scale", func(k framework.Kubectl, _, ns string) framework.Result {
			return k.Run("", "scale", "nc/fixture", "--replicas=2", "-n", ns)
		}, false},
		{"upgrade", "create nestedclusters.capn.dev --subresource=upgrade", func(k framework.Kubectl, _, ns string) framework.Result {
			return k.Run(upgradeBody("v1.37.2"), "create", "--raw", upgradePath(ns, "fixture"), "-f", "-")
		}, false},
		// Allowed deletes remove what the same user created; denied ones
		// aim at the fixture, which must survive.
		{"delete", "delete nestedclusters.capn.dev", func(k framework.Kubectl, user, ns string) framework.Result {
			if r := k.Run("", "get", "nc", user, "-n", ns); r.Err == nil {
				return k.Run("", "delete", "nc", user, "-n", ns)
			}
			return k.Run("", "delete", "nc", "fixture", "-n", ns)
		}, false},
	}
	allowed := func(user, ns string, v verb) bool {
		for _, b := range bindings {
			if b.user == user && b.ns == ns {
				return b.role == "admin" || v.readOnly
			}
		}
		return false
	}

	for _, user := range []string{"alice", "bob", "viewer"} {
		k := users[user]
		for _, ns := range []string{"team-a", "team-b"} {
			for _, v := range verbs {
				want := allowed(user, ns, v)
				canI := k.Run("", append([]string{"auth", "can-i"}, append(strings.Fields(v.canI), "-n", ns)...)...)
				if (canI.Err == nil) != want {
					t.Errorf("kubectl auth can-i %s -n %s as %s = %q, want allowed=%v", v.canI, ns, user, strings.TrimSpace(canI.Stdout), want)
				}
				r := v.run(k, user, ns)
				switch {
				case want && r.Err != nil:
					t.Errorf("%s %s in %s: want allowed, got %v: %s", user, v.name, ns, r.Err, r.Stderr)
				case !want && r.Err == nil:
					t.Errorf("%s %s in %s: want forbidden, it succeeded: %s", user, v.name, ns, r.Stdout)
				case !want && !(strings.Contains(r.Stderr, "(Forbidden)") && strings.Contains(r.Stderr, "nestedclusters") && strings.Contains(r.Stderr, "forbidden")):
					t.Errorf("%s %s in %s: denial is not a 403 naming nestedclusters: %s", user, v.name, ns, r.Stderr)
				}
			}
		}
		// Nobody may list across namespaces.
		if r := k.Run("", "get", "nc", "--all-namespaces"); r.Err == nil || !strings.Contains(r.Stderr, "(Forbidden)") {
			t.Errorf("%s listed nestedclusters in all namespaces: err=%v %s%s", user, r.Err, r.Stdout, r.Stderr)
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if got := e.admin.MustRun(t, "", "get", "nc", "fixture", "-n", ns, "-o", "jsonpath={.spec.version} {.spec.apiServer.replicas}"); got != "v1.37.2 2" {
			t.Errorf("fixture in %s = %q, want the one admin's upgrade and scale applied (v1.37.2 2)", ns, got)
		}
	}
}

// testDirect sends requests straight to capn-apiserver's port. Identity
// headers count only from a client that presents the front-proxy
// certificate; anything else is anonymous, which capn refuses with 401.
func (e *aggregatedEnv) testDirect(t *testing.T) {
	list := func(ns string) string {
		return e.capn.URL + "/apis/capn.dev/v1alpha1/namespaces/" + ns + "/nestedclusters"
	}
	do := func(client *http.Client, url string, headers map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	alice := map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:authenticated"}
	forged := map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:masters"}
	noCert, proxy := e.capn.HTTPClient(nil), e.capn.HTTPClient(&e.cluster.FrontProxyClient)

	for _, tc := range []struct {
		name    string
		client  *http.Client
		url     string
		headers map[string]string
		want    int
	}{
		{"no credentials", noCert, list("team-a"), nil, http.StatusUnauthorized},
		{"forged X-Remote-User without the front-proxy cert", noCert, list("team-a"), forged, http.StatusUnauthorized},
		{"front-proxy cert as alice, her namespace", proxy, list("team-a"), alice, http.StatusOK},
		{"front-proxy cert as alice, another namespace", proxy, list("team-b"), alice, http.StatusForbidden},
	} {
		if got := do(tc.client, tc.url, tc.headers); got != tc.want {
			t.Errorf("%s: GET %s = %d, want %d", tc.name, tc.url, got, tc.want)
		}
	}
}

func upgradePath(ns, name string) string {
	return "/apis/capn.dev/v1alpha1/namespaces/" + ns + "/nestedclusters/" + name + "/upgrade"
}

func upgradeBody(version string) string {
	return `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterUpgrade","version":"` + version + `"}`
}
