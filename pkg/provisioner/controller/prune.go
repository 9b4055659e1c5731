package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// prunable are the objects the builders render only sometimes: a
// PodDisruptionBudget exists while its component has more than one replica.
// Left behind after a scale to 1, it would block every voluntary eviction
// of the only pod (minAvailable 1 of 1), so it is deleted.
var prunable = []string{provisioner.EtcdName, provisioner.APIServerName, provisioner.ControllerManagerName, provisioner.SchedulerName}

// prune deletes the prunable objects that rendered no longer contains.
// Only objects labelled as capn's are touched.
func (c *workloads) prune(ctx context.Context, nc *v1alpha1.NestedCluster, ns string, rendered []builders.Object) error {
	want := map[string]bool{}
	waker := false
	for _, o := range rendered {
		switch o.(type) {
		case *policyv1.PodDisruptionBudget:
			want[o.GetName()] = true
		case *discoveryv1.EndpointSlice:
			waker = true
		}
	}
	if !waker {
		if err := c.pruneWaker(ctx, nc, ns); err != nil {
			return err
		}
	}
	for _, name := range prunable {
		if want[name] {
			continue
		}
		proto := &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		live, err := c.mgmt.Get(ctx, proto)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("getting PodDisruptionBudget %s: %w", name, err)
		}
		if live.GetLabels()[provisioner.ManagedByLabel] != provisioner.ManagedByValue {
			continue
		}
		if err := c.mgmt.Delete(ctx, proto); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting PodDisruptionBudget %s: %w", name, err)
		}
		klog.FromContext(ctx).Info("Pruned object no longer rendered", "kind", "PodDisruptionBudget", "name", name)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "Pruned", "deleted PodDisruptionBudget/%s: %s runs a single replica", name, name)
	}
	return nil
}

// pruneWaker deletes the waker's EndpointSlice once the cluster's own
// apiserver answers again (wakerFor no longer renders it).
func (c *workloads) pruneWaker(ctx context.Context, nc *v1alpha1.NestedCluster, ns string) error {
	proto := &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: provisioner.WakerEndpointSliceName}}
	live, err := c.mgmt.Get(ctx, proto)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting EndpointSlice %s: %w", proto.Name, err)
	}
	if live.GetLabels()[provisioner.ManagedByLabel] != provisioner.ManagedByValue {
		return nil
	}
	proto.UID = live.GetUID()
	if err := c.mgmt.Delete(ctx, proto); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting EndpointSlice %s: %w", proto.Name, err)
	}
	klog.FromContext(ctx).Info("Pruned object no longer rendered", "kind", "EndpointSlice", "name", proto.Name)
	return nil
}
