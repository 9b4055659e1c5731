package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// A capn release that changes a pod-template default (a new template
// revision) must not roll the tenants that exist: their workloads keep the
// revision they run until their pods roll for another reason, and then
// move to the new one in that same roll. Here the older capn is played by
// a target revision of 1 (--template-revision=1).
func TestNewTemplateRevisionRollsNoTenant(t *testing.T) {
	latest := builders.LatestTemplateRevision
	f := newFixture(t, testCluster())
	f.c.cfg.TemplateRevision = 1
	f.sync()
	f.markReady()
	f.syncTenant()

	f.c.cfg.TemplateRevision = 0 // capn upgraded: the latest
	f.mgmt.reset()
	f.sync()
	assert.Empty(t, rolls(f.mgmt.writes), "the new revision alone rolled a tenant")
	// Its pods mount the logical Secrets still; the per-component ones
	// are written ahead, for the pods that roll to the new revision.
	assert.ElementsMatch(t, []string{"apply Secret/pki-roots", "apply Secret/etcd-pki", "apply Secret/kube-apiserver-pki",
		"apply Secret/kube-controller-manager-pki", "apply Secret/kube-scheduler-pki"}, f.mgmt.writes)

	ctx, ns := context.Background(), managementNamespace(f.nc)
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.ControllerManager.ExtraArgs = map[string]string{"v": "4"}
		nc.Generation++
	})
	f.sync()
	kcm, err := f.kube.AppsV1().Deployments(ns).Get(ctx, v1alpha1.ComponentControllerManager, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, latest, builders.RevisionOf(kcm), "kcm rolled for its spec change but kept the old revision")
	assert.Equal(t, int32(1), kcm.Spec.Template.Spec.Containers[0].StartupProbe.PeriodSeconds)
	for _, name := range []string{v1alpha1.ComponentAPIServer, v1alpha1.ComponentScheduler} {
		d, err := f.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, 1, builders.RevisionOf(d), "%s moved without a roll of its own", name)
	}
	etcd, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, provisioner.EtcdName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, builders.RevisionOf(etcd), "etcd moved: an EmptyDir etcd would have lost its data")
	assert.Equal(t, int32(10), etcd.Spec.Template.Spec.Containers[0].StartupProbe.PeriodSeconds)
}

// Pinning an older target after the fact rolls nothing back: a workload at
// a newer revision keeps it, even when its pods roll for a spec change.
func TestOlderTargetRevisionRollsNothingBack(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.markReady()
	f.syncTenant()
	f.c.cfg.TemplateRevision = 1
	f.mgmt.reset()
	f.sync()
	assert.Empty(t, rolls(f.mgmt.writes), "pinning an older revision rolled a tenant")
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.ControllerManager.ExtraArgs = map[string]string{"v": "4"}
		nc.Generation++
	})
	f.sync()
	kcm, err := f.kube.AppsV1().Deployments(managementNamespace(f.nc)).Get(context.Background(), v1alpha1.ComponentControllerManager, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, builders.LatestTemplateRevision, builders.RevisionOf(kcm))
}

// The metrics addon arrives with revision 6: a Shared tenant whose syncer
// runs at 5 is not rolled by the upgrade alone; asking for the addon in
// spec.metrics rolls its syncer, to the latest revision. The older capn is
// played by a target revision of 5, which builders'
// TestRevision5RendersAsBefore holds to that release's output.
func TestMetricsRevisionRollsNoSyncer(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneShared })
	f := newFixture(t, nc)
	f.c.cfg.TemplateRevision = builders.MetricsTemplateRevision - 1
	f.sync()
	f.markReady()
	f.syncTenant()

	f.c.cfg.TemplateRevision = 0
	f.mgmt.reset()
	f.sync()
	assert.Empty(t, rolls(f.mgmt.writes), "the metrics revision alone rolled a tenant")

	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Metrics.Mode = v1alpha1.MetricsServer
		nc.Generation++
	})
	f.sync()
	syncer, err := f.kube.AppsV1().Deployments(managementNamespace(f.nc)).Get(context.Background(), provisioner.SyncerName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, builders.LatestTemplateRevision, builders.RevisionOf(syncer))
	assert.Contains(t, syncer.Spec.Template.Spec.Containers[0].Args, "--metrics-addon=true")
}

// rolls are the writes of a sync other than the PKI Secrets': a Secret
// written ahead of the pods that will mount it rolls nothing.
func rolls(writes []string) []string {
	var out []string
	for _, w := range writes {
		if !strings.HasPrefix(w, "apply Secret/") {
			out = append(out, w)
		}
	}
	return out
}
