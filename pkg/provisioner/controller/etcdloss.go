package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

// TenantEtcdPodsAnnotation, on the management namespace, records the UIDs
// of the etcd pods the last tenant bootstrap was made against (sorted,
// comma-separated), beside TenantBootstrapAnnotation and by the same field
// manager.
const TenantEtcdPodsAnnotation = "capn.dev/tenant-etcd-pods"

// losesDataWithPod: a one-member managed etcd on EmptyDir or Memory starts
// empty in every new pod. (Three members rejoin from their peers; a
// PersistentVolumeClaim keeps the data.)
func losesDataWithPod(nc *v1alpha1.NestedCluster) bool {
	m := nc.Spec.Etcd.Managed
	return m != nil && m.Storage.Type != v1alpha1.EtcdStoragePersistentVolumeClaim && (m.Replicas == nil || *m.Replicas == 1)
}

// restartAfterEtcdLoss repairs what a lost etcd takes with it beyond capn's
// own bindings: kube-apiserver writes its bootstrap objects (the system:
// ClusterRoles and bindings kube-controller-manager and kube-scheduler
// act with, priority classes, flow schemas) only in its post-start hooks,
// and every client holds caches at the old etcd's resourceVersions. A
// control plane whose pods started before the current etcd pod, of a
// cluster that was bootstrapped against another etcd pod, serves a tenant
// whose own controllers are forbidden everything and wait for revisions
// that will not come. capn deletes those pods; their Deployments start new
// ones, whose apiserver hooks write the objects again.
// A new cluster has no record yet, and a restarted apiserver is younger
// than its etcd: neither is touched, so this runs once per loss.
func (c *tenantAccess) restartAfterEtcdLoss(ctx context.Context, nc *v1alpha1.NestedCluster, ns string, etcdPods []string) (bool, error) {
	if !losesDataWithPod(nc) || len(etcdPods) == 0 {
		return false, nil
	}
	live, err := c.mgmt.Get(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil {
		return false, fmt.Errorf("getting namespace %s: %w", ns, err)
	}
	recorded, ok := live.GetAnnotations()[TenantEtcdPodsAnnotation]
	if !ok || recorded == joinSorted(etcdPods) {
		return false, nil
	}
	etcd, err := c.mgmt.ListPods(ctx, ns, labels.SelectorFromSet(provisioner.SelectorLabels(nc, v1alpha1.ComponentEtcd)))
	if err != nil {
		return false, fmt.Errorf("listing etcd pods in %s: %w", ns, err)
	}
	var newest metav1.Time
	for _, p := range etcd {
		if newest.Before(&p.CreationTimestamp) {
			newest = p.CreationTimestamp
		}
	}
	// Every control-plane pod but etcd's, not only kube-apiserver: the
	// others hold informers at resourceVersions of the lost etcd, higher
	// than any the new one has, and wait for them for good ("read version
	// 1188 is not as new as written version 382").
	selector := labels.SelectorFromSet(labels.Set{v1alpha1.ClusterLabel: nc.Name}).Add(notEtcd)
	clients, err := c.mgmt.ListPods(ctx, ns, selector)
	if err != nil {
		return false, fmt.Errorf("listing control-plane pods in %s: %w", ns, err)
	}
	stale := slices.ContainsFunc(clients, func(p corev1.Pod) bool {
		return p.DeletionTimestamp == nil && p.CreationTimestamp.Before(&newest)
	})
	if !stale {
		return false, nil
	}
	// All of them: the ones younger than etcd exist only mid-roll, and a
	// restart costs them nothing they would not redo anyway.
	restarted, err := c.mgmt.StopPods(ctx, ns, selector)
	if err != nil {
		return false, fmt.Errorf("restarting the control plane: %w", err)
	}
	if restarted > 0 {
		klog.FromContext(ctx).Info("Restarted the control plane after its etcd lost its data", "pods", restarted)
		c.recorder.Eventf(nc, corev1.EventTypeWarning, "EtcdDataLost",
			"the etcd pod was replaced and its %s storage started empty: restarted %d control-plane pod(s), so that kube-apiserver writes its bootstrap objects again and the controllers forget the lost data; the tenant's own objects are gone (restore them from a NestedClusterBackup)",
			nc.Spec.Etcd.Managed.Storage.Type, restarted)
	}
	return restarted > 0, nil
}

// notEtcd selects every component but etcd.
var notEtcd = func() labels.Requirement {
	r, err := labels.NewRequirement(v1alpha1.ComponentLabel, selection.NotIn, []string{v1alpha1.ComponentEtcd})
	if err != nil {
		panic(err) // constant input
	}
	return *r
}()

func joinSorted(uids []string) string {
	return strings.Join(slices.Sorted(slices.Values(uids)), ",")
}
