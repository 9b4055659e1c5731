//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"capn.dev/capn/test/framework"
)

const fakeDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: fake, namespace: default}
spec:
  replicas: 20
  selector: {matchLabels: {app: fake}}
  template:
    metadata: {labels: {app: fake}}
    spec:
      nodeSelector: {type: kwok}
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      containers: [{name: fake, image: fake.invalid/never-pulled}]
`

// TestKwokFakeNodes checks the framework's fake nodes: kwok-managed Nodes
// become Ready, and a Deployment scheduled onto them is rolled out by the
// real scheduler and controllers, with kwok simulating the pods.
func TestKwokFakeNodes(t *testing.T) {
	c := framework.StartCluster(t, clusterOptions(t))
	t.Setenv("KUBECACHEDIR", t.TempDir())
	nodes := c.StartKwok(t, framework.KwokOptions{Bin: env(t, "KWOK"), StageDir: env(t, "KWOK_STAGES"), Nodes: 5})
	admin := framework.Kubectl{Bin: env(t, "KUBECTL"), Kubeconfig: c.AdminKubeconfig}

	applied := time.Now()
	admin.MustRun(t, fakeDeployment, "apply", "-f", "-")
	admin.MustRun(t, "", "rollout", "status", "deployment/fake", "-n", "default", "--timeout=120s")
	t.Logf("Deployment(20) on %d kwok nodes Ready %s after apply", len(nodes), time.Since(applied).Round(time.Millisecond))

	out := admin.MustRun(t, "", "get", "pods", "-n", "default", "-l", "app=fake", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}")
	used := map[string]bool{}
	for _, n := range strings.Fields(out) {
		if !strings.HasPrefix(n, "kwok-node-") {
			t.Fatalf("pod scheduled to %q, not a fake node", n)
		}
		used[n] = true
	}
	if len(strings.Fields(out)) != 20 || len(used) < 2 {
		t.Fatalf("want 20 pods spread over several fake nodes, got:\n%s", out)
	}
}
