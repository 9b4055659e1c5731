package controller

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// rolledOutWorkload is a workload whose controller has acted on its spec
// and whose replicas are all updated and ready.
func rolledOutWorkload(component, version string, generation int64) builders.Object {
	meta := metav1.ObjectMeta{Name: component, Generation: generation}
	tpl := map[string]string{provisioner.VersionAnnotation: version}
	if component == v1alpha1.ComponentEtcd {
		s := &appsv1.StatefulSet{ObjectMeta: meta}
		s.Spec.Template.Annotations = tpl
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1}
		return s
	}
	d := &appsv1.Deployment{ObjectMeta: meta}
	d.Spec.Template.Annotations = tpl
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1}
	return d
}

func allRolledOut(version string) *observation {
	o := &observation{seen: true, workloads: map[string]builders.Object{}, endpoint: "10.0.0.1:6443", tenant: tenantOutcome{done: true}}
	for _, c := range v1alpha1.Components() {
		o.workloads[c] = rolledOutWorkload(c, version, 1)
	}
	return o
}

func condition(t *testing.T, st *v1alpha1.NestedClusterStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	require.NotNil(t, c, "no %s condition in %+v", typ, st.Conditions)
	return *c
}

func TestDeriveStatusReadyWhenEverythingRuns(t *testing.T) {
	nc := testCluster()
	st, ready := deriveStatus(nc, allRolledOut(nc.Spec.Version), nil)
	assert.True(t, ready)
	assert.Equal(t, v1alpha1.PhaseReady, st.Phase)
	assert.Equal(t, metav1.ConditionTrue, condition(t, st, v1alpha1.ConditionReady).Status)
	assert.Equal(t, metav1.ConditionTrue, condition(t, st, v1alpha1.ConditionReconciled).Status)
	assert.Equal(t, metav1.ConditionTrue, condition(t, st, v1alpha1.ConditionTenantBootstrapped).Status)
	assert.Equal(t, "10.0.0.1:6443", st.Endpoint)
	assert.Equal(t, nc.Generation, st.ObservedGeneration)
}

// A step that fails after the observation still gets status written from
// it: Ready says what runs, Reconciled names the failed step.
func TestDeriveStatusFailedStepAfterObservation(t *testing.T) {
	nc := testCluster()
	st, ready := deriveStatus(nc, allRolledOut(nc.Spec.Version), failed(v1alpha1.ReasonPKIFailed, errors.New("signing: no entropy")))
	assert.True(t, ready, "a failed renewal does not stop a serving cluster")
	rec := condition(t, st, v1alpha1.ConditionReconciled)
	assert.Equal(t, metav1.ConditionFalse, rec.Status)
	assert.Equal(t, v1alpha1.ReasonPKIFailed, rec.Reason)
	assert.Equal(t, "signing: no entropy", rec.Message)
}

// A step that fails before the workloads were looked at leaves what status
// said about them: not having looked is not "down".
func TestDeriveStatusFailedBeforeObservationKeepsComponents(t *testing.T) {
	nc := testCluster()
	st, _ := deriveStatus(nc, allRolledOut(nc.Spec.Version), nil)
	nc.Status = *st
	st, ready := deriveStatus(nc, &observation{}, failed(v1alpha1.ReasonNamespaceFailed, errors.New("namespace capn-x is terminating")))
	assert.False(t, ready)
	assert.Equal(t, v1alpha1.PhaseReady, st.Phase)
	assert.Equal(t, metav1.ConditionTrue, condition(t, st, v1alpha1.ConditionAPIServerAvailable).Status)
	assert.Equal(t, v1alpha1.ReasonNamespaceFailed, condition(t, st, v1alpha1.ConditionReconciled).Reason)
}

// What the sync applied replaces the snapshot: a Deployment whose new spec
// its controller has not seen yet is not rolled out, so Ready waits.
func TestDeriveStatusSeesWhatTheSyncApplied(t *testing.T) {
	nc := testCluster()
	o := allRolledOut(nc.Spec.Version)
	applied := rolledOutWorkload(v1alpha1.ComponentScheduler, nc.Spec.Version, 2).(*appsv1.Deployment)
	applied.Status.ObservedGeneration = 1
	o.record(applied)
	st, ready := deriveStatus(nc, o, nil)
	assert.False(t, ready)
	assert.Equal(t, v1alpha1.ReasonComponentsNotReady, condition(t, st, v1alpha1.ConditionReady).Reason)
	assert.Equal(t, metav1.ConditionTrue, condition(t, st, v1alpha1.ConditionSchedulerAvailable).Status, "still serving while it rolls")
}

func TestDeriveStatusTenantBootstrapFailure(t *testing.T) {
	nc := testCluster()
	o := allRolledOut(nc.Spec.Version)
	o.tenant = tenantOutcome{failure: "the tenant apiserver answered HTTP 503"}
	st, ready := deriveStatus(nc, o, &stepError{reason: v1alpha1.ReasonTenantBootstrapFailed, err: errors.New(o.tenant.failure)})
	assert.False(t, ready)
	assert.Equal(t, v1alpha1.ReasonBootstrappingTenant, condition(t, st, v1alpha1.ConditionReady).Reason)
	tb := condition(t, st, v1alpha1.ConditionTenantBootstrapped)
	assert.Equal(t, v1alpha1.ReasonTenantBootstrapFailed, tb.Reason)
	assert.Equal(t, o.tenant.failure, tb.Message)
}

// A podTemplate may list a sidecar before the component's container:
// status reports the component's image, found by name, not position.
func TestComponentStatusFindsTheContainerByName(t *testing.T) {
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ComponentLabel: v1alpha1.ComponentAPIServer}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "log-shipper", Image: "example.com/shipper:1"},
			{Name: v1alpha1.ComponentAPIServer, Image: "registry.k8s.io/kube-apiserver:v1.37.2"},
		}},
	}
	assert.Equal(t, "registry.k8s.io/kube-apiserver:v1.37.2", componentStatus(1, 1, 1, tpl).Image)
}
