//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// kubeletPods are the pods the kubelet-API checks use: ticker crashes
// after 10 ticks and restarts (for --previous), follow ticks forever (for
// -f), and cat echoes its stdin (for attach).
const kubeletPods = `apiVersion: v1
kind: Pod
metadata: {name: ticker, namespace: app}
spec:
  containers:
  - {name: c, image: capn.dev/capn-testserver:dev, args: [tick, --count=10, --interval=100ms, --exit=1]}
---
apiVersion: v1
kind: Pod
metadata: {name: follow, namespace: app}
spec:
  containers:
  - {name: c, image: capn.dev/capn-testserver:dev, args: [tick, --interval=500ms]}
---
apiVersion: v1
kind: Pod
metadata: {name: cat, namespace: app}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: capn.dev/capn-testserver:dev, args: [cat, "-"], stdin: true, stdinOnce: true}
`

// testKubeletAPI drives kubectl logs, exec, attach and port-forward as the
// tenant, through the tenant apiserver and the syncer's kubelet API, and
// times logs and exec against the same commands run directly on the
// management cluster.
func testKubeletAPI(t *testing.T, admin framework.Kubectl, tn dataPlaneTenant) {
	tk := tn.tk
	tk.MustRun(t, kubeletPods, "apply", "-f", "-")
	web := strings.Fields(tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
	require.NotEmpty(t, web)
	pod := web[0]

	// exec of a mounted file, and exec -i with stdin.
	out := tk.MustRun(t, "", "exec", "-n", "app", pod, "--", "capn-testserver", "cat", "/config/message")
	assert.Equal(t, "hello-"+tn.name, strings.TrimSpace(out), "kubectl exec cat of the mounted ConfigMap")
	out = tk.MustRun(t, "ping from stdin\n", "exec", "-i", "-n", "app", pod, "--", "capn-testserver", "cat", "-")
	assert.Equal(t, "ping from stdin", strings.TrimSpace(out), "kubectl exec -i")

	// A pod of another tenant namespace or name is refused by the tenant
	// apiserver or the syncer, never reached: the syncer answers only for
	// pods it runs.
	r := tk.Run("", "exec", "-n", "app", "no-such-pod", "--", "capn-testserver", "cat", "-")
	require.Error(t, r.Err)

	// logs, --previous after a restart, and -f while the container runs.
	framework.Eventually(t, 2*time.Minute, "ticker restarted", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", "app", "ticker", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
		return r.Err == nil && r.Stdout != "" && r.Stdout != "0", r.Stdout + r.Stderr
	})
	prev := tk.MustRun(t, "", "logs", "-n", "app", "ticker", "--previous")
	assert.Contains(t, prev, "tick 10\n", "kubectl logs --previous holds the crashed container's last line")
	framework.Eventually(t, time.Minute, "follow Running", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", "app", "follow", "-o", "jsonpath={.status.phase}")
		return r.Stdout == "Running", r.Stdout + r.Stderr
	})
	logs := tk.MustRun(t, "", "logs", "-n", "app", "follow")
	assert.Contains(t, logs, "tick start", "kubectl logs")
	f := tk.Start(t, "logs", "-f", "-n", "app", "follow", "--tail=1")
	// A tick printed after the follow began reached it: the stream is live.
	first := -1
	f.WaitFor(t, 30*time.Second, "a followed tick", func(l string) bool {
		var n int
		if _, err := fmt.Sscanf(l, "tick %d", &n); err == nil {
			if first < 0 {
				first = n
			}
			return n >= first+2
		}
		return false
	})

	// attach: the cat pod echoes what attach sends on stdin.
	framework.Eventually(t, time.Minute, "cat Running", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", "app", "cat", "-o", "jsonpath={.status.phase}")
		return r.Stdout == "Running", r.Stdout + r.Stderr
	})
	out = tk.MustRun(t, "hello through attach\n", "attach", "-i", "-n", "app", "cat")
	assert.Contains(t, out, "hello through attach", "kubectl attach -i")

	// port-forward to the test server, with a request through it.
	pf := tk.Start(t, "port-forward", "-n", "app", "pod/"+pod, ":8080")
	forwarding := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
	var port string
	pf.WaitFor(t, 30*time.Second, "port-forward listening", func(l string) bool {
		if m := forwarding.FindStringSubmatch(l); m != nil {
			port = m[1]
			return true
		}
		return false
	})
	resp, err := http.Get("http://127.0.0.1:" + port + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "GET /healthz through kubectl port-forward: %s", body)

	// The same commands, tenant vs directly on the management cluster.
	host := names.Host("app", pod)
	tenantExec := median(t, 5, func() { tk.MustRun(t, "", "exec", "-n", "app", pod, "--", "capn-testserver", "cat", "/config/message") })
	directExec := median(t, 5, func() {
		admin.MustRun(t, "", "exec", "-n", tn.workloads, host, "--", "capn-testserver", "cat", "/config/message")
	})
	tenantLogs := median(t, 5, func() { tk.MustRun(t, "", "logs", "-n", "app", pod) })
	directLogs := median(t, 5, func() { admin.MustRun(t, "", "logs", "-n", tn.workloads, host) })
	t.Logf("numbers: kubectl exec median %s through the syncer vs %s direct (%.2fx); kubectl logs %s vs %s (%.2fx)",
		tenantExec, directExec, float64(tenantExec)/float64(directExec), tenantLogs, directLogs, float64(tenantLogs)/float64(directLogs))
	tk.MustRun(t, "", "delete", "-n", "app", "pod", "ticker", "follow", "cat", "--wait=false")
}

// median runs f n times and returns the median wall time.
func median(t *testing.T, n int, f func()) time.Duration {
	t.Helper()
	d := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		f()
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	return d[n/2]
}
