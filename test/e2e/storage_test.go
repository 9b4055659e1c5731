//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
	"capn.dev/capn/test/framework"
)

// storageNS is the tenant namespace of testTenantStorage's StatefulSet,
// which it leaves running for the sleep and wake (checkStoredData).
const storageNS = "store"

// storageApp is a StatefulSet(2) whose pods each write their name to
// their own volume once and keep it: a replacement pod finds the first
// pod's value, or the volume was not kept.
const storageApp = `apiVersion: v1
kind: Namespace
metadata: {name: store}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: store}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: capn.dev/capn-testserver:dev
        args: [serve, --file=/data/id, "--write-once=$(POD_NAME)"]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        volumeMounts: [{name: data, mountPath: /data}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
        resources: {limits: {cpu: 100m, memory: 64Mi}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// testTenantStorage is issue 32 on the real node, driven with kubectl in
// the tenant as a user would: the provider's default class in the
// tenant, what a hostile tenant is refused, and a StatefulSet whose
// volumes outlive its pods, a scale to zero, and a resize.
func testTenantStorage(t *testing.T, admin framework.Kubectl, tn dataPlaneTenant) string {
	tk := tn.tk
	framework.Eventually(t, time.Minute, tn.name+": the provider's default StorageClass in the tenant", func() (bool, string) {
		r := tk.Run("", "get", "storageclass", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.storageclass\.kubernetes\.io/is-default-class} {end}`)
		return r.Err == nil && strings.TrimSpace(r.Stdout) == "local-path=true", r.Stdout + r.Stderr
	})
	framework.Eventually(t, time.Minute, tn.name+": the syncer's storage webhooks registered", func() (bool, string) {
		r := tk.Run("", "get", "mutatingwebhookconfiguration", "capn-syncer", "-o", `jsonpath={.webhooks[*].name}`)
		return r.Err == nil && strings.Contains(r.Stdout, "claims.syncer.capn.dev") && strings.Contains(r.Stdout, "storage.syncer.capn.dev"), r.Stdout + r.Stderr
	})

	// A hostile tenant: each refused at its create, in Kubernetes' terms.
	tk.MustRun(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: store}\n", "apply", "-f", "-")
	claim := func(name, extra string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %s, namespace: store}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n%s", name, extra)
	}
	for _, c := range []struct{ what, manifest, want string }{
		{"a PV of its own", `apiVersion: v1
kind: PersistentVolume
metadata: {name: mine}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /}
`, "PersistentVolumes are provisioned for claims"},
		{"a PV by name", claim("by-name", "  volumeName: pvc-of-another-tenant\n"), "spec.volumeName: Forbidden"},
		{"a PV by selector", claim("by-selector", "  selector: {matchLabels: {tenant: other}}\n"), "spec.selector: Forbidden"},
		{"another namespace's claim as a source", claim("clone", "  dataSourceRef: {kind: PersistentVolumeClaim, name: secrets, namespace: other}\n"), "spec.dataSourceRef: Forbidden"},
		{"a class off the list", claim("fast", "  storageClassName: provider-fast\n"), `spec.storageClassName: Unsupported value: "provider-fast"`},
		{"a size over the quota", strings.Replace(claim("huge", ""), "storage: 1Gi", "storage: 20Gi", 1), "exceeded quota"},
		{"the raw device", claim("raw", "  volumeMode: Block\n"), "spec.volumeMode: Unsupported value"},
	} {
		out := tk.MustFail(t, c.manifest, "create", "-f", "-")
		assert.Contains(t, out, c.want, "%s: refused with a reason", c.what)
	}
	// hostPath in a pod: the syncer refuses the pod, nothing runs.
	tk.MustRun(t, `apiVersion: v1
kind: Pod
metadata: {name: host-disk, namespace: store}
spec:
  containers: [{name: c, image: capn.dev/capn-testserver:dev, args: [serve]}]
  volumes: [{name: root, hostPath: {path: /}}]
`, "create", "-f", "-")
	framework.Eventually(t, time.Minute, "a hostPath pod refused", func() (bool, string) {
		r := tk.Run("", "get", "pod", "-n", storageNS, "host-disk", "-o", "jsonpath={.status.phase} {.status.message}")
		return r.Err == nil && strings.HasPrefix(r.Stdout, "Failed ") && strings.Contains(r.Stdout, "spec.volumes[0]"), r.Stdout + r.Stderr
	})
	tk.MustRun(t, "", "delete", "pod", "-n", storageNS, "host-disk", "--wait=false")
	assert.Empty(t, strings.TrimSpace(admin.MustRun(t, "", "get", "pvc", "-n", tn.workloads, "-o", "name")), "nothing refused reached the host")
	assert.NotContains(t, tk.MustRun(t, "", "get", "pv", "-o", "name"), "mine")

	// A StatefulSet with volumeClaimTemplates.
	started := time.Now()
	tk.MustRun(t, storageApp, "apply", "-f", "-")
	tk.MustRun(t, "", "rollout", "status", "-n", storageNS, "statefulset/db", "--timeout=3m")
	ready := time.Since(started)
	checkStoredData(t, tk, "")

	// kubectl get pvc,pv as on any cluster: Bound to each other, one PV
	// per claim, and a host claim in the workload namespace behind each.
	for _, pod := range []string{"db-0", "db-1"} {
		pvc := "data-" + pod
		got := tk.MustRun(t, "", "get", "pvc", "-n", storageNS, pvc, "-o", "jsonpath={.status.phase} {.spec.volumeName} {.metadata.uid} {.spec.storageClassName}")
		f := strings.Fields(got)
		require.Len(t, f, 4, got)
		assert.Equal(t, "Bound", f[0], pvc)
		assert.Equal(t, translate.TenantPVName(f[2]), f[1], "%s is bound to the PV the syncer made for it", pvc)
		assert.Equal(t, "local-path", f[3])
		pv := tk.MustRun(t, "", "get", "pv", f[1], "-o", "jsonpath={.status.phase} {.spec.claimRef.namespace}/{.spec.claimRef.name} {.spec.capacity.storage}")
		assert.Equal(t, "Bound store/"+pvc+" 1Gi", pv)
		host := admin.MustRun(t, "", "get", "pvc", "-n", tn.workloads, names.Host(storageNS, pvc), "-o",
			`jsonpath={.status.phase} {.metadata.labels.capn\.dev/tenant-uid}`)
		assert.Equal(t, "Bound "+f[2], host, "the host claim of %s, recording its tenant UID", pvc)
	}

	// New pods find the old data.
	tk.MustRun(t, "", "delete", "pod", "-n", storageNS, "db-0", "db-1")
	tk.MustRun(t, "", "rollout", "status", "-n", storageNS, "statefulset/db", "--timeout=3m")
	checkStoredData(t, tk, "after the pods were deleted")

	// Scale to zero and back: the claims and the data stay.
	tk.MustRun(t, "", "scale", "-n", storageNS, "statefulset/db", "--replicas=0")
	framework.Eventually(t, 2*time.Minute, "db scaled to 0", func() (bool, string) {
		r := tk.Run("", "get", "pods", "-n", storageNS, "-l", "app=db", "-o", "name")
		return r.Err == nil && strings.TrimSpace(r.Stdout) == "", r.Stdout + r.Stderr
	})
	assert.Len(t, strings.Fields(admin.MustRun(t, "", "get", "pvc", "-n", tn.workloads, "-o", "name")), 2, "the host claims outlive the pods")
	tk.MustRun(t, "", "scale", "-n", storageNS, "statefulset/db", "--replicas=2")
	tk.MustRun(t, "", "rollout", "status", "-n", storageNS, "statefulset/db", "--timeout=3m")
	checkStoredData(t, tk, "after a scale to 0 and back")

	// A resize: the class allows expansion, so the host claim asks for it.
	tk.MustRun(t, "", "patch", "pvc", "-n", storageNS, "data-db-0", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	framework.Eventually(t, time.Minute, "the host claim resized", func() (bool, string) {
		r := admin.Run("", "get", "pvc", "-n", tn.workloads, names.Host(storageNS, "data-db-0"), "-o", "jsonpath={.spec.resources.requests.storage}")
		return r.Err == nil && r.Stdout == "2Gi", r.Stdout + r.Stderr
	})
	// The tenant's expand controller leaves the volume to an external
	// resizer (the syncer) instead of writing the PV's capacity itself.
	framework.Eventually(t, time.Minute, "the tenant expand controller waiting for the syncer", func() (bool, string) {
		r := tk.Run("", "get", "events", "-n", storageNS, "--field-selector", "involvedObject.name=data-db-0,reason=ExternalExpanding", "-o", "name")
		return r.Err == nil && strings.TrimSpace(r.Stdout) != "", r.Stdout + r.Stderr
	})
	failed := tk.MustRun(t, "", "get", "events", "-n", storageNS, "--field-selector", "involvedObject.name=data-db-0,reason=VolumeResizeFailed", "-o", "name")
	assert.Empty(t, failed, "no resize of the tenant PV by the tenant's controllers")
	hostCap := admin.MustRun(t, "", "get", "pv", admin.MustRun(t, "", "get", "pvc", "-n", tn.workloads, names.Host(storageNS, "data-db-0"), "-o", "jsonpath={.spec.volumeName}"),
		"-o", "jsonpath={.spec.capacity.storage}")
	tenantCap := tk.MustRun(t, "", "get", "pv", tk.MustRun(t, "", "get", "pvc", "-n", storageNS, "data-db-0", "-o", "jsonpath={.spec.volumeName}"),
		"-o", "jsonpath={.spec.capacity.storage}")
	assert.Equal(t, hostCap, tenantCap, "the tenant PV's capacity is the host volume's")

	// A claim that is deleted takes its host claim and both PVs.
	tk.MustRun(t, claim("scratch", ""), "create", "-f", "-")
	tk.MustRun(t, `apiVersion: v1
kind: Pod
metadata: {name: scratch, namespace: store}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: capn.dev/capn-testserver:dev, args: [serve], volumeMounts: [{name: d, mountPath: /d}], resources: {limits: {cpu: 50m, memory: 32Mi}}}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: scratch}}]
`, "create", "-f", "-")
	tk.MustRun(t, "", "wait", "-n", storageNS, "pod/scratch", "--for=condition=Ready", "--timeout=2m")
	hostPV := admin.MustRun(t, "", "get", "pvc", "-n", tn.workloads, names.Host(storageNS, "scratch"), "-o", "jsonpath={.spec.volumeName}")
	require.NotEmpty(t, hostPV)
	tenantPV := tk.MustRun(t, "", "get", "pvc", "-n", storageNS, "scratch", "-o", "jsonpath={.spec.volumeName}")
	tk.MustRun(t, "", "delete", "pod,pvc", "-n", storageNS, "scratch")
	framework.Eventually(t, 2*time.Minute, "the deleted claim's volumes gone on both sides", func() (bool, string) {
		h := admin.Run("", "get", "pv", hostPV, "-o", "name")
		v := tk.Run("", "get", "pv", tenantPV, "-o", "name")
		return strings.Contains(h.Stderr, "NotFound") && strings.Contains(v.Stderr, "NotFound"), h.Stdout + h.Stderr + v.Stdout + v.Stderr
	})
	return fmt.Sprintf("%s: StatefulSet(2) with a 1Gi claim each, apply -> rolled out %s", tn.name, ready.Round(time.Millisecond))
}

// checkStoredData waits for the StatefulSet's pods and checks each reads
// its own first value from its volume.
func checkStoredData(t *testing.T, tk framework.Kubectl, when string) {
	t.Helper()
	for _, pod := range []string{"db-0", "db-1"} {
		framework.Eventually(t, 3*time.Minute, pod+" reads its volume "+when, func() (bool, string) {
			r := tk.Run("", "exec", "-n", storageNS, pod, "--", "capn-testserver", "cat", "/data/id")
			return r.Err == nil && r.Stdout == pod, r.Stdout + r.Stderr
		})
	}
}
