package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
)

// pause reports that the provisioner is hands-off and does nothing else:
// users pause to repair the management objects by hand, so even drift must
// be left alone. Only the status (if it differs) is written.
func (c *ClusterController) pause(ctx context.Context, nc *v1alpha1.NestedCluster) error {
	st := nc.Status.DeepCopy()
	st.Phase = v1alpha1.PhasePaused
	st.ObservedGeneration = nc.Generation
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               v1alpha1.ConditionPaused,
		Status:             metav1.ConditionTrue,
		Reason:             "SpecPaused",
		Message:            "spec.paused is true: the provisioner leaves the control plane as it is",
		ObservedGeneration: nc.Generation,
	})
	changed, err := c.writeStatus(ctx, nc, st)
	if changed {
		klog.FromContext(ctx).Info("Paused")
		c.recorder.Event(nc, "Normal", "Paused", "reconciliation paused by spec.paused")
	}
	return err
}
