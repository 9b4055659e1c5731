//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"capn.dev/capn/test/framework"
)

// burner is a Deployment whose pods keep one CPU busy for a while after
// they start, under an HPA on CPU: it scales up while they burn and back
// down once they idle. The scale-down window is 0 so that the test waits
// for the metrics, not for the default five minutes.
const burner = `apiVersion: apps/v1
kind: Deployment
metadata: {name: burn, namespace: app}
spec:
  replicas: 1
  selector: {matchLabels: {app: burn}}
  template:
    metadata: {labels: {app: burn}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: burn
        image: capn.dev/capn-testserver:dev
        args: [serve, --burn=60s]
        resources: {requests: {cpu: 20m, memory: 16Mi}, limits: {cpu: 200m, memory: 32Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burn, namespace: app}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burn}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 0
      policies: [{type: Percent, value: 100, periodSeconds: 15}]
`

// testTenantMetrics: kubectl top and a CPU HPA work in tenant a as on any
// cluster, through the metrics-server addon the syncer keeps and the
// virtual Node's resource metrics; a shows only its own pods (b runs the
// same app under the same names, so b's pod names must never show), and
// the node's usage is a's own, not the host node's. The addon comes back
// when deleted.
func testTenantMetrics(t *testing.T, a, b dataPlaneTenant) string {
	tk := a.tk
	framework.Eventually(t, 3*time.Minute, a.name+": APIService v1beta1.metrics.k8s.io Available", func() (bool, string) {
		r := tk.Run("", "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		return r.Stdout == "True", r.Stdout + r.Stderr
	})

	own := strings.Fields(tk.MustRun(t, "", "get", "pods", "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}`))
	others := strings.Fields(b.tk.MustRun(t, "", "get", "pods", "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}`))
	var top string
	framework.Eventually(t, 2*time.Minute, a.name+": kubectl top pods lists the web pods", func() (bool, string) {
		r := tk.Run("", "top", "pods", "-A", "--no-headers")
		top = r.Stdout
		return r.Err == nil && strings.Count(r.Stdout, " web-") >= 2, r.Stdout + r.Stderr
	})
	for _, line := range strings.Split(strings.TrimSpace(top), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 4, "kubectl top pods line %q", line)
		pod := f[0] + "/" + f[1]
		assert.Contains(t, own, pod, "kubectl top pods shows only the tenant's own pods")
		assert.NotContains(t, others, pod, "another tenant's pod shows in kubectl top")
	}

	var node string
	framework.Eventually(t, 2*time.Minute, a.name+": kubectl top nodes", func() (bool, string) {
		r := tk.Run("", "top", "nodes", "--no-headers")
		node = r.Stdout
		return r.Err == nil && !strings.Contains(r.Stdout, "unknown") && len(strings.Fields(r.Stdout)) >= 5, r.Stdout + r.Stderr
	})
	// The node's usage is the sum of the tenant's containers: a handful of
	// small pods, far below the host node's, which runs the management
	// cluster and every tenant's control plane.
	var nm struct {
		Usage struct{ CPU, Memory resource.Quantity }
	}
	name := strings.Fields(node)[0]
	require.NoError(t, json.Unmarshal([]byte(tk.MustRun(t, "", "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/"+name)), &nm))
	assert.Less(t, nm.Usage.Memory.Value(), int64(1<<30), "the virtual node's memory is the tenant's pods', not the host's: %s", nm.Usage.Memory.String())
	assert.Positive(t, nm.Usage.Memory.Value())

	// CPU autoscaling: up while the pods burn, down once they idle.
	tk.MustRun(t, burner, "apply", "-f", "-")
	t.Cleanup(func() { tk.Run("", "delete", "-n", "app", "deployment/burn", "hpa/burn", "--wait=false") })
	hpa := func() string {
		return tk.Run("", "get", "hpa", "-n", "app", "burn", "-o", "jsonpath={.status.currentReplicas}/{.status.desiredReplicas} {.status.currentMetrics[0].resource.current.averageUtilization}%").Stdout
	}
	started := time.Now()
	framework.Eventually(t, 4*time.Minute, a.name+": the HPA scales burn up", func() (bool, string) {
		s := hpa()
		return strings.HasPrefix(s, "2/") || strings.HasPrefix(s, "3/"), s
	})
	up := time.Since(started)
	framework.Eventually(t, 5*time.Minute, a.name+": the HPA scales burn back down", func() (bool, string) {
		s := hpa()
		return strings.HasPrefix(s, "1/1 "), s
	})
	down := time.Since(started)

	// The addon is the syncer's to keep: deleted, it comes back.
	uid := tk.MustRun(t, "", "get", "deployment", "-n", "kube-system", "metrics-server", "-o", "jsonpath={.metadata.uid}")
	tk.MustRun(t, "", "delete", "deployment", "-n", "kube-system", "metrics-server")
	tk.MustRun(t, "", "delete", "apiservice", "v1beta1.metrics.k8s.io")
	framework.Eventually(t, time.Minute, a.name+": the metrics addon recreated", func() (bool, string) {
		r := tk.Run("", "get", "deployment", "-n", "kube-system", "metrics-server", "-o", "jsonpath={.metadata.uid}")
		api := tk.Run("", "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "name")
		return r.Err == nil && r.Stdout != "" && r.Stdout != uid && api.Err == nil, r.Stdout + r.Stderr + api.Stderr
	})
	return fmt.Sprintf("HPA scaled up after %s and down after %s (burn 60s)", up.Round(time.Second), down.Round(time.Second))
}

// testMetricsOff: spec.metrics.mode None removes the addon the syncer made
// (its APIService first), and kubectl top then fails as on a cluster
// without metrics.
func testMetricsOff(t *testing.T, k framework.Kubectl, tn dataPlaneTenant) {
	k.MustRun(t, "", "patch", "nc", tn.name, "--type=merge", "-p", `{"spec":{"metrics":{"mode":"None"}}}`)
	framework.Eventually(t, 3*time.Minute, tn.name+": metrics addon removed", func() (bool, string) {
		api := tn.tk.Run("", "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "name")
		dep := tn.tk.Run("", "get", "deployment", "-n", "kube-system", "metrics-server", "-o", "name")
		gone := func(r framework.Result) bool { return r.Err != nil && strings.Contains(r.Stderr, "NotFound") }
		return gone(api) && gone(dep), api.Stdout + api.Stderr + dep.Stdout + dep.Stderr
	})
	r := tn.tk.Run("", "top", "pods", "-A")
	assert.Error(t, r.Err, "kubectl top without metrics: %s", r.Stdout)
	assert.False(t, slices.Contains(strings.Fields(tn.tk.MustRun(t, "", "get", "svc", "-n", "kube-system", "-o", "name")), "service/metrics-server"))
}
