//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/test/framework"
)

// testSleepWake puts the Shared tenant name (Memory etcd, running app/web
// from DataPlaneOnNode) to sleep and wakes it with `kubectl nested`, as a
// user would: asleep, only etcd runs (its Memory storage would lose the
// data otherwise) and the tenant's pods are stopped; awake, the same data
// is there and app/web runs again on new pods. It returns the numbers.
func testSleepWake(t *testing.T, admin, k framework.Kubectl, node *framework.Node, plugin, name string) string {
	t.Helper()
	ns := mgmtNamespace(t, admin, name)
	wns := k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.status.workloadNamespace}")
	require.NotEmpty(t, wns)
	tk := framework.Kubectl{Bin: k.Bin, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
	tk.MustRun(t, "", "create", "configmap", "before-sleep", "-n", "default", "--from-literal=kept=yes")
	webPods := func() string {
		return tk.MustRun(t, "", "get", "pods", "-n", "app", "-l", "app=web", "-o",
			`jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.name} {end}`)
	}
	framework.Eventually(t, 2*time.Minute, "app/web runs in "+name+" before the sleep", func() (bool, string) {
		p := webPods()
		return len(strings.Fields(p)) == 2, p
	})
	webBefore := strings.Fields(webPods())
	rssBefore := podsRSS(t, admin, node, ns)
	nested := func(timeout time.Duration, args ...string) time.Duration {
		start := time.Now()
		stdout, stderr, err := runNested(k.Bin, plugin, k.Kubeconfig, timeout, append(args, "--namespace="+k.Namespace)...)
		require.NoError(t, err, "kubectl nested %v: %s%s", args, stdout, stderr)
		return time.Since(start)
	}

	slept := nested(4*time.Minute, "sleep", name, "--wait", "--timeout=3m")
	assert.Equal(t, string(v1alpha1.PhaseSleeping), k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.status.phase}"))
	msg := k.MustRun(t, "", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Sleeping")].message}`)
	assert.Contains(t, msg, "etcd keeps running", "the condition says why etcd still runs")
	components := admin.MustRun(t, "", "get", "pods", "-n", ns, "-o", `jsonpath={range .items[*]}{.metadata.labels.capn\.dev/component} {end}`)
	assert.Equal(t, []string{v1alpha1.ComponentEtcd}, strings.Fields(components), "asleep, only etcd runs")
	framework.Eventually(t, 2*time.Minute, "the tenant's pods stopped on the data plane", func() (bool, string) {
		out := admin.MustRun(t, "", "get", "pods", "-n", wns, "-o", "name")
		return strings.TrimSpace(out) == "", out
	})
	rssAsleep := podsRSS(t, admin, node, ns)
	before, asleep := sumKiB(rssBefore), sumKiB(rssAsleep)
	assert.Less(t, asleep, before, "asleep, the control plane holds less memory")

	woke := nested(4*time.Minute, "wake", name, "--wait", "--timeout=3m")
	assert.Equal(t, "yes", tk.MustRun(t, "", "get", "configmap", "before-sleep", "-n", "default", "-o", "jsonpath={.data.kept}"),
		"the data written before the sleep")
	// testTenantStorage left a StatefulSet with a volume per pod.
	checkStoredData(t, tk, "after the wake")
	var webAfter []string
	framework.Eventually(t, 3*time.Minute, "app/web runs again after the wake, on new pods", func() (bool, string) {
		webAfter = strings.Fields(webPods())
		fresh := len(webAfter) == 2
		for _, p := range webAfter {
			fresh = fresh && !slices.Contains(webBefore, p)
		}
		return fresh, fmt.Sprintf("before %v now %v", webBefore, webAfter)
	})

	// Asleep by itself: nobody uses mem for 30 s (capn checks every 5 s,
	// TestProvisionerOnNode's --activity-check-interval), then a
	// /kubeconfig request wakes it.
	set := time.Now()
	k.MustRun(t, "", "patch", "nc", name, "--type=merge", "-p", `{"spec":{"sleep":{"afterInactivity":"30s"}}}`)
	framework.Eventually(t, 3*time.Minute, name+" asleep for inactivity", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Inactive")].status} {.status.conditions[?(@.type=="Sleeping")].reason} {.status.phase}`)
		return r.Err == nil && r.Stdout == "True Asleep Sleeping", r.Stdout + r.Stderr
	})
	idleSleep := time.Since(set)
	assert.Equal(t, []string{v1alpha1.ComponentEtcd}, strings.Fields(admin.MustRun(t, "", "get", "pods", "-n", ns, "-o",
		`jsonpath={range .items[*]}{.metadata.labels.capn\.dev/component} {end}`)), "asleep for inactivity, only etcd runs")
	asked := time.Now()
	wakeKC := tenantKubeconfig(t, k, plugin, name, "alice") // kubectl nested kubeconfig
	framework.Eventually(t, 3*time.Minute, name+" Ready after the /kubeconfig request", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Inactive")].reason}`)
		return r.Err == nil && r.Stdout == "True "+v1alpha1.ReasonWakeRequested, r.Stdout + r.Stderr
	})
	wokeOnRequest := time.Since(asked)
	tw := framework.Kubectl{Bin: k.Bin, Kubeconfig: wakeKC}
	assert.Equal(t, "yes", tw.MustRun(t, "", "get", "configmap", "before-sleep", "-n", "default", "-o", "jsonpath={.data.kept}"))

	onRequest := testWakeOnRequest(t, admin, k, tk, name, ns, webPods)
	k.MustRun(t, "", "patch", "nc", name, "--type=merge", "-p", `{"spec":{"sleep":{"afterInactivity":null}}}`)

	return fmt.Sprintf("%s: sleep --wait %s, wake --wait (to Ready) %s; control-plane RSS %.0f MiB awake, %.0f MiB asleep (%.2fx); "+
		"afterInactivity 30s -> asleep %s after it was set; /kubeconfig -> Ready %s; %s",
		name, slept.Round(time.Millisecond), woke.Round(time.Millisecond), float64(before)/1024, float64(asleep)/1024, float64(asleep)/float64(before),
		idleSleep.Round(time.Millisecond), wokeOnRequest.Round(time.Millisecond), onRequest)
}

