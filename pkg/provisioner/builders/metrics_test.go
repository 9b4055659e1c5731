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
	cmdsyncer "capn.dev/capn/pkg/cmd/syncer"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/versions"
)

// The metrics addon arrived with template revision 6. A Shared tenant's
// workloads at revision 5 must render byte for byte as they did before, so
// upgrading capn restarts no syncer to add it: the file is the "shared"
// golden output's workloads and ConfigMaps from the release before
// revision 6.
func TestRevision5RendersAsBefore(t *testing.T) {
	before, err := os.ReadFile("testdata/legacy/shared-workloads-revision-5.yaml")
	require.NoError(t, err)
	_, before, _ = bytes.Cut(before, []byte("Not rewritten by -update.\n"))
	nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
	p := goldenParams["shared"]
	p.Revisions = TemplateRevisions{}
	for _, c := range append(v1alpha1.Components(), v1alpha1.ComponentSyncer) {
		p.Revisions[c] = MetricsTemplateRevision - 1
	}
	got := render(t, nc, p, podTemplateObjects(t, nc, p))
	if !bytes.Equal(before, got) {
		t.Errorf("revision 5 renders differently than before revision 6 existed:\n%s", firstDiff(before, got))
	}
}

// syncerMetrics is what the syncer's template says of the metrics addon:
// its flags (name to value) and whether it exposes the metrics port.
func syncerMetrics(t *testing.T, nc *v1alpha1.NestedCluster, p Params) (map[string]string, bool) {
	t.Helper()
	objs, err := All(nc, p)
	require.NoError(t, err)
	d := find[*appsv1.Deployment](objs, provisioner.SyncerName)
	require.NotNil(t, d)
	c := d.Spec.Template.Spec.Containers[0]
	flags := map[string]string{}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.Contains(name, "metrics") {
			flags[name] = value
		}
	}
	port := slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.ContainerPort == cmdsyncer.KubeletMetricsPort && p.Name == "kubelet-metrics"
	})
	return flags, port
}

func TestSyncerMetricsFlags(t *testing.T) {
	on := func(image string) map[string]string {
		return map[string]string{cmdsyncer.FlagMetricsAddon: "true", cmdsyncer.FlagMetricsImage: image,
			cmdsyncer.FlagKubeletMetricsBindAddress: ":10272"}
	}
	off := map[string]string{cmdsyncer.FlagMetricsAddon: "false", cmdsyncer.FlagKubeletMetricsBindAddress: ":10272"}
	const tenantImage, providerImage = "registry.example/metrics-server:tenant", "registry.example/metrics-server:provider"
	old := MetricsTemplateRevision - 1
	for name, c := range map[string]struct {
		spec      v1alpha1.MetricsSpec
		dpImage   string
		rev       int
		want      map[string]string
		wantPorts bool
	}{
		"default":                   {rev: MetricsTemplateRevision, want: on(versions.MetricsServerImage), wantPorts: true},
		"provider's image":          {dpImage: providerImage, rev: MetricsTemplateRevision, want: on(providerImage), wantPorts: true},
		"tenant's image first":      {spec: v1alpha1.MetricsSpec{Image: tenantImage}, dpImage: providerImage, rev: MetricsTemplateRevision, want: on(tenantImage), wantPorts: true},
		"None":                      {spec: v1alpha1.MetricsSpec{Mode: v1alpha1.MetricsNone}, dpImage: providerImage, rev: MetricsTemplateRevision, want: off, wantPorts: true},
		"older revision":            {rev: old, want: map[string]string{}},
		"older revision, None":      {spec: v1alpha1.MetricsSpec{Mode: v1alpha1.MetricsNone}, rev: old, want: map[string]string{}},
		"older revision, asked for": {spec: v1alpha1.MetricsSpec{Mode: v1alpha1.MetricsServer}, rev: old, want: on(versions.MetricsServerImage), wantPorts: true},
		"older revision, own image": {spec: v1alpha1.MetricsSpec{Image: tenantImage}, rev: old, want: on(tenantImage), wantPorts: true},
	} {
		t.Run(name, func(t *testing.T) {
			nc := decodeNestedCluster(t, "testdata/shared/input.yaml")
			nc.Spec.Metrics = c.spec
			p := goldenParams["shared"]
			p.DataPlane.MetricsImage = c.dpImage
			p.Revisions = TemplateRevisions{v1alpha1.ComponentSyncer: c.rev}
			flags, port := syncerMetrics(t, nc, p)
			assert.Equal(t, c.want, flags)
			assert.Equal(t, c.wantPorts, port)
		})
	}
}
