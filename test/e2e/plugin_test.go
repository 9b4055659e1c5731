//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/versions"
)

// TestPluginThroughKubectl runs the built kubectl-nested as a user would:
// `kubectl nested ...`, found by kubectl on PATH.
func TestPluginThroughKubectl(t *testing.T) {
	plugin := env(t, "KUBECTL_NESTED")
	if filepath.Base(plugin) != "kubectl-nested" {
		t.Fatalf("KUBECTL_NESTED must point at a binary named kubectl-nested, got %s", plugin)
	}
	srv, k := startStandalone(t)

	nested := func(args ...string) (string, string, error) {
		return runNested(k.Bin, plugin, srv.Kubeconfig, time.Minute, append(args, "--namespace=default")...)
	}
	mustNested := func(t *testing.T, args ...string) string {
		t.Helper()
		out, errOut, err := nested(args...)
		if err != nil {
			t.Fatalf("kubectl nested %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	failNested := func(t *testing.T, args ...string) string {
		t.Helper()
		out, errOut, err := nested(args...)
		if err == nil {
			t.Fatalf("kubectl nested %s succeeded, expected an error\nstdout: %s", strings.Join(args, " "), out)
		}
		return errOut
	}
	jsonpath := func(t *testing.T, name, path string) string {
		t.Helper()
		return k.MustRun(t, "", "get", "nestedcluster", name, "-o", "jsonpath={"+path+"}")
	}

	k.MustRun(t, "", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
	k.MustRun(t, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: old\nspec:\n  version: v1.36.3\n", "create", "-f", "-")

	t.Run("versions", func(t *testing.T) {
		out := mustNested(t, "versions")
		if !strings.Contains(out, versions.Default()+" (default)\n") || !strings.Contains(out, "v1.36.3\n") {
			t.Fatalf("versions printed:\n%s", out)
		}
	})

	t.Run("scale", func(t *testing.T) {
		if out := mustNested(t, "scale", "demo", "--component=apiserver", "--replicas=3"); out != "nestedcluster.capn.dev/demo scaled\n" {
			t.Fatalf("scale output %q", out)
		}
		if got := jsonpath(t, "demo", ".spec.apiServer.replicas"); got != "3" {
			t.Fatalf("spec.apiServer.replicas = %q, want 3", got)
		}
		if out := mustNested(t, "scale", "demo", "--component=controller-manager", "--replicas=2"); out != "nestedcluster.capn.dev/demo scaled\n" {
			t.Fatalf("scale output %q", out)
		}
		if got := jsonpath(t, "demo", ".spec.controllerManager.replicas"); got != "2" {
			t.Fatalf("spec.controllerManager.replicas = %q, want 2", got)
		}
		if got := jsonpath(t, "demo", ".spec.apiServer.replicas"); got != "3" {
			t.Fatalf("controller-manager scaling changed the apiserver: %q", got)
		}
		if errOut := failNested(t, "scale", "demo", "--component=etcd", "--replicas=3"); !strings.Contains(errOut, "etcd replicas are immutable") {
			t.Fatalf("etcd scale error: %s", errOut)
		}
		// Over the API's bound: the server's field error reaches the user.
		if errOut := failNested(t, "scale", "demo", "--component=scheduler", "--replicas=11"); !strings.Contains(errOut, "spec.scheduler.replicas") {
			t.Fatalf("over-limit scale error: %s", errOut)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		if out := mustNested(t, "upgrade", "old", "--to", "v1.37.2"); out != "nestedcluster.capn.dev/old upgrade to v1.37.2 requested\n" {
			t.Fatalf("upgrade output %q", out)
		}
		if got := jsonpath(t, "old", ".spec.version"); got != "v1.37.2" {
			t.Fatalf("spec.version = %q after upgrade", got)
		}

		// The same downgrade through client-go gives the text the plugin must print unchanged.
		cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cs := versioned.NewForConfigOrDie(cfg)
		_, apiErr := cs.CapnV1alpha1().NestedClusters("default").Upgrade(context.Background(), "old",
			&v1alpha1.NestedClusterUpgrade{Version: "v1.36.3"}, metav1.CreateOptions{})
		if apiErr == nil || !strings.Contains(apiErr.Error(), "downgrade from v1.37.2 to v1.36.3 is not supported") {
			t.Fatalf("the API did not refuse the downgrade: %v", apiErr)
		}
		if errOut := failNested(t, "upgrade", "old", "--to", "v1.36.3"); errOut != "error: "+apiErr.Error()+"\n" {
			t.Fatalf("downgrade stderr %q, want the API error %q unchanged", errOut, apiErr.Error())
		}
	})

	t.Run("status", func(t *testing.T) {
		out := mustNested(t, "status", "demo")
		lines := strings.Split(out, "\n")
		if got := strings.Join(strings.Fields(lines[0]), " "); got != "COMPONENT DESIRED READY UPDATED VERSION IMAGE" {
			t.Fatalf("status header %q:\n%s", got, out)
		}
		if !strings.Contains(out, "kube-apiserver") || !strings.Contains(out, "Phase:") {
			t.Fatalf("status output:\n%s", out)
		}
		if errOut := failNested(t, "status", "nope"); !strings.Contains(errOut, `nestedclusters.capn.dev "nope" not found`) {
			t.Fatalf("missing cluster: %s", errOut)
		}
	})

	t.Run("kubeconfig not served yet", func(t *testing.T) {
		if errOut := failNested(t, "kubeconfig", "demo"); !strings.Contains(errOut, "does not serve nestedclusters/kubeconfig yet") {
			t.Fatalf("kubeconfig error: %s", errOut)
		}
	})
}

// runNested runs `kubectl nested ARGS` the way a user does: kubectl finds
// the plugin on PATH. Global flags must come after the plugin name (in
// args): kubectl only looks plugins up when the first arguments are not
// flags.
func runNested(kubectl, plugin, kubeconfig string, timeout time.Duration, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"nested"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}
