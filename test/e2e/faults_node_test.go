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
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

// testEtcdPodLost deletes the etcd pod of tenant name, whose etcd keeps
// its data in the pod (EmptyDir or Memory): the replacement starts empty,
// the tenant's RBAC bootstrap with it. capn must notice (the bootstrap
// record is tied to the etcd pods) and bootstrap again, without a capn
// restart, so that a fresh kubeconfig works and the tenant stores objects
// again. It returns how long that took.
func testEtcdPodLost(t *testing.T, admin, k framework.Kubectl, kubectl, name string) string {
	t.Helper()
	ns := mgmtNamespace(t, admin, name)
	selector := v1alpha1.ComponentLabel + "=" + v1alpha1.ComponentEtcd
	uids := func() string {
		return admin.MustRun(t, "", "get", "pods", "-n", ns, "-l", selector, "-o", "jsonpath={.items[*].metadata.uid}")
	}
	before := uids()
	require.NotEmpty(t, before)
	// The recorder folds repeats of one Event into its count.
	bootstraps := func() int {
		out := k.MustRun(t, "", "get", "events", "--field-selector", "involvedObject.name="+name+",reason=TenantBootstrapped", "-o", "jsonpath={.items[*].count}")
		n := 0
		for _, f := range strings.Fields(out) {
			c, err := strconv.Atoi(f)
			require.NoError(t, err)
			n += c
		}
		return n
	}
	bootstrapsBefore := bootstraps()
	lost := time.Now()
	admin.MustRun(t, "", "delete", "pods", "-n", ns, "-l", selector, "--wait=false")
	framework.Eventually(t, 2*time.Minute, name+"'s etcd replaced", func() (bool, string) {
		now := uids()
		return now != "" && now != before, now
	})
	framework.Eventually(t, 4*time.Minute, name+" Ready again with its bootstrap redone", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="TenantBootstrapped")].lastTransitionTime}`)
		return r.Err == nil && strings.HasPrefix(r.Stdout, "True ") && bootstraps() > bootstrapsBefore, fmt.Sprintf("%s%s; TenantBootstrapped events %d", r.Stdout, r.Stderr, bootstraps())
	})
	tk := framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
	var out string
	framework.Eventually(t, 2*time.Minute, name+" stores objects again", func() (bool, string) {
		r := tk.Run("", "create", "configmap", "after-etcd-loss", "-n", "default")
		out = r.Stdout + r.Stderr
		return r.Err == nil || strings.Contains(out, "AlreadyExists"), out
	})
	assert.Equal(t, "yes", strings.TrimSpace(tk.MustRun(t, "", "auth", "can-i", "*", "*")), "alice is the tenant's admin again")
	// The tenant's own controllers work again: kube-apiserver's bootstrap
	// objects (the system: ClusterRoles and bindings kube-controller-manager
	// needs) were lost with the data, and only a restarted apiserver writes
	// them again. A Deployment gets its ReplicaSet only if kcm may act.
	tk.MustRun(t, "", "create", "deployment", "after-etcd-loss", "-n", "default", "--image=registry.k8s.io/pause:3.10")
	framework.Eventually(t, 2*time.Minute, name+"'s kube-controller-manager acts again", func() (bool, string) {
		r := tk.Run("", "get", "replicasets", "-n", "default", "-l", "app=after-etcd-loss", "-o", "name")
		return r.Err == nil && strings.TrimSpace(r.Stdout) != "", r.Stdout + r.Stderr
	})
	roles := tk.MustRun(t, "", "get", "clusterrole", "system:kube-controller-manager", "-o", "name")
	assert.Equal(t, "clusterrole.rbac.authorization.k8s.io/system:kube-controller-manager", strings.TrimSpace(roles))
	tk.MustRun(t, "", "delete", "deployment", "after-etcd-loss", "-n", "default")
	return fmt.Sprintf("%s: etcd pod lost -> Ready with the control plane restarted, the bootstrap redone, a write accepted and kcm acting %s", name, time.Since(lost).Round(time.Millisecond))
}

// testRootDeleted deletes tenant name's cluster CA by hand. capn
// must not carry on silently: it generates a new CA (the only way back to
// a working control plane), says so with a Warning Event, rolls the
// components onto it, and bootstraps the tenant again; a kubeconfig issued
// before no longer works, a fresh one does.
func testRootDeleted(t *testing.T, admin, k framework.Kubectl, kubectl, name string) string {
	t.Helper()
	ns := mgmtNamespace(t, admin, name)
	old := framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
	old.MustRun(t, "", "get", "--raw", "/readyz")
	warnings := func() string {
		return k.MustRun(t, "", "get", "events", "--field-selector", "involvedObject.name="+name+",reason=RootsRegenerated", "-o", "jsonpath={.items[*].message}")
	}
	require.Empty(t, warnings())
	deleted := time.Now()
	// The cluster CA's two keys, out of the roots Secret it shares with
	// the other CAs (provisioner.SecretPKIRoots).
	admin.MustRun(t, "", "patch", "secret", provisioner.SecretPKIRoots, "-n", ns, "--type=json", "-p",
		`[{"op":"remove","path":"/data/`+provisioner.RootKeyCACert+`"},{"op":"remove","path":"/data/`+provisioner.RootKeyCAKey+`"}]`)
	framework.Eventually(t, time.Minute, "a Warning Event about the regenerated CA", func() (bool, string) {
		w := warnings()
		return strings.Contains(w, provisioner.SecretCA) && strings.Contains(w, "no longer work"), w
	})
	var fresh framework.Kubectl
	framework.Eventually(t, 4*time.Minute, name+" usable again with a fresh kubeconfig", func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if r.Err != nil || r.Stdout != "True" {
			return false, "Ready " + r.Stdout + r.Stderr
		}
		fresh = framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, "", name, "alice")}
		can := fresh.Run("", "auth", "can-i", "*", "*")
		return strings.TrimSpace(can.Stdout) == "yes", can.Stdout + can.Stderr
	})
	usable := time.Since(deleted)
	r := old.Run("", "get", "--raw", "/readyz")
	assert.Error(t, r.Err, "a kubeconfig signed by the lost CA still works: %s", r.Stdout)
	return fmt.Sprintf("%s: cluster CA Secret deleted -> Warning Event, and usable with a fresh kubeconfig %s", name, usable.Round(time.Millisecond))
}

// testDeleteWhileProvisioning deletes a NestedCluster right after its
// create, while capn is still building its control plane: nothing of it
// may stay behind (namespaces, the cluster-scoped syncer binding).
func testDeleteWhileProvisioning(t *testing.T, admin, k framework.Kubectl) string {
	t.Helper()
	const name = "short-lived"
	k.MustRun(t, "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: "+name+"\n", "create", "-f", "-")
	var ns string
	framework.Eventually(t, time.Minute, "capn starts provisioning "+name, func() (bool, string) {
		r := k.Run("", "get", "nc", name, "-o", "jsonpath={.metadata.finalizers}")
		return r.Err == nil && strings.Contains(r.Stdout, v1alpha1.ProvisionerFinalizer), r.Stdout + r.Stderr
	})
	ns = mgmtNamespace(t, admin, name)
	uid := k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.metadata.uid}")
	return fmt.Sprintf("%s: deleted while provisioning -> everything gone %s", name, deleteAndWaitGone(t, admin, k, name, ns, uid).Round(time.Millisecond))
}

// deleteAndWaitGone deletes NestedCluster name and waits until it, its
// management namespace ns and everything labelled with its uid are gone;
// it returns how long that took.
func deleteAndWaitGone(t *testing.T, admin, k framework.Kubectl, name, ns, uid string) time.Duration {
	t.Helper()
	deleted := time.Now()
	k.MustRun(t, "", "delete", "nc", name, "--wait=false")
	framework.Eventually(t, 3*time.Minute, name+" and its namespaces gone", func() (bool, string) {
		nc := k.Run("", "get", "nc", name, "-o", "name")
		left := admin.MustRun(t, "", "get", "namespaces,clusterrolebindings", "-l", provisioner.OwnerUIDLabel+"="+uid, "-o", "name")
		nsLeft := admin.Run("", "get", "namespace", ns, "-o", "name")
		return nc.Err != nil && strings.TrimSpace(left) == "" && nsLeft.Err != nil, nc.Stdout + left + nsLeft.Stdout
	})
	return time.Since(deleted)
}

// testDeleteDuringUpgrade deletes tenant name while its upgrade runs: the
// finalizer must not wait for the upgrade, and nothing may be left.
func testDeleteDuringUpgrade(t *testing.T, e *upgradeEnv, name string) string {
	t.Helper()
	e.create(t, upgradeManifest(name, "v1.36.3", 1), name)
	ns := mgmtNamespace(t, e.admin, name)
	uid := e.k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.metadata.uid}")
	out, errOut, err := e.nested(time.Minute, "upgrade", name, "--to", "v1.37.2")
	require.NoError(t, err, "kubectl nested upgrade: %s%s", out, errOut)
	framework.Eventually(t, 2*time.Minute, name+" Upgrading", func() (bool, string) {
		r := e.k.Run("", "get", "nc", name, "-o", "jsonpath={.status.phase} {.status.upgrade.component}")
		return r.Err == nil && strings.HasPrefix(r.Stdout, string(v1alpha1.PhaseUpgrading)+" "), r.Stdout + r.Stderr
	})
	step := e.k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.status.upgrade.component}")
	gone := deleteAndWaitGone(t, e.admin, e.k, name, ns, uid)
	return fmt.Sprintf("%s: deleted while Upgrading (at the %s step) -> everything gone %s", name, step, gone.Round(time.Millisecond))
}

// testAPIServerKilledDuringUpgrade force-deletes tenant name's
// kube-apiserver pod while the upgrade is at that step: the upgrade must
// still finish in order, with one workload per component and the status
// of a completed upgrade, and the tenant must answer at the new version.
func testAPIServerKilledDuringUpgrade(t *testing.T, e *upgradeEnv, name string) string {
	t.Helper()
	e.create(t, upgradeManifest(name, "v1.36.3", 1), name)
	ns := mgmtNamespace(t, e.admin, name)
	apiservers := "-l" + v1alpha1.ComponentLabel + "=" + v1alpha1.ComponentAPIServer
	out, errOut, err := e.nested(time.Minute, "upgrade", name, "--to", "v1.37.2")
	require.NoError(t, err, "kubectl nested upgrade: %s%s", out, errOut)
	framework.Eventually(t, 3*time.Minute, name+"'s upgrade at the kube-apiserver step, its new pod created", func() (bool, string) {
		step := e.k.MustRun(t, "", "get", "nc", name, "-o", "jsonpath={.status.upgrade.component}")
		images := e.admin.MustRun(t, "", "get", "pods", "-n", ns, apiservers, "-o", "jsonpath={.items[*].spec.containers[0].image}")
		return step == v1alpha1.ComponentAPIServer && strings.Contains(images, ":v1.37.2"), step + " " + images
	})
	killed := time.Now()
	e.admin.MustRun(t, "", "delete", "pods", "-n", ns, apiservers, "--grace-period=0", "--force", "--wait=false")
	framework.Eventually(t, 6*time.Minute, name+"'s upgrade finished after the kill", func() (bool, string) {
		r := e.k.Run("", "get", "nc", name, "-o", "jsonpath={.status.phase} {.status.upgrade.finishedAt}")
		return r.Err == nil && strings.HasPrefix(r.Stdout, "Ready ") && len(strings.Fields(r.Stdout)) == 2, r.Stdout + r.Stderr
	})
	finished := time.Since(killed)
	checkUpgradeStatus(t, e.get(t, name), "v1.36.3", "v1.37.2")
	deployments := strings.Fields(e.admin.MustRun(t, "", "get", "deployments", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}"))
	assert.ElementsMatch(t, []string{v1alpha1.ComponentAPIServer, v1alpha1.ComponentControllerManager, v1alpha1.ComponentScheduler, "capn-syncer"},
		deployments, "one workload per component")
	framework.Eventually(t, time.Minute, "one kube-apiserver pod, at v1.37.2", func() (bool, string) {
		images := strings.Fields(e.admin.MustRun(t, "", "get", "pods", "-n", ns, apiservers, "-o", "jsonpath={.items[*].spec.containers[0].image}"))
		return len(images) == 1 && strings.HasSuffix(images[0], ":v1.37.2"), strings.Join(images, " ")
	})
	tk := framework.Kubectl{Bin: e.kubectl, Kubeconfig: tenantKubeconfig(t, e.k, "", name, "alice")}
	assert.Equal(t, "v1.37.2", versionOf(t, tk))
	return fmt.Sprintf("%s: kube-apiserver force-deleted during its upgrade step -> upgrade finished %s later", name, finished.Round(time.Millisecond))
}
