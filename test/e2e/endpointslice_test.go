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
	discoveryv1 "k8s.io/api/discovery/v1"

	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// customEndpoints is a selectorless Service whose endpoints the tenant
// writes by hand: one of its own web pods, and b's web pod.
const customEndpoints = `apiVersion: v1
kind: Service
metadata: {name: custom, namespace: app}
spec:
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: custom-1
  namespace: app
  labels: {kubernetes.io/service-name: custom}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- addresses: [%s]
  conditions: {ready: true}
- addresses: [%s]
  conditions: {ready: true}
---
apiVersion: batch/v1
kind: Job
metadata: {name: custom-client, namespace: app}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: client
        image: capn.dev/capn-testserver:dev
        args: [get, "http://custom/", --timeout=90s, --out=/dev/termination-log]
        resources: {limits: {cpu: 50m, memory: 32Mi}}
`

// testSelectorlessEndpoints: a hand-made EndpointSlice of a selectorless
// Service works as on any cluster (the conformance EndpointSlice specs
// with multiple IPs and ports): a's client reaches a's pod through it.
// Its host copy carries a's own pod only; b's address, which a named too,
// is dropped with a Warning, so no tenant can point a Service the
// management kube-proxy routes at another's pods.
func testSelectorlessEndpoints(t *testing.T, admin framework.Kubectl, a, b dataPlaneTenant) {
	ownIP := strings.Fields(a.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"))[0]
	otherIP := strings.Fields(b.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"))[0]
	a.tk.MustRun(t, fmt.Sprintf(customEndpoints, ownIP, otherIP), "apply", "-f", "-")
	t.Cleanup(func() {
		a.tk.Run("", "delete", "-n", "app", "job/custom-client", "service/custom", "endpointslice/custom-1", "--wait=false")
	})
	host := names.Host("app", "custom-1")
	var slice discoveryv1.EndpointSlice
	framework.Eventually(t, time.Minute, a.name+": the host EndpointSlice of custom", func() (bool, string) {
		r := admin.Run("", "get", "endpointslice", "-n", a.workloads, host, "-o", "json")
		return r.Err == nil && json.Unmarshal([]byte(r.Stdout), &slice) == nil, r.Stdout + r.Stderr
	})
	var addrs []string
	for _, e := range slice.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	assert.Equal(t, []string{ownIP}, addrs, "only a's own pod is served; b's %s is dropped", otherIP)
	assert.Equal(t, names.Host("app", "custom"), slice.Labels[discoveryv1.LabelServiceName])
	waitCondition(t, a, "job/custom-client", "Complete", "Failed")
	msg := a.tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "job-name=custom-client", "-o",
		"jsonpath={.items[0].status.containerStatuses[0].state.terminated.message}")
	var got struct{ File string }
	require.NoError(t, json.Unmarshal([]byte(msg), &got), "client answer: %s", msg)
	assert.Equal(t, "hello-"+a.name, strings.TrimSpace(got.File), "answered by a's own pod")
	framework.Eventually(t, time.Minute, a.name+": EndpointsDropped on custom-1", func() (bool, string) {
		r := a.tk.Run("", "get", "events", "-n", "app", "--field-selector=involvedObject.name=custom-1,reason=EndpointsDropped", "-o", "name")
		return r.Err == nil && r.Stdout != "", r.Stdout + r.Stderr
	})
}
