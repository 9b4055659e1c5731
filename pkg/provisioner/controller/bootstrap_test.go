package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/access"
)

func TestTenantBootstrapGatesReady(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	if len(f.tenantServers) != 0 {
		t.Fatalf("dialled the tenant %v before its apiserver was available", f.tenantServers)
	}
	f.markReady()
	f.syncTenant()
	if len(f.tenantServers) != 1 || f.tenantServers[0] != f.nc.Status.Endpoint {
		t.Fatalf("tenant dialled at %v, want once at the status endpoint %q", f.tenantServers, f.nc.Status.Endpoint)
	}
	crb, err := f.tenant.RbacV1().ClusterRoleBindings().Get(context.Background(), "capn:cluster-admins", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("tenant admin binding: %v", err)
	}
	if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "Group" || crb.Subjects[0].Name != access.TenantAdminsGroup {
		t.Errorf("binding %+v %+v: want group %s bound to cluster-admin", crb.RoleRef, crb.Subjects, access.TenantAdminsGroup)
	}
	if !meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady) {
		t.Fatalf("not Ready after bootstrap: %+v", f.nc.Status.Conditions)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "TenantBootstrapped") {
		t.Errorf("no TenantBootstrapped event in:\n%s", ev)
	}
	f.sync()
	if len(f.tenantServers) != 1 {
		t.Errorf("a resync dialled the tenant again: %v", f.tenantServers)
	}

	// A restarted capn has no memory, but the record on the management
	// namespace answers: no dial, no Event.
	f.c.tenants.bootstrapped = map[types.UID]*tenantBootstrap{}
	f.events()
	f.syncTenant()
	assert.Len(t, f.tenantServers, 1, "a restarted capn dialled the tenant again despite the record")
	assert.NotContains(t, strings.Join(f.events(), "\n"), "TenantBootstrapped")
	assert.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionTenantBootstrapped))

	// The record names the CA: a different one (a tenant made again) is
	// bootstrapped again.
	ns := managementNamespace(f.nc)
	live, err := f.kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, live.Annotations[TenantBootstrapAnnotation], 64)
	live.Annotations[TenantBootstrapAnnotation] = strings.Repeat("0", 64)
	_, err = f.kube.CoreV1().Namespaces().Update(context.Background(), live, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.syncTenant()
	assert.Len(t, f.tenantServers, 2, "a record for another CA was taken as this one's")
}

// The record is written by its own field manager: the namespace's own
// apply (the rendering, which does not carry it) neither removes it nor
// counts it as drift, so a resync after the record writes nothing.
func TestTenantBootstrapRecordSurvivesNamespaceApply(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.markReady()
	f.syncTenant()
	require.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady), "%+v", f.nc.Status.Conditions)
	f.mgmt.reset()
	f.sync()
	assert.Empty(t, f.mgmt.writes, "a resync after the record wrote")
	live, err := f.kube.CoreV1().Namespaces().Get(context.Background(), managementNamespace(f.nc), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, live.Annotations[TenantBootstrapAnnotation])
	var managers []string
	for _, m := range live.ManagedFields {
		managers = append(managers, m.Manager)
	}
	assert.Contains(t, managers, BootstrapFieldManager)
}

