package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/builders"
)

// ensureNamespace finds nc's management namespace (provisioner.
// ResolveNamespace: never one owned by another cluster), creates or corrects
// it, and returns the sync's target: Params with the namespace and what
// capn renders every cluster with, which ensureServices completes with the
// Services' addresses and every later step reads. Applying it
// stamps provisioner.OwnerUIDLabel, which is how a namespace made by an
// older capn, under its legacy name, is claimed by its cluster's UID.
func (c *workloads) ensureNamespace(ctx context.Context, nc *v1alpha1.NestedCluster) (builders.Params, error) {
	name, err := resolveNamespace(ctx, c.mgmt, nc)
	if err != nil {
		return builders.Params{}, err
	}
	ns := builders.Namespace(nc, builders.Params{Namespace: name})
	live, changed, err := c.applyIfChanged(ctx, ns)
	if err != nil {
		return builders.Params{}, fmt.Errorf("namespace %s: %w", ns.Name, err)
	}
	// A terminating namespace refuses new objects; say so rather than fail
	// every later step with a less helpful error.
	if live.GetDeletionTimestamp() != nil {
		return builders.Params{}, fmt.Errorf("namespace %s is terminating", ns.Name)
	}
	if changed {
		klog.FromContext(ctx).Info("Applied management namespace", "namespace", ns.Name)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "NamespaceApplied", "applied management namespace %s", ns.Name)
	}
	return builders.Params{Namespace: name, Placement: c.placement, TemplateRevision: c.cfg.TemplateRevision,
		DataPlane: c.dataPlane, Network: c.network, CapnNamespace: c.cfg.LeaderElectNamespace}, nil
}

// resolveNamespace looks namespaces up for provisioner.ResolveNamespace.
func resolveNamespace(ctx context.Context, m Management, nc *v1alpha1.NestedCluster) (string, error) {
	return provisioner.ResolveNamespace(nc, func(name string) (map[string]string, error) {
		live, err := m.Get(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("getting namespace %s: %w", name, err)
		}
		return provisioner.NonNilLabels(live.GetLabels()), nil
	})
}
