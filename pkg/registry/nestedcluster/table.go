package nestedcluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"capn.dev/capn/pkg/apis/capn"
	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/registry/subresource"
)

// Priority 0 columns show in `kubectl get`; priority 1 only with -o wide.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the NestedCluster."},
	{Name: "Version", Type: "string", Description: "Desired Kubernetes version (spec.version)."},
	{Name: "Phase", Type: "string", Description: "Lifecycle phase (status.phase)."},
	{Name: "APIServers", Type: "string", Description: "Ready/desired kube-apiserver replicas."},
	{Name: "Endpoint", Type: "string", Description: "Tenant apiserver URL (status.endpoint)."},
	{Name: "Age", Type: "string", Description: "Time since creation."},
	{Name: "Controller-Managers", Type: "string", Priority: 1, Description: "Ready/desired kube-controller-manager replicas."},
	{Name: "Schedulers", Type: "string", Priority: 1, Description: "Ready/desired kube-scheduler replicas."},
	{Name: "Etcd", Type: "string", Priority: 1, Description: "Ready/desired etcd members, External, or Pool/<name>."},
	{Name: "Reason", Type: "string", Priority: 1, Description: "Why the cluster is not healthy: the reason of ImagesAvailable=False, else Degraded=True, else Ready not True."},
}

type tableConvertor struct{}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := subresource.NewTable(obj, columns)

	var items []capn.NestedCluster
	switch t := obj.(type) {
	case *capn.NestedCluster:
		items = []capn.NestedCluster{*t}
	case *capn.NestedClusterList:
		items = t.Items
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("cannot convert %T to a table", obj))
	}
	for i := range items {
		nc := &items[i]
		table.Rows = append(table.Rows, metav1.TableRow{
			Object: runtime.RawExtension{Object: nc},
			Cells: []interface{}{
				nc.Name,
				nc.Spec.Version,
				phaseOf(nc),
				readyOf(nc.Status.APIServer, nc.Spec.APIServer.Replicas),
				nc.Status.Endpoint,
				age(nc.CreationTimestamp),
				readyOf(nc.Status.ControllerManager, nc.Spec.ControllerManager.Replicas),
				readyOf(nc.Status.Scheduler, nc.Spec.Scheduler.Replicas),
				etcdOf(nc),
				reasonOf(nc),
			},
		})
	}
	return table, nil
}

// phaseOf shows Deleting as soon as deletion starts, before the provisioner
// has had a chance to report it.
func phaseOf(nc *capn.NestedCluster) string {
	if nc.DeletionTimestamp != nil {
		return string(capn.PhaseDeleting)
	}
	return string(nc.Status.Phase)
}

func readyOf(s capn.ComponentStatus, desired *int32) string {
	return fmt.Sprintf("%d/%d", s.ReadyReplicas, ptr.Deref(desired, 0))
}

func etcdOf(nc *capn.NestedCluster) string {
	if nc.Spec.Etcd.External != nil {
		return "External"
	}
	if nc.Spec.Etcd.Pool != "" {
		return "Pool/" + nc.Spec.Etcd.Pool
	}
	var desired *int32
	if nc.Spec.Etcd.Managed != nil {
		desired = nc.Spec.Etcd.Managed.Replicas
	}
	return readyOf(nc.Status.Etcd, desired)
}

// reasonOf picks the one condition reason a user should read first: a
// missing image blocks everything else, a stalled upgrade comes next, and
// otherwise Ready says why it is not (yet) True. Reasons are CamelCase words
// the provisioner sets, never tenant text, so they are safe to show.
func reasonOf(nc *capn.NestedCluster) string {
	conds := nc.Status.Conditions
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionImagesAvailable); c != nil && c.Status == metav1.ConditionFalse {
		return c.Reason
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReconciled); c != nil && c.Status == metav1.ConditionFalse {
		return c.Reason
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