func TestTenantBootstrapFailureKeepsNotReady(t *testing.T) {
	f := newFixture(t, testCluster())
	// The tenant's answer is the tenant's text: it must reach neither the
	// Event nor the sync error (which is logged), only a fixed phrase and
	// the HTTP status.
	const tenantText = "<script>visit http://10.0.0.1/internal</script>"
	f.tenant.PrependReactor("patch", "clusterrolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewGenericServerResponse(503, "patch", rbacv1.Resource("clusterrolebindings"), "x", tenantText, 0, true)
	})
	f.failTenantTwice()
	// The failure is the step's outcome, with the step's own backoff as
	// the requeue (not an error for the queue's rate limiter).
	after, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	require.NoError(t, err)
	assert.Positive(t, after)
	f.refresh()
	rec := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionReconciled)
	require.NotNil(t, rec)
	assert.Equal(t, metav1.ConditionFalse, rec.Status)
	assert.Equal(t, v1alpha1.ReasonTenantBootstrapFailed, rec.Reason)
	assert.Contains(t, rec.Message, "the tenant apiserver answered HTTP 503")
	tb := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionTenantBootstrapped)
	require.NotNil(t, tb)
	assert.Equal(t, v1alpha1.ReasonTenantBootstrapFailed, tb.Reason)
	f.refresh()
	c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "BootstrappingTenant" {
		t.Errorf("Ready condition %+v, want False/BootstrappingTenant", c)
	}
	if !meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionAPIServerAvailable) {
		t.Error("status was not written before the bootstrap error was returned")
	}
	ev := strings.Join(f.events(), "\n")
	assert.Contains(t, ev, "TenantBootstrapFailed the tenant apiserver answered HTTP 503")
	assert.NotContains(t, ev, "visit")
	assert.NotContains(t, strings.Join(conditionMessages(f.nc), "\n"), "visit")
}

// A tenant whose apiserver never answers must not hold a sync worker: the
// sync returns at once while the bootstrap waits in its own goroutine.
func TestTenantBootstrapDoesNotBlockSync(t *testing.T) {
	f := newFixture(t, testCluster())
	release := make(chan struct{})
	f.tenant.PrependReactor("get", "clusterrolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	f.sync()
	f.markReady()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			_, _ = f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("sync blocked on a tenant that does not answer")
	}
	f.serversMu.Lock()
	assert.Len(t, f.tenantServers, 1, "one bootstrap in flight per cluster, not one per sync")
	f.serversMu.Unlock()
	close(release)
	f.c.tenants.tenantWG.Wait()
	f.syncTenant()
	assert.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady), "%+v", f.nc.Status.Conditions)
}

// TestTenantBootstrapBacksOff: a tenant that refuses at once is not dialled
// again by every sync (each failure enqueues one), only after a backoff.
func TestTenantBootstrapBacksOff(t *testing.T) {
	f := newFixture(t, testCluster())
	f.tenant.PrependReactor("patch", "clusterrolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("no")
	})
	now := f.failTenantTwice()
	dials := func() int {
		f.serversMu.Lock()
		defer f.serversMu.Unlock()
		return len(f.tenantServers)
	}
	require.Equal(t, 2, dials())
	for range 5 {
		after, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
		require.NoError(t, err)
		assert.Equal(t, tenantRetry(2), after, "the requeue is the backoff's end")
		f.refresh()
		assert.False(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReconciled), "the last failure is still reported")
		f.c.tenants.tenantWG.Wait()
	}
	assert.Equal(t, 2, dials(), "the tenant was dialled again within its backoff")
	warnings := 0
	for _, e := range f.events() {
		if strings.Contains(e, "TenantBootstrapFailed") {
			warnings++
		}
	}
	assert.Equal(t, 1, warnings, "one Warning per failed attempt, not one per sync")

	now = now.Add(tenantRetry(2))
	f.c.now = func() time.Time { return now }
	_, _ = f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	f.c.tenants.tenantWG.Wait()
	assert.Equal(t, 3, dials(), "no new attempt once the backoff passed")
	assert.Equal(t, 500*time.Millisecond, tenantRetry(2))
	assert.Equal(t, maxTenantRetry, tenantRetry(100))
}

func conditionMessages(nc *v1alpha1.NestedCluster) []string {
	var out []string
	for _, c := range nc.Status.Conditions {
		out = append(out, c.Message)
	}
	return out
}

