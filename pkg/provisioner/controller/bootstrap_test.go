package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	// A restarted capn forgets what it bootstrapped: it checks again, and
	// finding the bindings in place it records no Event.
	f.c.bootstrapped = map[types.UID]*tenantBootstrap{}
	f.syncTenant()
	if len(f.tenantServers) != 2 {
		t.Errorf("after a restart the tenant was dialled %d times in all, want 2", len(f.tenantServers))
	}
	if ev := strings.Join(f.events(), "\n"); strings.Contains(ev, "TenantBootstrapped") {
		t.Errorf("an unchanged tenant was reported bootstrapped again:\n%s", ev)
	}
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
	f.sync()
	f.markReady()
	f.sync()
	f.c.tenantWG.Wait()
	_, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the tenant apiserver answered HTTP 503")
	assert.NotContains(t, err.Error(), "visit")
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
	f.c.tenantWG.Wait()
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
	f.sync()
	f.markReady()
	f.sync()
	f.c.tenantWG.Wait()
	dials := func() int {
		f.serversMu.Lock()
		defer f.serversMu.Unlock()
		return len(f.tenantServers)
	}
	require.Equal(t, 1, dials())
	for range 5 {
		_, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
		require.Error(t, err, "the last failure is still reported")
		f.c.tenantWG.Wait()
	}
	assert.Equal(t, 1, dials(), "the tenant was dialled again within its backoff")

	now := testNow.Add(tenantRetry(1))
	f.c.now = func() time.Time { return now }
	_, _ = f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	f.c.tenantWG.Wait()
	assert.Equal(t, 2, dials(), "no new attempt once the backoff passed")
	assert.Equal(t, 2*time.Second, tenantRetry(2))
	assert.Equal(t, maxTenantRetry, tenantRetry(100))
}

func conditionMessages(nc *v1alpha1.NestedCluster) []string {
	var out []string
	for _, c := range nc.Status.Conditions {
		out = append(out, c.Message)
	}
	return out
}
