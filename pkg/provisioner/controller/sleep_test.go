package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/pki"
	"capn.dev/capn/pkg/tenant/names"
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

	// The Deployments report zero: the syncer is down, so its host pods go.
	f.markReady()
	after := f.sync()
	assert.NotZero(t, after, "host pods were still there: look again")
	pods, err = f.kube.CoreV1().Pods(wns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, pods.Items, "the tenant's host pods are stopped once the syncer is down")
	_, err = f.kube.CoreV1().Pods(other.Namespace).Get(context.Background(), other.Name, metav1.GetOptions{})
	require.NoError(t, err, "a pod outside the workload namespace is not touched")

	// No host pod left, but kube-apiserver's pod still drains: not asleep yet.
	draining := hostPod(managementNamespace(f.nc), "kube-apiserver-x", "u-3")
	draining.Labels = map[string]string{v1alpha1.ClusterLabel: f.nc.Name, v1alpha1.ComponentLabel: v1alpha1.ComponentAPIServer}
	_, err = f.kube.CoreV1().Pods(draining.Namespace).Create(context.Background(), draining, metav1.CreateOptions{})
	require.NoError(t, err)
	after = f.sync()
	assert.Equal(t, v1alpha1.ReasonFallingAsleep, condition(t, &f.nc.Status, v1alpha1.ConditionSleeping).Reason, "a pod still drains")
	assert.NotZero(t, after, "a pod is still there: look again")
	require.NoError(t, f.kube.CoreV1().Pods(draining.Namespace).Delete(context.Background(), draining.Name, metav1.DeleteOptions{}))
	after = f.sync()
	assert.Zero(t, after, "asleep and settled: nothing to poll")
	f.mgmt.reset()
	f.sync()
	assert.NotContains(t, f.mgmt.reads, "stop pods in "+wns, "a settled sleep lists no pods")

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
	o.sleep = decideSleep(nc, o, testNow)
	assert.True(t, o.sleep.asked)
	assert.False(t, o.sleep.asleep)
	st, _ := deriveStatus(nc, o, nil)
	c := condition(t, st, v1alpha1.ConditionSleeping)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonWaitingForUpgrade, c.Reason)

	o = allRolledOut(nc.Spec.Version)
	assert.True(t, decideSleep(nc, o, testNow).asleep)
	nc.Status.Upgrade = &v1alpha1.UpgradeStatus{From: "v1.36.3", To: nc.Spec.Version}
	assert.False(t, decideSleep(nc, o, testNow).asleep, "status says an upgrade runs")
}

// A cluster with spec.sleep.afterInactivity falls asleep once its
// request counter has not moved for that long, and wakes on a wake
// request newer than the sleep, or on a spec change.
func TestSleepAfterInactivity(t *testing.T) {
	nc := testCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Spec.Sleep.AfterInactivity = &metav1.Duration{Duration: 5 * time.Minute}
	})
	f := newFixture(t, nc)
	clock := testNow
	f.c.now = func() time.Time { return clock }
	var mu sync.Mutex
	requests := int64(10)
	f.c.activity.tenantRequests = func(context.Context, string, *pki.CA) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		return requests, nil
	}
	// step syncs at clock+d, lets the reads that sync started end, and
	// syncs again, as the queue would.
	step := func(d time.Duration) time.Duration {
		clock = clock.Add(d)
		f.sync()
		f.c.tenants.tenantWG.Wait()
		f.c.activity.activityWG.Wait()
		return f.sync()
	}
	f.sync()
	f.markReady()
	after := step(0)
	require.Equal(t, v1alpha1.PhaseReady, f.nc.Status.Phase)
	assert.Equal(t, time.Minute, after, "an awake cluster is checked again after the interval")

	step(4 * time.Minute)
	mu.Lock()
	requests = 11 // someone used it
	mu.Unlock()
	step(time.Minute)
	step(4 * time.Minute) // 4 minutes after the use: still awake
	assert.Nil(t, meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionInactive))
	assert.Equal(t, int32(1), f.replicas()[provisioner.APIServerName])

	step(time.Minute) // 5 minutes without requests
	c := condition(t, &f.nc.Status, v1alpha1.ConditionInactive)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonNoRequests, c.Reason)
	step(0)
	assert.Zero(t, f.replicas()[provisioner.APIServerName], "asleep for inactivity")
	f.markReady()
	step(0)
	assert.Equal(t, v1alpha1.PhaseSleeping, f.nc.Status.Phase)
	assert.Contains(t, condition(t, &f.nc.Status, v1alpha1.ConditionSleeping).Message, "without requests")

	// A wake request older than the sleep, or from the future, does not wake it.
	for _, at := range []time.Time{clock.Add(-time.Hour), clock.Add(time.Hour)} {
		f.setCluster(func(nc *v1alpha1.NestedCluster) {
			nc.Annotations = map[string]string{v1alpha1.WakeRequestedAnnotation: at.Format(time.RFC3339)}
		})
		step(time.Second)
		assert.Zero(t, f.replicas()[provisioner.APIServerName], "wake request at %s", at)
	}
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Annotations = map[string]string{v1alpha1.WakeRequestedAnnotation: clock.Format(time.RFC3339)}
	})
	step(time.Second)
	assert.Equal(t, int32(1), f.replicas()[provisioner.APIServerName], "a /kubeconfig request wakes it")
	c = condition(t, &f.nc.Status, v1alpha1.ConditionInactive)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonWakeRequested, c.Reason)
	f.markReady()
	step(0)
	assert.Equal(t, v1alpha1.PhaseReady, f.nc.Status.Phase, "%+v", f.nc.Status.Conditions)

	// Idle again, then the spec changes.
	step(5 * time.Minute)
	step(time.Second)
	step(0)
	require.Zero(t, f.replicas()[provisioner.APIServerName], "asleep again")
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		nc.Generation++
		nc.Spec.Scheduler.Replicas = ptr.To[int32](2)
	})
	step(0)
	assert.Equal(t, int32(1), f.replicas()[provisioner.APIServerName], "a spec change wakes it")
	assert.Equal(t, int32(2), f.replicas()[provisioner.SchedulerName])
	assert.Equal(t, v1alpha1.ReasonSpecChanged, condition(t, &f.nc.Status, v1alpha1.ConditionInactive).Reason)
}
