package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// WatchManagement enqueues the owning NestedCluster whenever one of the
// given management-cluster informers (namespaces, Services, workloads) sees
// a change to an object capn created. That is how status follows pods
// becoming ready and a load balancer getting its address, and how a
// namespace deleted by hand gets repaired, without polling.
//
// namespaces must be the informer of capn's management namespaces: an
// object in any other namespace is ignored, whatever its labels say, and
// the owner is read from its namespace's labels, never from the object's
// (which whoever can write the object can set).
func (c *ClusterController) WatchManagement(namespaces cache.SharedIndexInformer, informers ...cache.SharedIndexInformer) error {
	c.namespaces = namespaces.GetIndexer()
	informers = append([]cache.SharedIndexInformer{namespaces}, informers...)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watching the management cluster: %w", err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return nil
}

// WaitFor adds informers a sync reads from but does not react to.
func (c *ClusterController) WaitFor(informers ...cache.SharedIndexInformer) {
	for _, inf := range informers {
		c.synced = append(c.synced, inf.HasSynced)
	}
}

// enqueueOwner maps an object to its NestedCluster through the owner labels
// of its management namespace (provisioner.Labels): owner references cannot
// cross from the management cluster to an aggregated API's objects. A
// tenant with write access to its own namespace can label a Deployment
// there as anything; only namespaces are created by capn alone. A
// cluster-scoped object (the syncer's ClusterRoleBinding) names its owner
// in its own labels, which capn's admission policy reserves to capn.
func (c *ClusterController) enqueueOwner(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := objectMeta(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if _, isNamespace := obj.(*corev1.Namespace); !isNamespace && m.GetNamespace() != "" {
		nsObj, ok, err := c.namespaces.GetByKey(m.GetNamespace())
		if err != nil || !ok {
			return // not in a management namespace (or it is gone: its own delete event enqueues)
		}
		if m, err = objectMeta(nsObj); err != nil {
			utilruntime.HandleError(err)
			return
		}
	}
	l := m.GetLabels()
	if l[provisioner.ManagedByLabel] != provisioner.ManagedByValue || l[v1alpha1.ClusterLabel] == "" || l[provisioner.ClusterNamespaceLabel] == "" {
		return
	}
	c.queue.Add(l[provisioner.ClusterNamespaceLabel] + "/" + l[v1alpha1.ClusterLabel])
}

func objectMeta(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("watching the management cluster: %T has no metadata", obj)
	}
	return m, nil
}

// ManagedSelector is the label selector of everything capn creates in the
// management cluster, for the informers given to WatchManagement.
func ManagedSelector() string {
	return provisioner.ManagedByLabel + "=" + provisioner.ManagedByValue
}
