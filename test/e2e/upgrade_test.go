//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/test/framework"
)

// upgradeEnv is a management cluster on the real node with both tenant
// versions' images loaded and capn deployed with a short upgrade deadline.
type upgradeEnv struct {
	c       *framework.Cluster
	node    *framework.Node
	admin   framework.Kubectl // cluster-scoped
	k       framework.Kubectl // namespace default
	kubectl string
	plugin  string
	capn    *framework.CapnDeployment
}

// nested runs `kubectl nested ARGS` as a user would: kubectl finds the
// plugin on PATH.
func (e *upgradeEnv) nested(timeout time.Duration, args ...string) (string, string, error) {
	return runNested(e.kubectl, e.plugin, e.c.AdminKubeconfig, timeout, append(args, "--namespace=default")...)
}

// create makes a NestedCluster from manifest and waits for Ready.
func (e *upgradeEnv) create(t *testing.T, manifest, name string) time.Duration {
	t.Helper()
	start := time.Now()
	framework.Eventually(t, 30*time.Second, "kubectl create of "+name, func() (bool, string) {
		r := e.k.Run(manifest, "create", "-f", "-")
		return r.Err == nil, r.Stdout + r.Stderr
	})
	e.waitReady(t, name, 5*time.Minute)
	return time.Since(start)
}

