//go:build e2e

package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/types"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/clusterapi"
	"capn.dev/capn/pkg/versions"
	"capn.dev/capn/test/framework"
)

// capiNS is where the Cluster API e2e's Clusters live; carol may edit there
// (the built-in edit role, with capn's aggregated rights), mallory may only
// write NestedControlPlanes.
const capiNS = "capi-tenants"

// testClusterAPI drives capn as a Cluster API control-plane provider with
// the real Cluster API manager and clusterctl (v1.14.2, built from the
// module proxy, run as a host process against the same management cluster):
// a Cluster with a NestedControlPlane, scale, an ordered upgrade, pause, the
// admission policy, a ClusterClass, and deletion that leaves nothing.
func testClusterAPI(t *testing.T, c *framework.Cluster, admin framework.Kubectl) {
	capi := c.StartClusterAPI(t, framework.ClusterAPIOptions{
		Manager: env(t, "CAPI_MANAGER"), Clusterctl: env(t, "CLUSTERCTL"), ModuleDir: env(t, "CAPI_MODULE_DIR")})
	admin.MustRun(t, "", "apply", "--server-side", "-k", repoFile(t, "artifacts/deploy/clusterapi"))
	// The policy's CEL is type-checked against the CRD schema: a field path
	// that does not exist would only show here, as a warning.
	framework.Eventually(t, time.Minute, "the admission policy type-checked", func() (bool, string) {
		r := admin.Run("", "get", "validatingadmissionpolicy", "capn-nestedcontrolplane-author", "-o", "jsonpath={.status.typeChecking}")
		return r.Err == nil && r.Stdout != "" && !strings.Contains(r.Stdout, "expressionWarnings"), r.Stdout + r.Stderr
	})

	admin.MustRun(t, "", "create", "namespace", capiNS)
	admin.MustRun(t, "", "create", "rolebinding", "carol-edit", "--clusterrole=edit", "--user=carol", "-n", capiNS)
	admin.MustRun(t, "", "create", "role", "ncp-only", "--verb=create,get,list", "--resource=nestedcontrolplanes.controlplane.cluster.x-k8s.io", "-n", capiNS)
	admin.MustRun(t, "", "create", "rolebinding", "mallory-ncp", "--role=ncp-only", "--user=mallory", "-n", capiNS)
	k := admin
	k.Namespace = capiNS
	carol := []string{"--as=carol"}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, kind := range []string{"clusters.cluster.x-k8s.io", "nestedcontrolplanes", "nestedclusters", "nestedinfraclusters"} {
			t.Logf("%s:\n%s", kind, k.Run("", "get", kind, "-o", "yaml").Stdout)
		}
		t.Logf("capn's provider log:\n%s", admin.Run("", "logs", "-n", "capn-system", "deploy/capn-apiserver", "--tail=2000").Stdout)
	})

	older, newest := versions.Supported[0].Default, versions.Default()

	t.Run("author may not create NestedClusters", func(t *testing.T) {
		out := k.MustFail(t, ncpManifest("sneaky", older, ""), "--as=mallory", "create", "-f", "-")
		assert.Contains(t, out, "mallory may not create nestedclusters.capn.dev in namespace "+capiNS)
		k.MustFail(t, "", "get", "nestedcluster", "sneaky")
	})

	// A Cluster that names a NestedControlPlane and a NestedInfraCluster
	// carol writes, with no data plane (the ClusterClass one below has the
	// default Shared one). The infrastructure is optional in the v1beta2
	// contract, but Cluster API v1.14.2 reports InfrastructureReady Unknown
	// (InternalError) for a Cluster without one, so it never is Available.
	admin.MustRun(t, clusterManifest("direct"), "create", "-n", capiNS, "-f", "-")
	k.MustRun(t, "apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1\nkind: NestedInfraCluster\nmetadata: {name: direct}\nspec: {}\n",
		append(carol, "create", "-f", "-")...)
	k.MustRun(t, ncpManifest("direct", older, "  nestedCluster:\n    dataPlane: {mode: None}\n"), append(carol, "create", "-f", "-")...)
	waitClusterAvailable(t, k, "direct")
	out, err := capi.Clusterctl(t, "describe", "cluster", "direct", "-n", capiNS)
	require.NoError(t, err, out)
	t.Logf("clusterctl describe cluster direct:\n%s", out)
	assert.Regexp(t, `Cluster `+capiNS+`/direct .*True\s+Available`, out)
	assert.Regexp(t, `NestedControlPlane `+capiNS+`/direct, `+older+`\s+1\s+1\s+1\s+True\s+AllComponentsAvailable`, out)
	assert.Regexp(t, `NestedInfraCluster `+capiNS+`/direct\s+True\s+Provisioned`, out)

	t.Run("kubeconfig Secret", func(t *testing.T) {
		kc := capiKubeconfig(t, k, "direct")
		tenant := framework.Kubectl{Bin: k.Bin, Kubeconfig: kc}
		assert.Contains(t, tenant.MustRun(t, "", "get", "ns"), "kube-system")
		assert.Equal(t, "cluster.x-k8s.io/secret", k.MustRun(t, "", "get", "secret", "direct-kubeconfig", "-o", "jsonpath={.type}"))
		assert.Equal(t, "capn:cluster-api", strings.TrimSpace(tenant.MustRun(t, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")))
	})

	t.Run("scale", func(t *testing.T) {
		k.MustRun(t, "", append(carol, "scale", "nestedcontrolplane", "direct", "--replicas=2")...)
		framework.Eventually(t, 3*time.Minute, "2 ready apiservers", func() (bool, string) {
			nc := k.Run("", "get", "nestedcluster", "direct", "-o", "jsonpath={.spec.apiServer.replicas}")
			ready := k.Run("", "get", "ncp", "direct", "-o", "jsonpath={.status.readyReplicas}")
			return nc.Stdout == "2" && ready.Stdout == "2", "nc " + nc.Stdout + " ncp ready " + ready.Stdout
		})
	})

	t.Run("pause", func(t *testing.T) {
		admin.MustRun(t, "", "patch", "cluster.cluster.x-k8s.io", "direct", "-n", capiNS, "--type=merge", "-p", `{"spec":{"paused":true}}`)
		framework.Eventually(t, time.Minute, "Paused", func() (bool, string) {
			r := k.Run("", "get", "ncp", "direct", "-o", `jsonpath={.status.conditions[?(@.type=="Paused")].status}`)
			return r.Stdout == "True", r.Stdout
		})
		k.MustRun(t, "", append(carol, "scale", "nestedcontrolplane", "direct", "--replicas=1")...)
		gen := k.MustRun(t, "", "get", "ncp", "direct", "-o", "jsonpath={.metadata.generation}")
		// capn saw the new generation (and still said Paused) without
		// touching the NestedCluster.
		framework.Eventually(t, time.Minute, "generation "+gen+" observed while paused", func() (bool, string) {
			r := k.Run("", "get", "ncp", "direct", "-o", `jsonpath={.status.observedGeneration}`)
			return r.Stdout == gen, r.Stdout
		})
		assert.Equal(t, "2", k.MustRun(t, "", "get", "nestedcluster", "direct", "-o", "jsonpath={.spec.apiServer.replicas}"))
		admin.MustRun(t, "", "patch", "cluster.cluster.x-k8s.io", "direct", "-n", capiNS, "--type=merge", "-p", `{"spec":{"paused":false}}`)
		framework.Eventually(t, time.Minute, "scaled after unpause", func() (bool, string) {
			r := k.Run("", "get", "nestedcluster", "direct", "-o", "jsonpath={.spec.apiServer.replicas}")
			return r.Stdout == "1", r.Stdout
		})
	})

	t.Run("upgrade", func(t *testing.T) {
		k.MustRun(t, "", append(carol, "patch", "ncp", "direct", "--type=merge", "-p", `{"spec":{"version":"`+newest+`"}}`)...)
		framework.Eventually(t, 6*time.Minute, "upgraded to "+newest, func() (bool, string) {
			v := k.Run("", "get", "ncp", "direct", "-o", "jsonpath={.status.version}")
			avail := k.Run("", "get", "ncp", "direct", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return v.Stdout == newest && avail.Stdout == "True", v.Stdout + " " + avail.Stdout
		})
		steps := k.MustRun(t, "", "get", "nestedcluster", "direct", "-o", "jsonpath={.status.upgrade.steps[*].component}")
		assert.Equal(t, "kube-apiserver kube-controller-manager kube-scheduler", steps, "the ordered upgrade ran")
		waitClusterAvailable(t, k, "direct")
	})

	t.Run("ClusterClass", func(t *testing.T) {
		admin.MustRun(t, classManifest, "apply", "--server-side", "-n", capiNS, "-f", "-")
		admin.MustRun(t, topologyCluster("classy", newest), "create", "-n", capiNS, "-f", "-")
		waitClusterAvailable(t, k, "classy")
		ncp := k.MustRun(t, "", "get", "ncp", "-l", clusterapi.ClusterNameLabel+"=classy", "-o", "jsonpath={.items[0].metadata.name}")
		assert.Equal(t, newest, k.MustRun(t, "", "get", "nestedcluster", ncp, "-o", "jsonpath={.spec.version}"))
		tenant := framework.Kubectl{Bin: k.Bin, Kubeconfig: capiKubeconfig(t, k, "classy")}
		assert.Contains(t, tenant.MustRun(t, "", "get", "ns"), "kube-system")
	})

	t.Run("delete leaves nothing", func(t *testing.T) {
		var namespaces []string
		for _, name := range strings.Fields(k.MustRun(t, "", "get", "nestedcluster", "-o", "jsonpath={.items[*].metadata.name}")) {
			nc := &v1alpha1.NestedCluster{}
			nc.Namespace, nc.Name = capiNS, name
			nc.UID = types.UID(k.MustRun(t, "", "get", "nestedcluster", name, "-o", "jsonpath={.metadata.uid}"))
			namespaces = append(namespaces, provisioner.ManagementNamespace(nc), provisioner.WorkloadNamespace(nc))
		}
		require.NotEmpty(t, namespaces)
		admin.MustRun(t, "", "delete", "cluster.cluster.x-k8s.io", "--all", "-n", capiNS, "--timeout=5m")
		for _, kind := range []string{"nestedcontrolplanes.controlplane.cluster.x-k8s.io", "nestedclusters.capn.dev", "nestedinfraclusters.infrastructure.cluster.x-k8s.io"} {
			assert.Empty(t, strings.TrimSpace(k.MustRun(t, "", "get", kind, "-o", "name")), kind)
		}
		assert.Empty(t, strings.TrimSpace(k.MustRun(t, "", "get", "secret", "-l", clusterapi.ClusterNameLabel, "-o", "name")))
		framework.Eventually(t, 2*time.Minute, "management namespaces gone", func() (bool, string) {
			r := admin.Run("", append([]string{"get", "ns", "--ignore-not-found", "-o", "name"}, namespaces...)...)
			return r.Err == nil && strings.TrimSpace(r.Stdout) == "", r.Stdout + r.Stderr
		})
	})
}

func clusterManifest(name string) string {
	return "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: " + name + "\nspec:\n" +
		"  controlPlaneRef:\n    apiGroup: controlplane.cluster.x-k8s.io\n    kind: NestedControlPlane\n    name: " + name + "\n" +
		"  infrastructureRef:\n    apiGroup: infrastructure.cluster.x-k8s.io\n    kind: NestedInfraCluster\n    name: " + name + "\n"
}

func ncpManifest(name, version, extra string) string {
	return "apiVersion: controlplane.cluster.x-k8s.io/v1alpha1\nkind: NestedControlPlane\nmetadata:\n  name: " + name +
		"\nspec:\n  version: " + version + "\n" + extra
}

const classManifest = `apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: NestedInfraClusterTemplate
metadata: {name: nested}
spec: {template: {spec: {}}}
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
kind: NestedControlPlaneTemplate
metadata: {name: nested}
spec:
  template:
    spec:
      nestedCluster:
        etcd: {managed: {storage: {type: Memory}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata: {name: nested}
spec:
  infrastructure:
    templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1, kind: NestedInfraClusterTemplate, name: nested}
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1alpha1, kind: NestedControlPlaneTemplate, name: nested}
`

func topologyCluster(name, version string) string {
	return "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: " + name + "\nspec:\n  topology:\n" +
		"    classRef: {name: nested}\n    version: " + version + "\n"
}

// waitClusterAvailable waits for Cluster API to call the Cluster's control
// plane initialized and the Cluster Available.
func waitClusterAvailable(t *testing.T, k framework.Kubectl, name string) {
	t.Helper()
	framework.Eventually(t, 5*time.Minute, "Cluster "+name+" ControlPlaneInitialized and Available", func() (bool, string) {
		r := k.Run("", "get", "cluster.cluster.x-k8s.io", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="ControlPlaneInitialized")].status} {.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		return strings.HasPrefix(r.Stdout, "True True"), r.Stdout + r.Stderr
	})
}

// capiKubeconfig writes the <cluster>-kubeconfig Secret's value to a file.
func capiKubeconfig(t *testing.T, k framework.Kubectl, cluster string) string {
	t.Helper()
	b64 := k.MustRun(t, "", "get", "secret", cluster+"-kubeconfig", "-o", "jsonpath={.data.value}")
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), cluster+".kubeconfig")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}
