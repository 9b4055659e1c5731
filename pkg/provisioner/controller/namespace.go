package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner/builders"
)

// ensureNamespace creates or corrects the management namespace. Its owner
// labels (provisioner.Labels) are what finalize checks before deleting it.
func (c *Controller) ensureNamespace(ctx context.Context, nc *v1alpha1.NestedCluster, in *capn.NestedCluster) error {
	ns := builders.Namespace(in)
	live, changed, err := c.applyIfChanged(ctx, ns)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns.Name, err)
	}
	// A terminating namespace refuses new objects; say so rather than fail
	// every later step with a less helpful error.
	if live.GetDeletionTimestamp() != nil {
		return fmt.Errorf("namespace %s is terminating", ns.Name)
	}
	if changed {
		klog.FromContext(ctx).Info("Applied management namespace", "namespace", ns.Name)
		c.recorder.Eventf(nc, corev1.EventTypeNormal, "NamespaceApplied", "applied management namespace %s", ns.Name)
	}
	return nil
}
