//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/test/framework"
)

// tenantCase is one NestedCluster of TestProvisionerOnNode.
type tenantCase struct {
	name     string
	manifest string // for kubectl create -f -
	plugin   bool   // fetch the kubeconfig with `kubectl nested`
}

// TestProvisionerOnNode runs capn-apiserver as a pod on a real node with
// the default (pods) provisioner and drives three tenants through their
// whole life as users would: the example NestedCluster (emptyDir etcd), a
// Memory etcd and an external etcd the test runs. Each becomes Ready, hands
// out a kubeconfig to the requesting user, serves as a working cluster
// (namespace, Deployment → ReplicaSet → Pods, scheduler and kcm leases),
// and leaves nothing behind when deleted.
func TestProvisionerOnNode(t *testing.T) {
	kubectl, images := env(t, "KUBECTL"), env(t, "CAPN_IMAGES")
	plugin := env(t, "KUBECTL_NESTED")
	nodeOpts := framework.NodeOptions{Kubelet: env(t, "KUBELET"), KubeProxy: env(t, "KUBE_PROXY"), Images: []string{images}}
	if _, err := os.Stat(images); err != nil {
		t.Fatalf("CAPN_IMAGES: %v (build it with `make images`)", err)
	}
	t.Setenv("KUBECACHEDIR", t.TempDir())
	c := framework.StartCluster(t, clusterOptions(t))
	if c.NodeIP.IsLoopback() {
		t.Fatalf("no non-loopback node IP: kubelet and pods need %s to be a real address", c.NodeIP)
	}
	node := c.StartNode(t, nodeOpts)
	admin := framework.Kubectl{Bin: kubectl, Kubeconfig: c.AdminKubeconfig}
	storage := framework.DeployStorage(t, c, node, admin, repoFile(t, ""))
	// The default args: the provisioner is on unless --provisioner=none.
	// A short orphan grace period, so the tenant-boundary check sees the
	// sweep delete what a break-glass finalizer removal left behind, and a
	// short upgrade step timeout for the halted upgrade (testUpgradeOnNode),
	// and a short activity check for the inactivity sleep (testSleepWake).
	// Tenant apiservers may reach the namespaces where this test runs an
	// external etcd and an etcd pool, as a provider lists its own: under
	// the enforcing NetworkPolicy engine nothing else is reachable.
	capnDep := framework.DeployCapnWith(t, c, node, admin, repoFile(t, ""), framework.CapnDeployOptions{
		ExtraArgs: []string{"--orphan-grace-period=20s", "--orphan-sweep-period=5s", "--upgrade-step-timeout=60s", "--activity-check-interval=5s",
			"--tenant-apiserver-egress-namespaces=" + externalEtcdNS + "," + poolNS}})
	k := admin
	k.Namespace = "default"

	// alice may edit NestedClusters in default (the aggregated edit role),
	// victor may only view them.
	admin.MustRun(t, "", "create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "-n", "default")
	admin.MustRun(t, "", "create", "rolebinding", "victor-view", "--clusterrole=view", "--user=victor", "-n", "default")
	ext := startExternalEtcd(t, c, "default")
	putsBefore := externalEtcdPuts(t, c)

	cases := []tenantCase{
		{name: "demo", plugin: true},
		{name: "mem", manifest: "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: mem\nspec:\n  etcd:\n    managed:\n      storage:\n        type: Memory\n"},
		// ext has no data plane: mode None still works as before.
		{name: "ext", manifest: fmt.Sprintf("apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: ext\nspec:\n  dataPlane: {mode: None}\n  etcd:\n    external:\n      endpoints: [%q]\n      caSecretRef: {name: %s}\n      clientSecretRef: {name: %s}\n",
			ext.Endpoint, ext.CASecret, ext.ClientSecret)},
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpProvisioner(t, admin, cases)
		}
	})

	// Aggregated discovery can trail the APIService's Available condition.
	created := map[string]time.Time{}
	for _, tc := range cases {
		framework.Eventually(t, 30*time.Second, "kubectl create of NestedCluster "+tc.name, func() (bool, string) {
			r := k.Run(tc.manifest, "create", "-f", "-")
			if tc.manifest == "" {
				r = k.Run("", "create", "-f", repoFile(t, "artifacts/examples/nestedcluster.yaml"))
			}
			return r.Err == nil, r.Stdout + r.Stderr
		})
		created[tc.name] = time.Now()
	}

	var mu sync.Mutex
	numbers := map[string]string{}
	t.Run("tenants", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				framework.Eventually(t, 5*time.Minute, "NestedCluster "+tc.name+" Ready=True", func() (bool, string) {
					r := k.Run("", "get", "nc", tc.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.phase}`)
					return r.Err == nil && strings.HasPrefix(r.Stdout, "True "), r.Stdout + r.Stderr
				})
				ready := time.Since(created[tc.name])
				p := ""
				if tc.plugin {
					p = plugin
				}
				tk := framework.Kubectl{Bin: kubectl, Kubeconfig: tenantKubeconfig(t, k, p, tc.name, "alice")}
				mode := v1alpha1.DataPlaneShared
				if tc.name == "ext" {
					mode = v1alpha1.DataPlaneNone
				}
				useTenant(t, tk, "alice", mode)
				mu.Lock()
				numbers[tc.name] = fmt.Sprintf("create->Ready %s, usable %s", ready.Round(time.Millisecond), time.Since(created[tc.name]).Round(time.Millisecond))
				mu.Unlock()
			})
		}
		// Alongside the tenants: image pulls stay on the machine, and a
		// cluster with a missing component image says so.
		t.Run("pulls stay local", func(t *testing.T) {
			t.Parallel()
			checkPullsStayLocal(t, admin, node)
		})
		t.Run("missing image", func(t *testing.T) {
			t.Parallel()
			checkMissingComponentImage(t, k, admin)
		})
		t.Run("tenant boundary", func(t *testing.T) {
			t.Parallel()
			checkTenantBoundary(t, admin, k)
		})
	})
	if t.Failed() {
		return
	}
	// A 60 s join token for JoinOnNode, minted now so that it expires
	// during DataPlaneOnNode rather than while JoinOnNode waits.
	expiring := mintExpiringJoinToken(t, k, "demo")
	// The Shared tenants run workloads on the node (ext has no data
	// plane).
	t.Run("DataPlaneOnNode", func(t *testing.T) {
		testDataPlaneOnNode(t, admin, k, node, "demo", "mem")
	})
	if t.Failed() {
		return
	}
	// A real kubelet joins demo beside its virtual Node (join_test.go).
	t.Run("JoinOnNode", func(t *testing.T) {
		testJoinOnNode(t, admin, k, node, plugin, nodeOpts.Kubelet, "demo", expiring)
	})
	if t.Failed() {
		return
	}

	// Who may ask: a viewer is refused by RBAC, before capn signs anything.
	errOut := k.MustFail(t, `{"apiVersion":"capn.dev/v1alpha1","kind":"NestedClusterKubeconfigRequest"}`,
		"create", "--raw", kubeconfigPath("default", "demo"), "-f", "-", "--as=victor")
	if !strings.Contains(errOut, "Forbidden") && !strings.Contains(errOut, "forbidden") {
		t.Errorf("victor's kubeconfig request: %s, want Forbidden", errOut)
	}
	// The external etcd really holds the ext tenant's data, and no etcd of
	// capn's runs for it.
	if puts := externalEtcdPuts(t, c); puts-putsBefore < 100 {
		t.Errorf("external etcd saw %v puts since the tenant was created, want the tenant's writes (>= 100)", puts-putsBefore)
	}
	extNS := mgmtNamespace(t, admin, "ext")
	if out := admin.MustRun(t, "", "get", "statefulsets,pods", "-n", extNS, "-l", v1alpha1.ComponentLabel+"="+v1alpha1.ComponentEtcd, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("capn runs an etcd for the external-etcd tenant: %s", out)
	}

	rss := tenantRSS(t, c, admin, node, mgmtNamespace(t, admin, "demo"))
	demoEtcdKiB := podsRSS(t, admin, node, mgmtNamespace(t, admin, "demo"))[v1alpha1.ComponentEtcd]
	resync := resyncWrites(t, c, capnDep.ServingCA, k, admin, "demo")
	drift := revertsHandEdit(t, admin, mgmtNamespace(t, admin, "demo"))
	sleep := testSleepWake(t, admin, k, node, plugin, "mem")
	// Faults: a tenant etcd that kept its data in the pod loses it with
	// the pod (EmptyDir: demo; Memory: mem).
	var faults []string
	t.Run("etcd pod lost", func(t *testing.T) {
		for _, name := range []string{"demo", "mem"} {
			faults = append(faults, testEtcdPodLost(t, admin, k, kubectl, name))
		}
	})
	t.Run("cluster CA deleted", func(t *testing.T) {
		faults = append(faults, testRootDeleted(t, admin, k, kubectl, "mem"))
	})
	t.Run("deleted while provisioning", func(t *testing.T) {
		faults = append(faults, testDeleteWhileProvisioning(t, admin, k))
	})
	var restore string
	t.Run("backup and restore", func(t *testing.T) {
		restore = testBackupRestore(t, admin, k, kubectl, "demo")
	})

	namespaces := map[string]string{}
	var onNode []string
	for _, tc := range cases {
		namespaces[tc.name] = mgmtNamespace(t, admin, tc.name)
		onNode = append(onNode, namespaces[tc.name], workloadNamespace(t, admin, tc.name))
	}
	deleted := time.Now()
	for _, tc := range cases {
		k.MustRun(t, "", "delete", "nc", tc.name, "--wait=false")
	}
	for _, tc := range cases {
		ns := namespaces[tc.name]
		framework.Eventually(t, 3*time.Minute, "management namespace "+ns+" to be gone", func() (bool, string) {
			r := admin.Run("", "get", "namespace", ns, "-o", "name")
			return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
		})
		framework.Eventually(t, time.Minute, "NestedCluster "+tc.name+" to be gone", func() (bool, string) {
			r := k.Run("", "get", "nc", tc.name, "-o", "name")
			return r.Err != nil && strings.Contains(r.Stderr, "NotFound"), r.Stdout + r.Stderr
		})
	}
	gone := time.Since(deleted)
	// Red-team finding 4: a host pod deleted with a tenant's grace period
	// (100000 s) kept its container running after the pod object, its
	// namespace and the cluster were gone, because the kubelet finishes
	// a termination with the grace period it started with, and a later
	// force delete of the object does not shorten it. The syncer caps the
	// grace of the delete now; nothing of a deleted cluster runs on.
	framework.Eventually(t, 2*time.Minute, "no container of a deleted cluster running on the node", func() (bool, string) {
		left, err := node.RunningContainersIn(onNode...)
		if err != nil {
			return false, err.Error()
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	// Issue 32: a tenant is released only once its volumes are gone, data
	// and all (mem kept a StatefulSet's two claims to the end).
	pvs := admin.MustRun(t, "", "get", "pv", "-o", `jsonpath={range .items[*]}{.metadata.name}:{.spec.claimRef.namespace} {end}`)
	for _, pv := range strings.Fields(pvs) {
		for _, ns := range onNode {
			if strings.HasSuffix(pv, ":"+ns) {
				t.Errorf("volume %s of a deleted cluster left", pv)
			}
		}
	}
	if left := storage.VolumeDirsOf(onNode...); len(left) > 0 {
		t.Errorf("volume directories of a deleted cluster left on the node: %v", left)
	}
	if out := admin.MustRun(t, "", "get", "namespaces", "-l", provisioner.ManagedByLabel+"="+provisioner.ManagedByValue, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("capn namespaces left after every NestedCluster was deleted: %s", out)
	}
	if out := admin.MustRun(t, "", "get", "clusterrolebindings", "-l", provisioner.ManagedByLabel+"="+provisioner.ManagedByValue, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("syncer ClusterRoleBindings left after every NestedCluster was deleted: %s", out)
	}
	names := make([]string, 0, len(numbers))
	for n := range numbers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("numbers: %s: %s", n, numbers[n])
	}
	t.Logf("numbers: demo idle RSS: %s", rss)
	t.Logf("numbers: resync of Ready demo: %s", resync)
	t.Logf("numbers: a hand edit of kcm's args reverted %s after the patch", drift.Round(time.Millisecond))
	t.Logf("numbers: sleep and wake: %s", sleep)
	for _, l := range faults {
		t.Logf("numbers: %s", l)
	}
	t.Logf("numbers: %s", restore)
	t.Logf("numbers: delete of 3 tenants -> all namespaces gone %s", gone.Round(time.Millisecond))

	// Two tenants on one shared etcd, on the node the others left.
	t.Run("EtcdPool", func(t *testing.T) {
		t.Logf("numbers: etcd pool: %s", testEtcdPool(t, c, admin, k, node, kubectl, demoEtcdKiB))
	})
	if t.Failed() {
		return
	}

	// capn as a Cluster API provider, with Cluster API's own manager on the
	// same management cluster; its Clusters are gone when it ends.
	t.Run("ClusterAPI", func(t *testing.T) { testClusterAPI(t, c, admin) })
	if t.Failed() {
		return
	}

	// The same management cluster, node and capn, now without tenants: one
	// node's start, image import and capn deployment fewer in the suite.
	t.Run("upgrade", func(t *testing.T) {
		testUpgradeOnNode(t, &upgradeEnv{c: c, node: node, admin: admin, k: k, kubectl: kubectl, plugin: plugin, capn: capnDep})
	})
}

// mgmtNamespace is the management namespace of NestedCluster default/name,
// as capn names it: from the cluster's UID (so it must still exist).
func mgmtNamespace(t testing.TB, k framework.Kubectl, name string) string {
	t.Helper()
	return provisioner.ManagementNamespace(nestedClusterID(t, k, name))
}

// nestedClusterID is the NestedCluster default/name as far as the names
// of its namespaces go: its name and UID.
func nestedClusterID(t testing.TB, k framework.Kubectl, name string) *v1alpha1.NestedCluster {
	t.Helper()
	nc := &v1alpha1.NestedCluster{}
	nc.Namespace, nc.Name = "default", name
	nc.UID = types.UID(k.MustRun(t, "", "get", "nc", name, "-n", "default", "-o", "jsonpath={.metadata.uid}"))
	return nc
}

// workloadNamespace is the management namespace where the syncer of the
// NestedCluster default/name runs its tenant pods (Shared mode).
func workloadNamespace(t testing.TB, k framework.Kubectl, name string) string {
	t.Helper()
	return provisioner.WorkloadNamespace(nestedClusterID(t, k, name))
}

// tenantRSS reads each tenant container's resident memory on the node, with
// the same component of the management control plane (a host process
// serving a whole cluster with a node and capn) as the baseline.
func tenantRSS(t *testing.T, c *framework.Cluster, admin framework.Kubectl, node *framework.Node, ns string) string {
	t.Helper()
	baseline := map[string]int{}
	for _, p := range c.Processes {
		if kib, err := framework.RSSKiB(p.PID()); err == nil {
			baseline[p.Name] = kib
		}
	}
	var parts []string
	for component, kib := range podsRSS(t, admin, node, ns) {
		part := fmt.Sprintf("%s %.0f MiB", component, float64(kib)/1024)
		if b := baseline[component]; b > 0 {
			part += fmt.Sprintf(" (%.2fx the management %s's %.0f MiB)", float64(kib)/float64(b), component, float64(b)/1024)
		}
		parts = append(parts, part)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// podsRSS is the resident memory (KiB) of the first container of each pod
// in ns, by the pod's capn.dev/component label.
func podsRSS(t testing.TB, admin framework.Kubectl, node *framework.Node, ns string) map[string]int {
	t.Helper()
	rss := map[string]int{}
	for component, kib := range sampleComponents(t, admin, node, ns, "RSS", func(pid int) (float64, error) {
		kib, err := framework.RSSKiB(pid)
		if err == nil && kib == 0 {
			err = fmt.Errorf("pid %d has no resident memory", pid)
		}
		return float64(kib), err
	}) {
		rss[component] = int(kib)
	}
	return rss
}

// sampleComponents sums read(pid) over the first container of each pod in
// ns, by the pod's capn.dev/component label. A container that restarts
// between the pod list and the read (its listed ID no longer has a
// process) makes the whole sample be taken again, within a deadline: a
// control plane on a cold, slow node may restart a component once while it
// settles, and that is not a failed measurement.
func sampleComponents(t testing.TB, admin framework.Kubectl, node *framework.Node, ns, what string, read func(pid int) (float64, error)) map[string]float64 {
	t.Helper()
	var sample map[string]float64
	framework.Eventually(t, time.Minute, what+" of every component in "+ns, func() (bool, string) {
		pids, err := componentPIDs(admin, node, ns)
		if err != nil {
			return false, err.Error()
		}
		sample = map[string]float64{}
		for component, ps := range pids {
			for _, pid := range ps {
				v, err := read(pid)
				if err != nil {
					return false, fmt.Sprintf("%s %s: %v", component, what, err)
				}
				sample[component] += v
			}
		}
		return true, ""
	})
	return sample
}

// componentPIDs are the host PIDs of the first container of each pod in
// ns, by the pod's capn.dev/component label.
func componentPIDs(admin framework.Kubectl, node *framework.Node, ns string) (map[string][]int, error) {
	r := admin.Run("", "get", "pods", "-n", ns, "--no-headers", "-o",
		"custom-columns=C:.metadata.labels.capn\\.dev/component,ID:.status.containerStatuses[0].containerID")
	if r.Err != nil {
		return nil, fmt.Errorf("list pods in %s: %w: %s", ns, r.Err, r.Stderr)
	}
	pids := map[string][]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("unexpected pod line %q", line)
		}
		pid, err := node.ContainerPID(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s container pid: %w", f[0], err)
		}
		pids[f[0]] = append(pids[f[0]], pid)
	}
	return pids, nil
}

// resyncWrites makes capn sync a Ready, unchanged cluster (a metadata-only
// edit of the NestedCluster is an update event that changes nothing capn
// renders) and checks, on capn's own counters and on every management
// object's resourceVersion, that the sync wrote nothing.
func resyncWrites(t *testing.T, c *framework.Cluster, servingCA *framework.CA, k, admin framework.Kubectl, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := mgmtNamespace(t, admin, name)
	versions := func() string {
		cols := "custom-columns=K:.kind,N:.metadata.name,RV:.metadata.resourceVersion"
		return admin.MustRun(t, "", "get", "namespace", ns, "-o", cols, "--no-headers") +
			// Not the ResourceQuota: kube-controller-manager writes its usage.
			admin.MustRun(t, "", "get", "secrets,configmaps,services,deployments,statefulsets,poddisruptionbudgets,networkpolicies,limitranges",
				"-n", ns, "-o", cols, "--no-headers")
	}
	before := capnMetrics(ctx, t, c, servingCA)
	syncs0 := promLabelled(before, "capn_provisioner_syncs_total", "result", "success")
	writes0, _ := promValue(before, "capn_provisioner_management_writes_total")
	reads0 := managementReads(before)
	rv0 := versions()
	k.MustRun(t, "", "annotate", "nc", name, "e2e.capn.dev/resync="+time.Now().Format("150405.000"), "--overwrite")
	var after string
	framework.Eventually(t, time.Minute, "capn to sync "+name+" after the edit", func() (bool, string) {
		after = capnMetrics(ctx, t, c, servingCA)
		s := promLabelled(after, "capn_provisioner_syncs_total", "result", "success")
		return s > syncs0, fmt.Sprintf("successful syncs %v, was %v", s, syncs0)
	})
	writes1, _ := promValue(after, "capn_provisioner_management_writes_total")
	// The provisioner's health is on /metrics: leader, caches, its queue.
	for _, m := range []string{"capn_provisioner_leader", "capn_provisioner_caches_synced"} {
		if v, ok := promValue(after, m); !ok || v != 1 {
			t.Errorf("%s = %v (found %v), want 1", m, v, ok)
		}
	}
	if _, ok := promSum(after, "workqueue_depth", `name="capn-provisioner"`); !ok {
		t.Error(`no workqueue_depth{name="capn-provisioner"} on /metrics`)
	}
	if writes1 != writes0 {
		t.Errorf("a resync of Ready %s wrote %v times to the management cluster", name, writes1-writes0)
	}
	// Reads come from capn's caches (the live path GETs ~35 objects).
	reads1 := managementReads(after)
	if reads1 != reads0 {
		t.Errorf("a resync of Ready %s sent %v get/list requests to the management apiserver, want 0", name, reads1-reads0)
	}
	rv1 := versions()
	if rv1 != rv0 {
		t.Errorf("management objects changed on resync:\nbefore:\n%s\nafter:\n%s", rv0, rv1)
	}
	syncs1 := promLabelled(after, "capn_provisioner_syncs_total", "result", "success")
	return fmt.Sprintf("%v syncs, %v management writes and %v reads (capn counters), resourceVersions unchanged: %v",
		syncs1-syncs0, writes1-writes0, reads1-reads0, rv1 == rv0)
}

// managementReads sums the provisioner's get and list requests to the
// management apiserver, leader election's Lease renewals aside.
func managementReads(metrics string) float64 {
	n := 0.0
	for _, verb := range []string{"get", "list"} {
		all, _ := promSum(metrics, "capn_provisioner_management_requests_total", `verb="`+verb+`"`)
		leases, _ := promSum(metrics, "capn_provisioner_management_requests_total", `resource="leases",verb="`+verb+`"`)
		n += all - leases
	}
	return n
}

func dumpProvisioner(t *testing.T, admin framework.Kubectl, cases []tenantCase) {
	for _, tc := range cases {
		// By labels: the cluster may be gone already.
		ns := strings.TrimPrefix(strings.TrimSpace(admin.Run("", "get", "namespaces", "-l",
			v1alpha1.ClusterLabel+"="+tc.name+","+provisioner.ClusterNamespaceLabel+"=default,!"+provisioner.WorkloadNamespaceLabel, "-o", "name").Stdout), "namespace/")
		for _, args := range [][]string{
			{"get", "pods", "-n", ns, "-o", "wide"},
			{"describe", "nc", tc.name, "-n", "default"},
			{"get", "events", "-n", ns, "--sort-by=.lastTimestamp"},
		} {
			r := admin.Run("", args...)
			t.Logf("kubectl %s:\n%s%s", strings.Join(args, " "), r.Stdout, r.Stderr)
		}
		pods := admin.Run("", "get", "pods", "-n", ns, "-o", "name")
		for _, p := range strings.Fields(pods.Stdout) {
			r := admin.Run("", "logs", "-n", ns, p, "--all-containers", "--tail=30")
			t.Logf("kubectl logs %s:\n%s%s", p, r.Stdout, r.Stderr)
		}
	}
	r := admin.Run("", "logs", "-n", framework.CapnNamespace, "-l", framework.CapnPodSelector, "--tail=80")
	t.Logf("capn logs:\n%s%s", r.Stdout, r.Stderr)
	r = admin.Run("", "get", "pods", "-n", externalEtcdNS, "-o", "wide")
	t.Logf("external etcd:\n%s%s", r.Stdout, r.Stderr)
}

// revertsHandEdit appends a flag to kube-controller-manager's args the way
// an operator's kubectl patch would (the hash annotation untouched) and
// waits for capn to put its own args back, through its watch on the
// Deployment; it returns how long that took.
func revertsHandEdit(t *testing.T, admin framework.Kubectl, ns string) time.Duration {
	t.Helper()
	args := func() string {
		return admin.MustRun(t, "", "get", "deployment", provisioner.ControllerManagerName, "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	}
	before := args()
	patched := time.Now()
	admin.MustRun(t, "", "patch", "deployment", provisioner.ControllerManagerName, "-n", ns, "--type=json",
		`-p=[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--v=4"}]`)
	framework.Eventually(t, 2*time.Minute, "capn to revert kcm's args", func() (bool, string) {
		got := args()
		return got == before, got
	})
	return time.Since(patched)
}
