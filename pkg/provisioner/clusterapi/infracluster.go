package clusterapi

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	infrav1alpha1 "capn.dev/capn/pkg/apis/infrastructure/v1alpha1"
)

// syncInfraCluster marks a NestedInfraCluster provisioned: the management
// cluster it stands for is already there, and the NestedControlPlane gives
// the endpoint. Only its status is written, once.
func (c *Controller) syncInfraCluster(ctx context.Context, key string) error {
	obj, exists, err := c.infraInformer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	var ic infrav1alpha1.NestedInfraCluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, &ic); err != nil {
		return err
	}
	if ic.DeletionTimestamp != nil || ptr.Deref(ic.Status.Initialization.Provisioned, false) {
		return nil
	}
	ic.Status.Initialization.Provisioned = ptr.To(true)
	// No message: Cluster API repeats a True condition's message in the
	// Cluster's Available summary, where it reads like a problem.
	meta.SetStatusCondition(&ic.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Provisioned",
		ObservedGeneration: ic.Generation})
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ic)
	if err != nil {
		return err
	}
	_, err = c.dynamic.Resource(NestedInfraClusters).Namespace(ic.Namespace).UpdateStatus(ctx,
		&unstructured.Unstructured{Object: u}, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}
