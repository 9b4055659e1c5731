//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/test/framework"
)

// checkPullsStayLocal proves the node's containerd never tries a registry
// host: a pod whose images were not imported, with imagePullPolicy Always,
// from registry.k8s.io and from Docker Hub (the default registry), fails its
// pull against the loopback sink with "connection refused". A pull that
// tried the real host would fail differently (a DNS or dial error naming
// that host), and would have sent a packet off the machine.
func checkPullsStayLocal(t *testing.T, admin framework.Kubectl, node *framework.Node) {
	t.Helper()
	hosts, err := os.ReadFile(node.RegistryHostsFile())
	require.NoError(t, err)
	assert.Contains(t, string(hosts), fmt.Sprintf("server = %q", "http://"+framework.RegistrySink))

	const ns = "pull-check"
	admin.MustRun(t, "", "create", "namespace", ns)
	t.Cleanup(func() { admin.Run("", "delete", "namespace", ns, "--wait=false") })
	images := map[string]string{
		"k8s-io":    "registry.k8s.io/capn-e2e-absent:v0",
		"docker-io": "capn-e2e-absent:v0",
	}
	var ctrs strings.Builder
	for name, img := range images {
		fmt.Fprintf(&ctrs, "  - {name: %s, image: %q, imagePullPolicy: Always}\n", name, img)
	}
	admin.MustRun(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: absent, namespace: "+ns+"}\nspec:\n"+
		"  automountServiceAccountToken: false\n  containers:\n"+ctrs.String(), "create", "-f", "-")

	started := time.Now()
	for name, img := range images {
		framework.Eventually(t, 2*time.Minute, "pull of "+img+" to fail against the sink", func() (bool, string) {
			r := admin.Run("", "get", "pod", "absent", "-n", ns, "-o",
				`jsonpath={.status.containerStatuses[?(@.name=="`+name+`")].state.waiting.message}`)
			msg := r.Stdout
			ok := strings.Contains(msg, framework.RegistrySink) && strings.Contains(msg, "connection refused")
			if ok {
				t.Logf("pull of %s: %s", img, msg)
			}
			return ok, msg + r.Stderr
		})
	}
	t.Logf("numbers: absent images fail against the registry sink %s after the pod's create", time.Since(started).Round(time.Millisecond))
}

// checkMissingComponentImage creates a NestedCluster whose
// kube-controller-manager image the node does not have, and checks that the
// cluster says so, naming component, image and kubelet reason, in its
// conditions, in `kubectl get -o wide` and in `kubectl describe`, and keeps
// saying it; then deletes it.
func checkMissingComponentImage(t *testing.T, k, admin framework.Kubectl) {
	t.Helper()
	const name = "noimg"
	const img = "registry.k8s.io/kube-controller-manager:v0.0.0-capn-e2e-absent"
	created := time.Now()
	k.MustRun(t, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: "+name+
		"\nspec:\n  controllerManager:\n    image: "+img+"\n", "create", "-f", "-")

	cond := func() (status, reason, message string) {
		r := k.Run("", "get", "nc", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="`+v1alpha1.ConditionImagesAvailable+`")].status}|`+
				`{.status.conditions[?(@.type=="`+v1alpha1.ConditionImagesAvailable+`")].reason}|`+
				`{.status.conditions[?(@.type=="`+v1alpha1.ConditionImagesAvailable+`")].message}`)
		f := strings.SplitN(r.Stdout, "|", 3)
		if len(f) != 3 {
			return "", "", r.Stdout + r.Stderr
		}
		return f[0], f[1], f[2]
	}
	framework.Eventually(t, 2*time.Minute, name+" to report ImagesAvailable=False", func() (bool, string) {
		s, _, m := cond()
		return s == "False", s + " " + m
	})
	reported := time.Since(created)
	_, reason, msg := cond()
	assert.Contains(t, v1alpha1.ImagePullReasons, reason)
	assert.Contains(t, msg, "kube-controller-manager: image "+img)
	assert.Contains(t, msg, reason)

	ready := k.MustRun(t, "", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}`)
	assert.Equal(t, "False "+v1alpha1.ReasonImagePullFailed, ready)
	wide := k.MustRun(t, "", "get", "nc", name, "-o", "wide")
	// The kubelet flips between ErrImagePull and ImagePullBackOff between
	// the two reads: any pull reason will do.
	assert.True(t, slices.ContainsFunc(v1alpha1.ImagePullReasons, func(r string) bool { return strings.Contains(wide, r) }), "kubectl get -o wide: %s", wide)
	describe := k.MustRun(t, "", "describe", "nc", name)
	assert.Contains(t, describe, v1alpha1.ConditionImagesAvailable)
	assert.Contains(t, describe, img)

	// It keeps saying so across an edit and the 30 s requeue of a
	// not-ready cluster (the kubelet flips between ErrImagePull and
	// ImagePullBackOff; either is fine, True is not).
	k.MustRun(t, "", "annotate", "nc", name, "e2e.capn.dev/resync=1")
	framework.Consistently(t, 35*time.Second, name+" to keep ImagesAvailable=False", func() (bool, string) {
		s, r, _ := cond()
		return s == "False", s + " " + r
	})
	t.Logf("numbers: missing kube-controller-manager image reported %s after create", reported.Round(time.Millisecond))

	ns := mgmtNamespace(t, admin, name)
	k.MustRun(t, "", "delete", "nc", name, "--timeout=3m")
	framework.Eventually(t, 3*time.Minute, "management namespace "+ns+" to be gone", func() (bool, string) {
		r := admin.Run("", "get", "namespace", ns, "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
}
