//go:build e2e

// Package e2e drives the real capn-apiserver binary with a real, pinned
// kubectl, the way a user would.
package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/test/framework"
)

func env(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s must be set (run through `make test-e2e`)", name)
	}
	return v
}

// clusterOptions points the framework at the pinned control-plane binaries
// the Makefile passes in.
func clusterOptions(t testing.TB) framework.ClusterOptions {
	return framework.ClusterOptions{
		KubeAPIServer:         env(t, "KUBE_APISERVER"),
		KubeControllerManager: env(t, "KUBE_CONTROLLER_MANAGER"),
		KubeScheduler:         env(t, "KUBE_SCHEDULER"),
		Etcd:                  env(t, "ETCD"),
	}
}

func repoFile(t testing.TB, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", rel)
}

func startStandalone(t *testing.T) (*framework.Standalone, framework.Kubectl) {
	srv := framework.StartStandalone(t, env(t, "CAPN_APISERVER"), t.TempDir())
	return srv, framework.Kubectl{Bin: env(t, "KUBECTL"), Kubeconfig: srv.Kubeconfig, Namespace: "default"}
}

func TestStandaloneWithKubectl(t *testing.T) {
	srv, k := startStandalone(t)
	rss, err := srv.RSSKiB()
	if err != nil {
		t.Fatal(err)
	}
	// Reported for the record (see README "Numbers"); not asserted.
	t.Logf("capn-apiserver standalone: ready in %s, RSS %d MiB", srv.StartupTime.Round(time.Millisecond), rss/1024)

	if out := k.MustRun(t, "", "version", "--client", "-o", "json"); !strings.Contains(out, `"gitVersion": "v1.37.2"`) {
		t.Fatalf("kubectl is not the pinned v1.37.2:\n%s", out)
	}

	t.Run("create", func(t *testing.T) {
		out := k.MustRun(t, "", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
		if strings.TrimSpace(out) != "nestedcluster.capn.dev/demo created" {
			t.Fatalf("unexpected create output %q", out)
		}
	})

	t.Run("get columns", func(t *testing.T) {
		out := k.MustRun(t, "", "get", "nestedclusters")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME VERSION PHASE APISERVERS ENDPOINT AGE" {
			t.Fatalf("header = %q", lines[0])
		}
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "demo") || !strings.Contains(lines[1], "v1.37.2") || !strings.Contains(lines[1], "0/1") {
			t.Fatalf("unexpected rows:\n%s", out)
		}
		wide := k.MustRun(t, "", "get", "nc", "-o", "wide")
		for _, col := range []string{"CONTROLLER-MANAGERS", "SCHEDULERS", "ETCD", "REASON"} {
			if !strings.Contains(strings.SplitN(wide, "\n", 2)[0], col) {
				t.Fatalf("-o wide lacks %s:\n%s", col, wide)
			}
		}
		if cat := k.MustRun(t, "", "get", "capn", "-o", "name"); strings.TrimSpace(cat) != "nestedcluster.capn.dev/demo" {
			t.Fatalf("category capn lists %q", cat)
		}
	})

	t.Run("scale and watch", func(t *testing.T) {
		w := k.Start(t, "get", "nc", "demo", "-w", "-o", `jsonpath={.spec.apiServer.replicas}{"\n"}`)
		w.WaitFor(t, 30*time.Second, "the initial object", func(l string) bool { return l == "1" })
		out := k.MustRun(t, "", "scale", "nestedcluster/demo", "--replicas=3")
		if strings.TrimSpace(out) != "nestedcluster.capn.dev/demo scaled" {
			t.Fatalf("unexpected scale output %q", out)
		}
		w.WaitFor(t, 30*time.Second, "the watch to see replicas=3", func(l string) bool { return l == "3" })
		if g := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.metadata.generation}"); g != "2" {
			t.Fatalf("generation after scale = %s, want 2", g)
		}
		errOut := k.MustFail(t, "", "scale", "nestedcluster/demo", "--replicas=11")
		if !strings.Contains(errOut, "spec.apiServer.replicas") {
			t.Fatalf("over-limit scale error does not name the field: %s", errOut)
		}
	})

	t.Run("server-side apply conflict", func(t *testing.T) {
		// A fresh object created by apply, so alice is the only manager of
		// the field (create would own every defaulted field as well).
		applyAs := func(manager, replicas string, extra ...string) framework.Result {
			doc := "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: ssa\nspec:\n  controllerManager:\n    replicas: " + replicas + "\n"
			return k.Run(doc, append([]string{"apply", "--server-side", "--field-manager=" + manager, "-f", "-"}, extra...)...)
		}
		if r := applyAs("alice", "2"); r.Err != nil {
			t.Fatalf("first apply: %v: %s", r.Err, r.Stderr)
		}
		r := applyAs("bob", "3")
		if r.Err == nil || !strings.Contains(r.Stderr, "conflict") || !strings.Contains(r.Stderr, `"alice"`) || !strings.Contains(r.Stderr, ".spec.controllerManager.replicas") {
			t.Fatalf("second manager's apply should conflict with alice on .spec.controllerManager.replicas; err=%v stderr=%s", r.Err, r.Stderr)
		}
		if got := k.MustRun(t, "", "get", "nc", "ssa", "-o", "jsonpath={.spec.controllerManager.replicas}"); got != "2" {
			t.Fatalf("conflicting apply changed the object: replicas=%s", got)
		}
		if r := applyAs("bob", "3", "--force-conflicts"); r.Err != nil {
			t.Fatalf("forced apply: %v: %s", r.Err, r.Stderr)
		}
		if got := k.MustRun(t, "", "get", "nc", "ssa", "-o", "jsonpath={.spec.controllerManager.replicas}"); got != "3" {
			t.Fatalf("forced apply did not land: replicas=%s", got)
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := k.MustRun(t, "", "explain", "nestedcluster.spec.etcd")
		for _, want := range []string{"KIND:       NestedCluster", "managed", "external"} {
			if !strings.Contains(out, want) {
				t.Fatalf("explain lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("strict validation", func(t *testing.T) {
		doc := "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: typo\nspec:\n  verison: v1.37.2\n"
		if errOut := k.MustFail(t, doc, "create", "-f", "-"); !strings.Contains(errOut, `unknown field "spec.verison"`) {
			t.Fatalf("unknown field not reported: %s", errOut)
		}
		bad := "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: bad\nspec:\n  version: v1.30.0\n  apiServer:\n    extraArgs:\n      etcd-servers: http://evil:2379\n"
		errOut := k.MustFail(t, bad, "create", "-f", "-")
		for _, want := range []string{"spec.version", "spec.apiServer.extraArgs[etcd-servers]", "managed by capn"} {
			if !strings.Contains(errOut, want) {
				t.Fatalf("invalid create error lacks %q: %s", want, errOut)
			}
		}
		// A body that is not JSON at all is a 400, before any validation.
		malformed := k.MustFail(t, "{not json", "create", "--raw", "/apis/capn.dev/v1alpha1/namespaces/default/nestedclusters", "-f", "-")
		if !strings.Contains(malformed, "BadRequest") && !strings.Contains(malformed, "400") {
			t.Fatalf("malformed body error is not a 400: %s", malformed)
		}
		if r := k.Run("", "get", "nc", "bad", "typo"); r.Err == nil {
			t.Fatalf("rejected objects were stored: %s", r.Stdout)
		}
	})

	t.Run("upgrade subresource", func(t *testing.T) {
		old := "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: old\nspec:\n  version: v1.36.3\n"
		k.MustRun(t, old, "create", "-f", "-")
		path := "/apis/capn.dev/v1alpha1/namespaces/default/nestedclusters/old/upgrade"
		body := func(v string) string {
			return `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterUpgrade","version":"` + v + `"}`
		}
		errOut := k.MustFail(t, body("v1.35.0"), "create", "--raw", path, "-f", "-")
		if !strings.Contains(errOut, "version") {
			t.Fatalf("unsupported version error: %s", errOut)
		}
		out := k.MustRun(t, body("v1.37.2"), "create", "--raw", path, "-f", "-")
		var nc struct {
			Kind string
			Spec struct{ Version string }
		}
		if err := json.Unmarshal([]byte(out), &nc); err != nil || nc.Kind != "NestedCluster" || nc.Spec.Version != "v1.37.2" {
			t.Fatalf("upgrade answer = %s (err %v)", out, err)
		}
		if errOut := k.MustFail(t, body("v1.36.3"), "create", "--raw", path, "-f", "-"); !strings.Contains(errOut, "downgrade") {
			t.Fatalf("downgrade not refused clearly: %s", errOut)
		}
		if got := k.MustRun(t, "", "get", "nc", "old", "-o", "jsonpath={.spec.version}"); got != "v1.37.2" {
			t.Fatalf("stored version = %s", got)
		}
	})

	t.Run("delete", func(t *testing.T) {
		out := k.MustRun(t, "", "delete", "nestedcluster", "demo", "old", "ssa")
		if !strings.Contains(out, `nestedcluster.capn.dev "demo" deleted`) {
			t.Fatalf("delete output %q", out)
		}
		if errOut := k.MustFail(t, "", "get", "nc", "demo"); !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
			t.Fatalf("get after delete: %s", errOut)
		}
	})
}

// TestStandaloneRejectsAnonymous sends requests without the admin token.
func TestStandaloneRejectsAnonymous(t *testing.T) {
	srv, _ := startStandalone(t)
	cfg, err := clientcmd.LoadFromFile(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.Clusters["capn"].CertificateAuthorityData) {
		t.Fatal("admin kubeconfig carries no CA")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for path, want := range map[string]int{
		"/apis/capn.dev/v1alpha1/nestedclusters": http.StatusUnauthorized,
		"/apis":                                  http.StatusUnauthorized,
		"/readyz":                                http.StatusOK,
	} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without credentials = %d, want %d", path, resp.StatusCode, want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis/capn.dev/v1alpha1/nestedclusters", nil)
	req.Header.Set("Authorization", "Bearer not-the-token")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token = %d, want 401", resp.StatusCode)
	}
}

// TestStandaloneRestartKeepsData restarts the server on the same data dir.
func TestStandaloneRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	bin, kubectl := env(t, "CAPN_APISERVER"), env(t, "KUBECTL")
	srv := framework.StartStandalone(t, bin, dir)
	k := framework.Kubectl{Bin: kubectl, Kubeconfig: srv.Kubeconfig, Namespace: "default"}
	k.MustRun(t, "", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
	uid := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.metadata.uid}")
	srv.Stop(t)

	srv = framework.StartStandalone(t, bin, dir)
	k.Kubeconfig = srv.Kubeconfig
	if got := k.MustRun(t, "", "get", "nc", "demo", "-o", "jsonpath={.metadata.uid}"); got != uid {
		t.Fatalf("after restart uid = %q, want %q", got, uid)
	}
}
