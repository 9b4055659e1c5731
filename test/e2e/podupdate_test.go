//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"capn.dev/capn/test/framework"
)

// podInfo reads its labels and annotations through a downward-API volume.
const podInfo = `apiVersion: v1
kind: Pod
metadata: {name: info, namespace: app, labels: {v: "1"}, annotations: {note: first}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: capn.dev/capn-testserver:dev
    args: [serve]
    volumeMounts: [{name: info, mountPath: /info}]
    resources: {limits: {cpu: 50m, memory: 32Mi}}
  volumes:
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: note, fieldRef: {fieldPath: "metadata.annotations['note']"}}
`

// testPodUpdates: what a tenant changes on a running pod reaches it as on
// any cluster (the conformance specs "Downward API volume should update
// labels on modification", "Pods should allow activeDeadlineSeconds to
// be updated" and "pod generation should start at 1 and increment per
// update"). Its downward-API files show the tenant's labels, never the
// host pod's, and follow an edit; a shorter deadline ends it; and its
// observedGeneration follows its generation.
func testPodUpdates(t *testing.T, tn dataPlaneTenant) {
	tk := tn.tk
	tk.MustRun(t, podInfo, "create", "-f", "-")
	t.Cleanup(func() { tk.Run("", "delete", "pod", "-n", "app", "info", "--wait=false") })
	tk.MustRun(t, "", "wait", "-n", "app", "pod/info", "--for=condition=Ready", "--timeout=2m")
	read := func(file string) string {
		r := tk.Run("", "exec", "-n", "app", "info", "--", "capn-testserver", "cat", "/info/"+file)
		return r.Stdout + r.Stderr
	}
	assert.Equal(t, `v="1"`, read("labels"), "the tenant's labels, and none of the host pod's")
	observed := func(want string) {
		framework.Eventually(t, time.Minute, "observedGeneration "+want, func() (bool, string) {
			r := tk.Run("", "get", "pod", "-n", "app", "info", "-o", "jsonpath={.metadata.generation} {.status.observedGeneration}")
			return r.Stdout == want+" "+want, r.Stdout + r.Stderr
		})
	}
	observed("1")

	tk.MustRun(t, "", "label", "pod", "-n", "app", "info", "v=2", "--overwrite")
	tk.MustRun(t, "", "annotate", "pod", "-n", "app", "info", "note=second", "--overwrite")
	framework.Eventually(t, 2*time.Minute, "the edits in the downward-API files", func() (bool, string) {
		l, n := read("labels"), read("note")
		return l == `v="2"` && n == "second", l + " | " + n
	})

	tk.MustRun(t, "", "patch", "pod", "-n", "app", "info", "-p", `{"spec":{"activeDeadlineSeconds":5}}`)
	observed("2")
	framework.Eventually(t, 2*time.Minute, "the pod ended by its new deadline", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", "app", "info", "-o", "jsonpath={.status.phase} {.status.reason}")
		return strings.TrimSpace(r.Stdout) == "Failed DeadlineExceeded", r.Stdout + r.Stderr
	})
}
