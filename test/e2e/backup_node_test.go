//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/test/framework"
)

// testBackupRestore is the operator's undo, as a tenant drives it with
// kubectl: back up a running cluster, make a bad change in it, and create
// a new cluster from the backup that has the data as it was. It returns
// the timings for the note.
func testBackupRestore(t *testing.T, admin, k framework.Kubectl, kubectl, name string) string {
	t.Helper()
	tk := framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
	tk.MustRun(t, "", "create", "configmap", "precious", "-n", "default", "--from-literal=answer=42")
	tk.MustRun(t, "", "create", "secret", "generic", "kept", "-n", "default", "--from-literal=token=s3cret")

	// alice has the aggregated edit role: she may back up and restore.
	backupName := name + "-before"
	start := time.Now()
	k.MustRun(t, fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedClusterBackup\nmetadata: {name: %s}\nspec: {clusterName: %s}\n", backupName, name),
		"create", "-f", "-", "--as=alice")
	framework.Eventually(t, 2*time.Minute, "backup "+backupName+" Completed", func() (bool, string) {
		r := k.Run("", "get", "ncb", backupName, "-o", "jsonpath={.status.phase} {.status.message}")
		return r.Err == nil && strings.HasPrefix(r.Stdout, string(v1alpha1.BackupCompleted)), r.Stdout + r.Stderr
	})
	took := time.Since(start)
	keys, err := strconv.Atoi(k.MustRun(t, "", "get", "ncb", backupName, "-o", "jsonpath={.status.keys}"))
	require.NoError(t, err)
	// demo's etcd was lost and rebuilt earlier (etcd pod lost), so it holds
	// what was written since, not a fresh cluster's few hundred keys; the
	// objects themselves are checked after the restore.
	assert.Greater(t, keys, 2)
	assert.Equal(t, k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.metadata.uid}"),
		k.MustRun(t, "", "get", "ncb", backupName, "-o", "jsonpath={.status.clusterUID}"))
	assert.Contains(t, k.MustRun(t, "", "get", "ncb"), backupName, "kubectl get ncb lists it")

	// The bad change.
	tk.MustRun(t, "", "delete", "configmap", "precious", "-n", "default")

	// Refused with the field: a backup that does not exist, and one a
	// viewer names (victor may not restore; RBAC refuses him the create).
	restored := name + "-restored"
	manifest := func(backup string) string {
		return fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata: {name: %s}\nspec: {restoreFrom: {backup: %s}}\n", restored, backup)
	}
	out := k.MustFail(t, manifest("no-such-backup"), "create", "-f", "-", "--as=alice")
	assert.Contains(t, out, "spec.restoreFrom.backup: Not found")
	out = k.MustFail(t, manifest(backupName), "create", "-f", "-", "--as=victor")
	assert.Contains(t, strings.ToLower(out), "forbidden")

	start = time.Now()
	k.MustRun(t, manifest(backupName), "create", "-f", "-", "--as=alice")
	framework.Eventually(t, 5*time.Minute, restored+" Ready", func() (bool, string) {
		r := k.Run("", "get", "nc", restored, "-o", `jsonpath={.status.conditions[?(@.type=="Restored")].status} {.status.conditions[?(@.type=="Ready")].status}`)
		return r.Err == nil && r.Stdout == "True True", r.Stdout + r.Stderr
	})
	ready := time.Since(start)
	msg := k.MustRun(t, "", "get", "nc", restored, "-o", `jsonpath={.status.conditions[?(@.type=="Restored")].message}`)
	assert.Contains(t, msg, fmt.Sprintf("%d keys from NestedClusterBackup %s", keys, backupName))

	rk := framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, "", restored, "alice")}
	assert.Equal(t, "42", rk.MustRun(t, "", "get", "configmap", "precious", "-n", "default", "-o", "jsonpath={.data.answer}"))
	assert.Equal(t, "czNjcmV0", rk.MustRun(t, "", "get", "secret", "kept", "-n", "default", "-o", "jsonpath={.data.token}"))
	// The restored cluster takes writes and runs its controllers: a
	// Deployment gets its ReplicaSet from the restored kcm.
	rk.MustRun(t, "", "create", "deployment", "after-restore", "-n", "default", "--image=registry.k8s.io/pause:3.10")
	framework.Eventually(t, time.Minute, "a ReplicaSet in the restored cluster", func() (bool, string) {
		r := rk.Run("", "get", "replicasets", "-n", "default", "-l", "app=after-restore", "-o", "name")
		return r.Err == nil && strings.TrimSpace(r.Stdout) != "", r.Stdout + r.Stderr
	})
	// The original is untouched by the restore: the bad change stays there.
	r := tk.Run("", "get", "configmap", "precious", "-n", "default")
	assert.Contains(t, r.Stderr, "NotFound")

	// A backup outlives neither its object nor its data: deleting it
	// (its finalizer) removes both.
	k.MustRun(t, "", "delete", "ncb", backupName, "--as=alice", "--timeout=1m")
	restoredNS := mgmtNamespace(t, admin, restored)
	k.MustRun(t, "", "delete", "nc", restored, "--wait=false")
	framework.Eventually(t, 3*time.Minute, "management namespace "+restoredNS+" to be gone", func() (bool, string) {
		r := admin.Run("", "get", "namespace", restoredNS, "-o", "name")
		return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
	})
	return fmt.Sprintf("%s: backup of %d keys Completed %s after create; a cluster restored from it Ready %s after create",
		name, keys, took.Round(time.Millisecond), ready.Round(time.Millisecond))
}
