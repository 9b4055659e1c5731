//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"capn.dev/capn/test/framework"
)

// The stand-in provider's kinds: CRDs in the provider API groups the core
// manager's ClusterRole already covers, labelled with the v1beta2 contract
// version they implement, as a real provider's are. No controller serves
// them; the test plays the provider by writing their status.
const capiTestProviderCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: capntestclusters.infrastructure.cluster.x-k8s.io
  labels: {cluster.x-k8s.io/v1beta2: v1alpha1}
spec:
  group: infrastructure.cluster.x-k8s.io
  scope: Namespaced
  names: {kind: CapnTestCluster, listKind: CapnTestClusterList, plural: capntestclusters, singular: capntestcluster}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: capntestclustertemplates.infrastructure.cluster.x-k8s.io
  labels: {cluster.x-k8s.io/v1beta2: v1alpha1}
spec:
  group: infrastructure.cluster.x-k8s.io
  scope: Namespaced
  names: {kind: CapnTestClusterTemplate, listKind: CapnTestClusterTemplateList, plural: capntestclustertemplates, singular: capntestclustertemplate}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: capntestcontrolplanetemplates.controlplane.cluster.x-k8s.io
  labels: {cluster.x-k8s.io/v1beta2: v1alpha1}
spec:
  group: controlplane.cluster.x-k8s.io
  scope: Namespaced
  names: {kind: CapnTestControlPlaneTemplate, listKind: CapnTestControlPlaneTemplateList, plural: capntestcontrolplanetemplates, singular: capntestcontrolplanetemplate}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

var (
	capiClusters       = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	capiClustersV1B1   = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	capiClusterClasses = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusterclasses"}
	capiTestClusters   = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "capntestclusters"}
	capiTestCTemplates = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Resource: "capntestclustertemplates"}
	capiTestCPTemplate = schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: "v1alpha1", Resource: "capntestcontrolplanetemplates"}
)