// testWakeOnRequest lets name fall asleep for inactivity again and then
// uses it with tk, a kubeconfig issued before any of its sleeps and asked
// for nothing since: the waker holds kubectl's connection, wakes the
// cluster, and kubectl gets its answer. The cluster says what woke it,
// and its workloads run again.
func testWakeOnRequest(t *testing.T, admin, k, tk framework.Kubectl, name, ns string, webPods func() string) string {
	t.Helper()
	// The pods the last wake started: asleep, none runs, and asking would
	// be a request.
	var webBefore []string
	framework.Eventually(t, 3*time.Minute, "app/web runs before the sleep", func() (bool, string) {
		webBefore = strings.Fields(webPods())
		return len(webBefore) == 2, fmt.Sprint(webBefore)
	})
	framework.Eventually(t, 3*time.Minute, name+" asleep for inactivity again", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Inactive")].status} {.status.conditions[?(@.type=="Sleeping")].reason}`)
		return r.Err == nil && r.Stdout == "True Asleep", r.Stdout + r.Stderr
	})
	framework.Eventually(t, time.Minute, "the waker's EndpointSlice in "+ns, func() (bool, string) {
		r := admin.Run("", "get", "endpointslice", "-n", ns, "kube-apiserver-waker", "-o", "jsonpath={.ports[0].port}")
		return r.Err == nil && r.Stdout != "", r.Stdout + r.Stderr
	})
	asked := time.Now()
	out := tk.MustRun(t, "", "get", "ns", "-o", "name")
	answered := time.Since(asked)
	assert.Contains(t, strings.Fields(out), "namespace/default", "answered with the unchanged kubeconfig")
	r := k.MustRun(t, "", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Inactive")].status} {.status.conditions[?(@.type=="Inactive")].reason}`)
	assert.Equal(t, "False "+v1alpha1.ReasonConnectionReceived, r, "woken by the held connection")
	framework.Eventually(t, 3*time.Minute, name+" Ready after the request", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return r.Err == nil && r.Stdout == "True", r.Stdout + r.Stderr
	})
	framework.Eventually(t, time.Minute, "the waker's EndpointSlice gone once the apiserver is ready", func() (bool, string) {
		r := admin.Run("", "get", "endpointslice", "-n", ns, "kube-apiserver-waker", "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	framework.Eventually(t, 3*time.Minute, "app/web runs again after the wake on request", func() (bool, string) {
		now := strings.Fields(webPods())
		fresh := len(now) == 2
		for _, p := range now {
			fresh = fresh && !slices.Contains(webBefore, p)
		}
		return fresh, fmt.Sprintf("before %v now %v", webBefore, now)
	})
	return fmt.Sprintf("asleep, `kubectl get ns` with the old kubeconfig answered in %s (the waker held it)", answered.Round(time.Millisecond))
}

func sumKiB(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