// A Memory or EmptyDir etcd whose pod is replaced has lost the bindings
// with its data: the record names the etcd pods, so capn bootstraps again
// without a restart of its own.
func TestTenantBootstrapRedoneAfterEtcdPodReplaced(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ns := managementNamespace(f.nc)
	etcdPod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-0", UID: types.UID(uid),
			Labels: map[string]string{v1alpha1.ClusterLabel: f.nc.Name, v1alpha1.ComponentLabel: v1alpha1.ComponentEtcd}}}
	}
	ctx := context.Background()
	_, err := f.kube.CoreV1().Pods(ns).Create(ctx, etcdPod("first"), metav1.CreateOptions{})
	require.NoError(t, err)
	f.markReady()
	f.syncTenant()
	require.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady), "%+v", f.nc.Status.Conditions)
	require.Len(t, f.tenantServers, 1)
	f.sync()
	require.Len(t, f.tenantServers, 1, "an unchanged etcd pod needs no bootstrap")

	require.NoError(t, f.kube.CoreV1().Pods(ns).Delete(ctx, "etcd-0", metav1.DeleteOptions{}))
	_, err = f.kube.CoreV1().Pods(ns).Create(ctx, etcdPod("second"), metav1.CreateOptions{})
	require.NoError(t, err)
	f.syncTenant()
	assert.Len(t, f.tenantServers, 2, "a replaced etcd pod did not bring the bootstrap back")
	assert.True(t, meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionReady))
}

// failTenantTwice brings the cluster up against a tenant that refuses (a
// reactor the test set): the first failure is retried quietly, so it runs
// a second attempt after the first backoff, and returns the clock then.
func (f *fixture) failTenantTwice() time.Time {
	f.t.Helper()
	f.sync()
	f.markReady()
	f.sync()
	f.c.tenants.tenantWG.Wait()
	after := f.sync()
	assert.Positive(f.t, after, "no requeue after the first failure")
	tb := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionTenantBootstrapped)
	require.NotNil(f.t, tb)
	assert.Equal(f.t, v1alpha1.ReasonBootstrapPending, tb.Reason, "a single failure is reported")
	assert.NotContains(f.t, strings.Join(f.events(), "\n"), "TenantBootstrapFailed")
	now := testNow.Add(tenantRetry(1))
	f.c.now = func() time.Time { return now }
	f.sync()
	f.c.tenants.tenantWG.Wait()
	return now
}

// The bootstrap's backoff: short at first, at most 2 s apart for the first
// 20 s of failures (a transient fault costs at most 2 s more than itself),
// then up to a minute; never shorter than the wait before it.
func TestTenantRetrySchedule(t *testing.T) {
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	for range steadyTenantRetries - 3 {
		want = append(want, 2*time.Second)
	}
	want = append(want, 4*time.Second, 8*time.Second, 16*time.Second, 32*time.Second, time.Minute, time.Minute)
	var got []time.Duration
	for n := 1; n <= len(want); n++ {
		got = append(got, tenantRetry(n))
	}
	assert.Equal(t, want, got)
	var waited time.Duration
	for n := 1; waited < 20*time.Second; n++ {
		assert.LessOrEqual(t, tenantRetry(n), 2*time.Second, "failure %d, %s into the failures", n, waited)
		waited += tenantRetry(n)
	}
	for n := 2; n < 200; n++ {
		assert.GreaterOrEqual(t, tenantRetry(n), tenantRetry(n-1), "failure %d", n)
	}
	assert.Equal(t, maxTenantRetry, tenantRetry(1000))
}

// A capn release that grants tenants something new must bootstrap every
// tenant again: the recorded key covers what Bootstrap applies.
func TestBootstrapKeyCoversTheRevision(t *testing.T) {
	ca, pods := []byte("ca"), []string{"uid-1"}
	require.NotEqual(t, bootstrapKey(ca, pods, "r1"), bootstrapKey(ca, pods, "r2"))
	require.Equal(t, bootstrapKey(ca, pods, access.BootstrapRevision()), bootstrapKey(ca, pods, access.BootstrapRevision()))
}