// TestClusterAPIManagerOnKubeAPIServer runs Cluster API's real core manager
// and clusterctl (hack/tools/cluster-api) against a control-plane-only
// management cluster through framework.StartClusterAPI, and checks that
// the manager reconciles a Cluster through its infrastructure contract,
// that its webhooks default, validate and convert, that clusterctl
// describes the Cluster, and that a ClusterClass is validated and
// reconciled. A stand-in infrastructure provider (CRDs only; the test
// writes its status) keeps it free of any real infrastructure.
//
// It needs the binaries `make clusterapi-tools` builds, so it is skipped
// unless CAPI_MANAGER is set: run it with `make test-clusterapi`.
func TestClusterAPIManagerOnKubeAPIServer(t *testing.T) {
	if os.Getenv("CAPI_MANAGER") == "" {
		t.Skip("CAPI_MANAGER is not set; run `make test-clusterapi` (builds capi-manager and clusterctl)")
	}
	moduleDir := env(t, "CAPI_MODULE_DIR")
	c := framework.StartCluster(t, clusterOptions(t))
	capi := c.StartClusterAPI(t, framework.ClusterAPIOptions{
		Manager:    env(t, "CAPI_MANAGER"),
		Clusterctl: env(t, "CLUSTERCTL"),
		ModuleDir:  moduleDir,
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	ext, err := apiextensionsclient.NewForConfig(cfg)
	require.NoError(t, err)

	// The build's version stamps: clusterctl reports the module version.
	_, modVersion, _ := strings.Cut(filepath.Base(moduleDir), "@")
	out, err := capi.Clusterctl(t, "version", "-o", "short")
	require.NoError(t, err)
	assert.Equal(t, modVersion, strings.TrimSpace(out), "clusterctl version")

	const ns = "capi-e2e"
	_, err = c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	installCRDs(ctx, t, ext, capiTestProviderCRDs)

	// The webhook refuses a Cluster with nothing to reconcile (the schema
	// allows it).
	_, err = dyn.Resource(capiClusters).Namespace(ns).Create(ctx, mustObj(t, `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: no-refs, namespace: capi-e2e}
spec: {paused: true}
`), metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "one of spec.controlPlaneRef, spec.infrastructureRef or spec.topology must be set")

	// A Cluster on the stand-in infrastructure; the provider has not
	// provisioned it yet.
	_, err = dyn.Resource(capiTestClusters).Namespace(ns).Create(ctx, mustObj(t, `
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: CapnTestCluster
metadata: {name: demo, namespace: capi-e2e}
spec:
  controlPlaneEndpoint: {host: 127.0.0.1, port: 6443}
`), metav1.CreateOptions{})
	require.NoError(t, err)
	created := time.Now()
	_, err = dyn.Resource(capiClusters).Namespace(ns).Create(ctx, mustObj(t, `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: demo, namespace: capi-e2e}
spec:
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: CapnTestCluster, name: demo}
`), metav1.CreateOptions{})
	require.NoError(t, err)

	framework.Eventually(t, 2*time.Minute, "Cluster demo Provisioning and its CapnTestCluster adopted", func() (bool, string) {
		cl, err := dyn.Resource(capiClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		infra, err := dyn.Resource(capiTestClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(cl.Object, "status", "phase")
		owned := false
		for _, o := range infra.GetOwnerReferences() {
			owned = owned || (o.Kind == "Cluster" && o.Name == "demo" && o.UID == cl.GetUID())
		}
		label := infra.GetLabels()["cluster.x-k8s.io/cluster-name"]
		infraReady := condition(cl, "InfrastructureReady")
		return phase == "Provisioning" && owned && label == "demo" && infraReady == "False",
			fmt.Sprintf("phase %q, owned %v, cluster-name label %q, InfrastructureReady %q", phase, owned, label, infraReady)
	})
	cl, err := dyn.Resource(capiClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, cl.GetFinalizers(), "cluster.cluster.x-k8s.io", "the manager's finalizer")

	// The provider reports the infrastructure provisioned.
	infra, err := dyn.Resource(capiTestClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(infra.Object, true, "status", "initialization", "provisioned"))
	_, err = dyn.Resource(capiTestClusters).Namespace(ns).UpdateStatus(ctx, infra, metav1.UpdateOptions{})
	require.NoError(t, err)

	framework.Eventually(t, 2*time.Minute, "Cluster demo Provisioned", func() (bool, string) {
		cl, err := dyn.Resource(capiClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(cl.Object, "status", "phase")
		provisioned, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "infrastructureProvisioned")
		host, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneEndpoint", "host")
		port, _, _ := unstructured.NestedInt64(cl.Object, "spec", "controlPlaneEndpoint", "port")
		infraReady := condition(cl, "InfrastructureReady")
		return phase == "Provisioned" && provisioned && host == "127.0.0.1" && port == 6443 && infraReady == "True",
			fmt.Sprintf("phase %q, infrastructureProvisioned %v, controlPlaneEndpoint %s:%d, InfrastructureReady %q",
				phase, provisioned, host, port, infraReady)
	})
	t.Logf("Cluster demo Provisioned %s after create", time.Since(created).Round(time.Millisecond))

	// The same Cluster as v1beta1, through the conversion webhook.
	old, err := dyn.Resource(capiClustersV1B1).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
	require.NoError(t, err)
	ready, _, _ := unstructured.NestedBool(old.Object, "status", "infrastructureReady")
	assert.True(t, ready, "v1beta1 status.infrastructureReady")
	kind, _, _ := unstructured.NestedString(old.Object, "spec", "infrastructureRef", "kind")
	apiVersion, _, _ := unstructured.NestedString(old.Object, "spec", "infrastructureRef", "apiVersion")
	assert.Equal(t, "CapnTestCluster", kind, "v1beta1 spec.infrastructureRef.kind")
	assert.Equal(t, "infrastructure.cluster.x-k8s.io/v1alpha1", apiVersion, "v1beta1 spec.infrastructureRef.apiVersion")

	out, err = capi.Clusterctl(t, "describe", "cluster", "demo", "-n", ns)
	require.NoError(t, err)
	t.Logf("clusterctl describe cluster demo -n %s:\n%s", ns, out)
	assert.Contains(t, out, "Cluster capi-e2e/demo")
	assert.Contains(t, out, "CapnTestCluster capi-e2e/demo")

	// ClusterClass: the webhook refuses an invalid one and accepts a valid
	// one (ClusterTopology is on), whose template references the manager
	// then reconciles.
	for _, o := range []string{`
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: CapnTestClusterTemplate
metadata: {name: demo, namespace: capi-e2e}
spec: {template: {spec: {}}}
`, `
apiVersion: controlplane.cluster.x-k8s.io/v1alpha1
kind: CapnTestControlPlaneTemplate
metadata: {name: demo, namespace: capi-e2e}
spec: {template: {spec: {}}}
`} {
		obj := mustObj(t, o)
		gvr := capiTestCTemplates
		if obj.GetKind() == "CapnTestControlPlaneTemplate" {
			gvr = capiTestCPTemplate
		}
		_, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	const clusterClass = `
apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata: {name: %s, namespace: capi-e2e}
spec:
  infrastructure:
    templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1, kind: CapnTestClusterTemplate, name: demo}
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1alpha1, kind: CapnTestControlPlaneTemplate, name: demo}
  kubernetesVersions: [%s]
`
	_, err = dyn.Resource(capiClusterClasses).Namespace(ns).Create(ctx, mustObj(t, fmt.Sprintf(clusterClass, "invalid", "not-a-version")), metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version must be a valid semantic version")
	_, err = dyn.Resource(capiClusterClasses).Namespace(ns).Create(ctx, mustObj(t, fmt.Sprintf(clusterClass, "demo", "v1.36.3, v1.37.2")), metav1.CreateOptions{})
	require.NoError(t, err)
	framework.Eventually(t, 2*time.Minute, "ClusterClass demo reconciled", func() (bool, string) {
		cc, err := dyn.Resource(capiClusterClasses).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		refs, vars := condition(cc, "RefVersionsUpToDate"), condition(cc, "VariablesReady")
		return refs == "True" && vars == "True", fmt.Sprintf("RefVersionsUpToDate %q, VariablesReady %q", refs, vars)
	})
	tmpl, err := dyn.Resource(capiTestCTemplates).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
	require.NoError(t, err)
	owners := tmpl.GetOwnerReferences()
	require.Len(t, owners, 1, "the ClusterClass owns its infrastructure template")
	assert.Equal(t, "ClusterClass", owners[0].Kind)

	// The Cluster defaulting webhook, on a Cluster of the class (dry run:
	// no provider would serve its control plane): a version without its v
	// gets one.
	topo, err := dyn.Resource(capiClusters).Namespace(ns).Create(ctx, mustObj(t, `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: topology, namespace: capi-e2e}
spec:
  topology: {classRef: {name: demo}, version: "1.37.2"}
`), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	version, _, _ := unstructured.NestedString(topo.Object, "spec", "topology", "version")
	assert.Equal(t, "v1.37.2", version, "spec.topology.version as the defaulting webhook leaves it")

	// The manager's CRD migrator, with the RBAC production gives it (update
	// and patch on its own CRDs by name), has seen every CRD it migrates
	// (ClusterClass is one while ClusterTopology is on).
	framework.Eventually(t, time.Minute, "the CRD migrator's observed generation on the Cluster API CRDs", func() (bool, string) {
		for _, name := range []string{"clusters.cluster.x-k8s.io", "clusterclasses.cluster.x-k8s.io", "machines.cluster.x-k8s.io"} {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			observed := crd.Annotations["crd-migration.cluster.x-k8s.io/observed-generation"]
			if observed != fmt.Sprint(crd.Generation) {
				return false, fmt.Sprintf("%s: observed generation %q, generation %d", name, observed, crd.Generation)
			}
		}
		return true, ""
	})

	// Deleting the Cluster: the manager deletes its infrastructure and
	// drops its finalizer.
	require.NoError(t, dyn.Resource(capiClusters).Namespace(ns).Delete(ctx, "demo", metav1.DeleteOptions{}))
	framework.Eventually(t, 2*time.Minute, "Cluster demo and its CapnTestCluster gone", func() (bool, string) {
		_, errCl := dyn.Resource(capiClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		_, errInfra := dyn.Resource(capiTestClusters).Namespace(ns).Get(ctx, "demo", metav1.GetOptions{})
		return apierrors.IsNotFound(errCl) && apierrors.IsNotFound(errInfra), fmt.Sprintf("Cluster: %v; CapnTestCluster: %v", errCl, errInfra)
	})
	if exited, err := capi.Manager.Exited(); exited {
		t.Fatalf("the manager exited during the test (%v); its log: %s", err, capi.Manager.Log)
	}
}

// installCRDs creates the CRDs in docs and waits until they are Established.
func installCRDs(ctx context.Context, t *testing.T, ext apiextensionsclient.Interface, docs string) {
	t.Helper()
	var names []string
	for _, d := range strings.Split(docs, "\n---\n") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(d), crd))
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		require.NoError(t, err)
		names = append(names, crd.Name)
	}
	framework.Eventually(t, time.Minute, "CRDs Established", func() (bool, string) {
		for _, n := range names {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return false, n + " not Established"
			}
		}
		return true, ""
	})
}

// mustObj parses one YAML object.
func mustObj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
	return obj
}

// condition is the status of obj's status.conditions entry of type typ
// (metav1.Condition, as Cluster API v1beta2 reports them), or "".
func condition(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
