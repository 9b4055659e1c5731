package builders

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// Node join arrived with template revision 3. A workload that runs at
// revision 2 must render byte for byte as it did before, so upgrading capn
// restarts no tenant apiserver to add it: the file is the "minimal" golden
// output's workloads and ConfigMaps from the release before revision 3.
func TestRevision2RendersAsBefore(t *testing.T) {
	before, err := os.ReadFile("testdata/legacy/minimal-workloads-revision-2.yaml")
	require.NoError(t, err)
	_, before, _ = bytes.Cut(before, []byte("Not rewritten by -update.\n"))
	nc := decodeNestedCluster(t, "testdata/minimal/input.yaml")
	p := defaultParams
	p.Revisions = TemplateRevisions{}
	for _, c := range v1alpha1.Components() {
		p.Revisions[c] = 2
	}
	got := render(t, nc, p, podTemplateObjects(t, nc, p))
	if !bytes.Equal(before, got) {
		t.Errorf("revision 2 renders differently than before revision 3 existed:\n%s", firstDiff(before, got))
	}
}

// podTemplateObjects are what a pod of the control plane reads at start:
// the workloads and the ConfigMaps they mount.
func podTemplateObjects(t *testing.T, nc *v1alpha1.NestedCluster, p Params) []Object {
	t.Helper()
	all, err := All(nc, p)
	require.NoError(t, err)
	var objs []Object
	for _, o := range all {
		switch o.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet, *corev1.ConfigMap:
			objs = append(objs, o)
		}
	}
	return objs
}

// From revision 3 the apiserver accepts bootstrap tokens and anonymous
// reads of cluster-info; before, neither.
func TestNodeJoinFromRevision3(t *testing.T) {
	nc := decodeNestedCluster(t, "testdata/minimal/input.yaml")
	for rev, want := range map[int]bool{1: false, 2: false, 3: true} {
		p := defaultParams
		p.Revisions = TemplateRevisions{v1alpha1.ComponentAPIServer: rev}
		objs, err := All(nc, p)
		require.NoError(t, err)
		var dep *appsv1.Deployment
		var cm *corev1.ConfigMap
		for _, o := range objs {
			switch w := o.(type) {
			case *appsv1.Deployment:
				if w.Name == provisioner.APIServerName {
					dep = w
				}
			case *corev1.ConfigMap:
				if w.Name == provisioner.APIServerConfigName {
					cm = w
				}
			}
		}
		require.NotNil(t, dep)
		require.NotNil(t, cm)
		args := dep.Spec.Template.Spec.Containers[0].Args
		assert.Equal(t, want, slices.Contains(args, "--enable-bootstrap-token-auth=true"), "revision %d: args %v", rev, args)
		var config string
		for _, v := range cm.Data {
			config = v
		}
		assert.Equal(t, want, strings.Contains(config, "- path: /api/v1/namespaces/kube-public/configmaps/cluster-info\n"), "revision %d:\n%s", rev, config)
		assert.Equal(t, want, SupportsJoin(dep), "revision %d", rev)
	}
}
