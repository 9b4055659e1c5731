package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

func TestStatusProvisioningThenReady(t *testing.T) {
	f := newFixture(t, testCluster())
	if after := f.sync(); after != notReadyRequeue {
		t.Errorf("not-ready cluster requeued after %s, want %s", after, notReadyRequeue)
	}
	st := f.nc.Status
	if st.Phase != v1alpha1.PhaseProvisioning {
		t.Errorf("phase %q, want Provisioning", st.Phase)
	}
	if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) {
		t.Error("Ready before any pod is")
	}

	f.markReady()
	f.syncTenant()
	st = f.nc.Status
	if st.Phase != v1alpha1.PhaseReady {
		t.Errorf("phase %q, want Ready", st.Phase)
	}
	for _, c := range []string{v1alpha1.ConditionEtcdReady, v1alpha1.ConditionAPIServerAvailable, v1alpha1.ConditionControllerManagerAvailable, v1alpha1.ConditionSchedulerAvailable, v1alpha1.ConditionReady} {
		if !meta.IsStatusConditionTrue(st.Conditions, c) {
			t.Errorf("condition %s not True: %v", c, meta.FindStatusCondition(st.Conditions, c))
		}
	}
	if st.ObservedGeneration != f.nc.Generation {
		t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, f.nc.Generation)
	}
	wantEndpoint := "https://kube-apiserver." + managementNamespace(f.nc) + ".svc:6443"
	if st.Endpoint != wantEndpoint {
		t.Errorf("endpoint %q, want %q", st.Endpoint, wantEndpoint)
	}
	if st.Replicas != 1 || st.Selector != "capn.dev/cluster=demo,capn.dev/component=kube-apiserver" {
		t.Errorf("scale status replicas=%d selector=%q", st.Replicas, st.Selector)
	}
	if st.APIServer.Version != "v1.37.2" || st.APIServer.Image == "" || st.APIServer.ReadyReplicas != 1 {
		t.Errorf("apiserver status %+v", st.APIServer)
	}
	if st.Etcd.Image == "" {
		t.Error("etcd image not reported: a capn upgrade would roll etcd")
	}
}

func TestStatusDegradedAfterReady(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.markReady()
	f.syncTenant()
	// The scheduler's new revision adds a replica that is not ready yet.
	f.setCluster(func(nc *v1alpha1.NestedCluster) {
		two := int32(2)
		nc.Spec.Scheduler.Replicas = &two
		nc.Generation++
	})
	f.sync()
	st := f.nc.Status
	if st.Phase != v1alpha1.PhaseDegraded {
		t.Errorf("phase %q, want Degraded", st.Phase)
	}
	if !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionSchedulerAvailable) || meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("want scheduler available but cluster not Ready: %v", st.Conditions)
	}
}
