package controller

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

func TestWorkloadsApplied(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ctx := context.Background()
	ns := managementNamespace(f.nc)
	for _, name := range []string{provisioner.APIServerName, provisioner.ControllerManagerName, provisioner.SchedulerName} {
		d, err := f.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("deployment %s: %v", name, err)
			continue
		}
		if d.Annotations[SpecHashAnnotation] == "" {
			t.Errorf("deployment %s has no %s", name, SpecHashAnnotation)
		}
		if d.Spec.Template.Annotations[provisioner.CertsHashAnnotation] == "" {
			t.Errorf("deployment %s: pods carry no certs hash", name)
		}
	}
	if _, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, provisioner.EtcdName, metav1.GetOptions{}); err != nil {
		t.Errorf("etcd statefulset: %v", err)
	}
	// Services are applied before the PKI and everything else.
	firstSvc := slices.IndexFunc(f.mgmt.writes, func(w string) bool { return w == "apply Service/"+provisioner.APIServerName })
	firstSecret := slices.Index(f.mgmt.writes, "apply Secret/"+provisioner.SecretPKIRoots)
	firstDep := slices.Index(f.mgmt.writes, "apply Deployment/"+provisioner.APIServerName)
	if firstSvc < 0 || firstSecret < firstSvc || firstDep < firstSecret {
		t.Errorf("order: want Service, then Secrets, then Deployments; got %v", f.mgmt.writes)
	}
}

func TestWorkloadsReapplyOnlyChanged(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	f.mgmt.reset()
	f.setCluster(func(nc *v1alpha1.NestedCluster) { nc.Spec.Scheduler.Replicas = ptr.To[int32](2); nc.Generation++ })
	f.sync()
	// Two replicas: the quota grows first, so the new pod fits; the
	// Deployment changes and a PDB appears; nothing else.
	want := []string{"apply ResourceQuota/" + builders.ResourceQuotaName, "apply Deployment/" + provisioner.SchedulerName, "apply PodDisruptionBudget/" + provisioner.SchedulerName}
	if !slices.Equal(f.mgmt.writes, want) {
		t.Errorf("writes %v, want %v", f.mgmt.writes, want)
	}
}

func TestWorkloadsRepairHashDrift(t *testing.T) {
	f := newFixture(t, testCluster())
	f.sync()
	ctx := context.Background()
	ns := managementNamespace(f.nc)
	d, _ := f.kube.AppsV1().Deployments(ns).Get(ctx, provisioner.APIServerName, metav1.GetOptions{})
	d.Annotations[SpecHashAnnotation] = "stale"
	if _, err := f.kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mgmt.reset()
	f.sync()
	if !slices.Equal(f.mgmt.writes, []string{"apply Deployment/" + provisioner.APIServerName}) {
		t.Errorf("writes %v, want only the drifted Deployment", f.mgmt.writes)
	}
}

func TestSpecHashStable(t *testing.T) {
	nc := testCluster()
	a, err := specHash(builders.Namespace(nc, builders.Params{}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := specHash(builders.Namespace(nc, builders.Params{}))
	if a != b || a == "" {
		t.Errorf("hash not stable: %q vs %q", a, b)
	}
}