func (e *upgradeEnv) waitReady(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	framework.Eventually(t, timeout, "NestedCluster "+name+" Ready", func() (bool, string) {
		r := e.k.Run("", "get", "nc", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.phase}`)
		return r.Err == nil && r.Stdout == "True Ready", r.Stdout + r.Stderr
	})
}

func (e *upgradeEnv) get(t *testing.T, name string) *v1alpha1.NestedCluster {
	t.Helper()
	out := e.k.MustRun(t, "", "get", "nc", name, "-o", "json")
	nc := &v1alpha1.NestedCluster{}
	if err := json.Unmarshal([]byte(out), nc); err != nil {
		t.Fatalf("decoding NestedCluster %s: %v", name, err)
	}
	return nc
}

// jsonpath reads one field of a management object.
func (e *upgradeEnv) jsonpath(t *testing.T, ns, object, path string) string {
	t.Helper()
	return strings.TrimSpace(e.admin.MustRun(t, "", "get", object, "-n", ns, "-o", "jsonpath="+path))
}

func upgradeManifest(name, version string, apiservers int) string {
	return "apiVersion: capn.dev/v1alpha1\nkind: NestedCluster\nmetadata:\n  name: " + name +
		"\nspec:\n  version: " + version + "\n  apiServer:\n    replicas: " + strconv.Itoa(apiservers) + "\n"
}

// testUpgradeOnNode drives issue 5 end to end on the real node of
// TestProvisionerOnNode, once its tenants are gone: an ordered upgrade
// v1.36.3 → v1.37.2 with `kubectl nested upgrade --wait` under continuous
// tenant traffic, the refused changes, per-component scaling, an HPA on
// nestedclusters, and an upgrade that halts Degraded and is rolled back.
// capn runs with --upgrade-step-timeout=60s; alice may edit in default.
func testUpgradeOnNode(t *testing.T, e *upgradeEnv) {
	t.Cleanup(func() {
		if t.Failed() {
			dumpProvisioner(t, e.admin, []tenantCase{{name: "up"}, {name: "stuck"}, {name: "killed"}, {name: "doomed"}})
		}
	})
	framework.Eventually(t, 30*time.Second, "kubectl create of the tenants", func() (bool, string) {
		r := e.k.Run(upgradeManifest("up", "v1.36.3", 2), "create", "-f", "-")
		return r.Err == nil, r.Stdout + r.Stderr
	})
	e.k.MustRun(t, upgradeManifest("stuck", "v1.36.3", 1), "create", "-f", "-")
	e.waitReady(t, "up", 5*time.Minute)
	e.waitReady(t, "stuck", 5*time.Minute)

	ns := mgmtNamespace(t, e.admin, "up")
	etcdUID := e.jsonpath(t, ns, "pod/etcd-0", "{.metadata.uid}")
	etcdImage := e.jsonpath(t, ns, "statefulset/etcd", "{.spec.template.spec.containers[0].image}")
	if min := e.jsonpath(t, ns, "pdb/kube-apiserver", "{.spec.minAvailable}"); min != "1" {
		t.Errorf("kube-apiserver PDB minAvailable %q with 2 replicas, want 1", min)
	}
	kc := tenantKubeconfig(t, e.k, "", "up", "alice")
	tk := framework.Kubectl{Bin: e.kubectl, Kubeconfig: kc}

	// --- the ordered upgrade, under traffic ---
	tr := startTraffic(t, kc)
	framework.Eventually(t, 30*time.Second, "tenant traffic to flow", func() (bool, string) {
		return tr.total.Load()-tr.failed.Load() >= 20, fmt.Sprintf("%d requests, %d failed %v", tr.total.Load(), tr.failed.Load(), tr.errors())
	})
	started := time.Now()
	out, errOut, err := e.nested(12*time.Minute, "upgrade", "up", "--to", "v1.37.2", "--wait")
	took := time.Since(started)
	tr.stop()
	if err != nil {
		t.Fatalf("kubectl nested upgrade --wait: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("kubectl nested upgrade up --to v1.37.2 --wait (%s):\n%s", took.Round(time.Second), out)
	if !strings.Contains(out, "kube-controller-manager") || !strings.Contains(out, "kube-scheduler") {
		t.Errorf("--wait did not report progress per component:\n%s", out)
	}
	total, failed := tr.total.Load(), tr.failed.Load()
	if failed != 0 || total < 100 {
		t.Errorf("tenant traffic during the upgrade: %d requests, %d failed (want >= 100 and 0): %v", total, failed, tr.errors())
	}

	nc := e.get(t, "up")
	steps := checkUpgradeStatus(t, nc, "v1.36.3", "v1.37.2")
	checkPodOrder(t, e, ns)
	if v := versionOf(t, tk); v != "v1.37.2" {
		t.Errorf("tenant /version = %s, want v1.37.2", v)
	}
	if uid := e.jsonpath(t, ns, "pod/etcd-0", "{.metadata.uid}"); uid != etcdUID {
		t.Errorf("etcd pod replaced during the upgrade: uid %s, was %s", uid, etcdUID)
	}
	if img := e.jsonpath(t, ns, "statefulset/etcd", "{.spec.template.spec.containers[0].image}"); img != etcdImage {
		t.Errorf("etcd image changed by the upgrade: %s, was %s", img, etcdImage)
	}
	events := e.k.MustRun(t, "", "get", "events", "--field-selector=involvedObject.name=up", "-o", "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}")
	for _, want := range []string{"UpgradeStarted", "UpgradeStepStarted", "UpgradeStepDone", "UpgradeComplete"} {
		if !strings.Contains(events, want) {
			t.Errorf("no %s Event on NestedCluster up; reasons:\n%s", want, events)
		}
	}

	testRefusedChanges(t, e, "up")
	scaleNumbers := testScaling(t, e, "up", "stuck")
	testHPA(t, e, "up")
	testStuckUpgrade(t, e, "stuck")
	killed := testAPIServerKilledDuringUpgrade(t, e, "killed")
	doomed := testDeleteDuringUpgrade(t, e, "doomed")

	t.Logf("numbers: upgrade v1.36.3 -> v1.37.2 with 2 apiservers: kubectl nested upgrade --wait %s; %s", took.Round(time.Millisecond), steps)
	t.Logf("numbers: tenant traffic during the upgrade: %d requests, %d failed", total, failed)
	t.Logf("numbers: %s", scaleNumbers)
	t.Logf("numbers: %s", killed)
	t.Logf("numbers: %s", doomed)
}
