//go:build e2e

package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

// TestProvisionerOnNode deploys capn-apiserver with --provisioner=pods onto
// a real node and checks that the example NestedCluster becomes a Ready
// tenant control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler as pods in its management namespace), then that deleting
// it removes that namespace.
func TestProvisionerOnNode(t *testing.T) {
	kubectl, images := env(t, "KUBECTL"), env(t, "CAPN_IMAGES")
	clusterOpts := clusterOptions(t)
	nodeOpts := framework.NodeOptions{Kubelet: env(t, "KUBELET"), KubeProxy: env(t, "KUBE_PROXY"), Images: []string{images}}
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("CAPN_IMAGES: %v (build it with `make images`)", err)
	}
	t.Setenv("KUBECACHEDIR", t.TempDir())
	c := framework.StartCluster(t, clusterOpts)
	if c.NodeIP.IsLoopback() {
		t.Fatalf("no non-loopback node IP: kubelet and pods need %s to be a real address", c.NodeIP)
	}
	node := c.StartNode(t, nodeOpts)
	admin := framework.Kubectl{Bin: kubectl, Kubeconfig: c.AdminKubeconfig}
	framework.DeployCapnWith(t, c, node, admin, repoFile(t, ""), framework.CapnDeployOptions{
		ExtraArgs: []string{"--provisioner=pods"},
	})

	k := admin
	k.Namespace = "default"
	demo := &capn.NestedCluster{}
	demo.Namespace, demo.Name = "default", "demo"
	mgmtNS := provisioner.ManagementNamespace(demo)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"get", "pods", "-n", mgmtNS, "-o", "wide"},
			{"describe", "nc", "demo", "-n", "default"},
			{"get", "events", "-n", mgmtNS, "--sort-by=.lastTimestamp"},
			{"logs", "-n", framework.CapnNamespace, "-l", framework.CapnPodSelector, "--tail=60"},
		} {
			r := admin.Run("", args...)
			t.Logf("kubectl %s:\n%s%s", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
		pods := admin.Run("", "get", "pods", "-n", mgmtNS, "-o", "name")
		for _, p := range strings.Fields(pods.Stdout) {
			r := admin.Run("", "logs", "-n", mgmtNS, p, "--all-containers", "--tail=40")
			t.Logf("kubectl logs %s:\n%s%s", p, r.Stdout, r.Stderr)
			r = admin.Run("", "logs", "-n", mgmtNS, p, "--all-containers", "--previous", "--tail=20")
			if r.Err == nil {
				t.Logf("kubectl logs --previous %s:\n%s", p, r.Stdout)
			}
		}
	})

	// Aggregated discovery can trail the APIService's Available condition.
	framework.Eventually(t, 30*time.Second, "kubectl create of the example NestedCluster", func() (bool, string) {
		r := k.Run("", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
		return r.Err == nil, r.Stdout + r.Stderr
	})
	created := time.Now()

	var podsUp time.Duration
	framework.Eventually(t, 4*time.Minute, "the tenant control plane pods and NestedCluster demo Ready=True", func() (bool, string) {
		pods := admin.Run("", "get", "pods", "-n", mgmtNS, "--no-headers",
			"-o", "custom-columns=NAME:.metadata.name,READY:.status.containerStatuses[*].ready")
		if podsUp == 0 && pods.Err == nil && strings.Count(pods.Stdout, "true") >= 4 {
			podsUp = time.Since(created)
		}
		r := k.Run("", "get", "nc", "demo", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return r.Err == nil && r.Stdout == "True", "Ready=" + r.Stdout + r.Stderr + "; pods:\n" + pods.Stdout + pods.Stderr
	})
	ready := time.Since(created)
	t.Logf("kubectl get pods -n %s -o wide:\n%s", mgmtNS, admin.MustRun(t, "", "get", "pods", "-n", mgmtNS, "-o", "wide"))
	// A restart before Ready is tolerated but costs a crash-loop back-off:
	// show why it happened.
	restarts := admin.MustRun(t, "", "get", "pods", "-n", mgmtNS, "--no-headers",
		"-o", "custom-columns=NAME:.metadata.name,RESTARTS:.status.containerStatuses[*].restartCount")
	for _, line := range strings.Split(strings.TrimSpace(restarts), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] != "0" {
			r := admin.Run("", "logs", "-n", mgmtNS, f[0], "--previous", "--tail=15")
			t.Logf("%s restarted %s times; previous container's last lines:\n%s%s", f[0], f[1], r.Stdout, r.Stderr)
		}
	}

	deleted := time.Now()
	k.MustRun(t, "", "delete", "nc", "demo", "--wait=false")
	framework.Eventually(t, 3*time.Minute, "management namespace "+mgmtNS+" to be gone", func() (bool, string) {
		r := admin.Run("", "get", "namespace", mgmtNS, "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	framework.Eventually(t, time.Minute, "NestedCluster demo to be gone", func() (bool, string) {
		r := k.Run("", "get", "nc", "demo", "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	t.Logf("numbers: create -> all pods ready %s | create -> Ready %s | delete -> namespace gone %s",
		podsUp.Round(time.Millisecond), ready.Round(time.Millisecond), time.Since(deleted).Round(time.Millisecond))
}
