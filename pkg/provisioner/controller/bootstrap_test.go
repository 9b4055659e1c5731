package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

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
	f.sync()
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
	f.c.bootstrapped = map[types.UID]string{}
	f.sync()
	if len(f.tenantServers) != 2 {
		t.Errorf("after a restart the tenant was dialled %d times in all, want 2", len(f.tenantServers))
	}
	if ev := strings.Join(f.events(), "\n"); strings.Contains(ev, "TenantBootstrapped") {
		t.Errorf("an unchanged tenant was reported bootstrapped again:\n%s", ev)
	}
}

func TestTenantBootstrapFailureKeepsNotReady(t *testing.T) {
	f := newFixture(t, testCluster())
	f.tenant.PrependReactor("patch", "clusterrolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	f.sync()
	f.markReady()
	_, err := f.c.sync(context.Background(), f.nc.Namespace+"/"+f.nc.Name)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("sync error %v, want the bootstrap failure", err)
	}
	f.refresh()
	c := meta.FindStatusCondition(f.nc.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "BootstrappingTenant" {
		t.Errorf("Ready condition %+v, want False/BootstrappingTenant", c)
	}
	if !meta.IsStatusConditionTrue(f.nc.Status.Conditions, v1alpha1.ConditionAPIServerAvailable) {
		t.Error("status was not written before the bootstrap error was returned")
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "TenantBootstrapFailed") {
		t.Errorf("no TenantBootstrapFailed event in:\n%s", ev)
	}
}
