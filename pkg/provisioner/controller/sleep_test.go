package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/syncer/names"
)

func (f *fixture) replicas() map[string]int32 {
	f.t.Helper()
	ctx := context.Background()
	ns := managementNamespace(f.nc)
	out := map[string]int32{}
	deps, err := f.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for _, d := range deps.Items {
		out[d.Name] = *d.Spec.Replicas
	}
	sts, err := f.kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	for _, s := range sts.Items {
		out[s.Name] = *s.Spec.Replicas
	}
	return out
}

func hostPod(ns, name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Labels: map[string]string{names.TenantUIDLabel: string(uid)}},
	}
}

// A Shared cluster put to sleep: every Deployment goes to zero, the
// EmptyDir etcd stays (and the condition says why), the tenant's host pods
// are stopped only once the syncer is down, and the phase is Sleeping with
// Ready False. Waking brings every count back.
func TestSleepAndWake(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.DataPlane.Mode = v1alpha1.DataPlaneShared })
	wns := provisioner.WorkloadNamespace(nc)
	other := hostPod("elsewhere", "x", "u-0")
	f := newFixture(t, nc, hostPod(wns, "a", "u-1"), hostPod(wns, "b", "u-2"), other)
	f.sync()
	f.markReady()
	f.syncTenant()
	require.Equal(t, v1alpha1.PhaseReady, f.nc.Status.Phase)
	awake := f.replicas()
	assert.Equal(t, map[string]int32{provisioner.APIServerName: 1, provisioner.ControllerManagerName: 1,
		provisioner.SchedulerName: 1, provisioner.SyncerName: 1, provisioner.EtcdName: 1}, awake)

	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Sleep.Asleep = true })
	f.sync()
	assert.Equal(t, map[string]int32{provisioner.APIServerName: 0, provisioner.ControllerManagerName: 0,
		provisioner.SchedulerName: 0, provisioner.SyncerName: 0, provisioner.EtcdName: 1}, f.replicas())
	pods, err := f.kube.CoreV1().Pods(wns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, pods.Items, 2, "host pods stay while the syncer may still run")
	c := condition(t, &f.nc.Status, v1alpha1.ConditionSleeping)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonFallingAsleep, c.Reason)

	f.markReady() // the Deployments are at zero
	after := f.sync()
	pods, err = f.kube.CoreV1().Pods(wns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, pods.Items, "the tenant's host pods are stopped once the syncer is down")
	_, err = f.kube.CoreV1().Pods(other.Namespace).Get(context.Background(), other.Name, metav1.GetOptions{})
	require.NoError(t, err, "a pod outside the workload namespace is not touched")
	assert.NotZero(t, after, "pods were still there: look again")
	after = f.sync()
	assert.Zero(t, after, "asleep and settled: nothing to poll")

	assert.Equal(t, v1alpha1.PhaseSleeping, f.nc.Status.Phase)
	c = condition(t, &f.nc.Status, v1alpha1.ConditionSleeping)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonAsleep, c.Reason)
	assert.Contains(t, c.Message, "etcd keeps running")
	assert.Contains(t, c.Message, "EmptyDir")
	ready := condition(t, &f.nc.Status, v1alpha1.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, v1alpha1.ReasonAsleep, ready.Reason)

	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Sleep.Asleep = false })
	f.sync()
	assert.Equal(t, awake, f.replicas())
	f.markReady()
	f.syncTenant()
	assert.Equal(t, v1alpha1.PhaseReady, f.nc.Status.Phase)
	c = condition(t, &f.nc.Status, v1alpha1.ConditionSleeping)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonAwake, c.Reason)
}

// On a PVC, etcd sleeps too; its data stays on the claims.
func TestSleepStopsEtcdOnPVC(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Etcd.Managed.Storage.Type = v1alpha1.EtcdStoragePersistentVolumeClaim
		nc.Spec.Etcd.Managed.Storage.Size = ptr.To(resource.MustParse("1Gi"))
		nc.Spec.Sleep.Asleep = true
	})
	f := newFixture(t, nc)
	f.sync()
	f.markReady()
	f.sync()
	for name, n := range f.replicas() {
		assert.Zero(t, n, name)
	}
	c := condition(t, &f.nc.Status, v1alpha1.ConditionSleeping)
	assert.Equal(t, v1alpha1.ReasonAsleep, c.Reason)
	assert.True(t, strings.Contains(c.Message, "PersistentVolumeClaims"), c.Message)
}

// A sleep asked for while a component still runs another version waits
// for the upgrade: an ordered upgrade needs pods to check.
func TestSleepWaitsForAnUpgrade(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Sleep.Asleep = true })
	o := allRolledOut("v1.36.3")
	o.sleep = decideSleep(nc, o)
	assert.True(t, o.sleep.asked)
	assert.False(t, o.sleep.asleep)
	st, _ := deriveStatus(nc, o, nil)
	c := condition(t, st, v1alpha1.ConditionSleeping)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonWaitingForUpgrade, c.Reason)

	o = allRolledOut(nc.Spec.Version)
	assert.True(t, decideSleep(nc, o).asleep)
	nc.Status.Upgrade = &v1alpha1.UpgradeStatus{From: "v1.36.3", To: nc.Spec.Version}
	assert.False(t, decideSleep(nc, o).asleep, "status says an upgrade runs")
}
