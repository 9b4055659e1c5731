package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/provisioner"
)

func TestEnqueueOwner(t *testing.T) {
	owned := map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue,
		v1alpha1.ClusterLabel: "demo", provisioner.ClusterNamespaceLabel: "team-a"}
	for _, tc := range []struct {
		name string
		obj  any
		want string // queued key; empty means nothing
	}{
		{"deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "capn-team-a-demo-x", Labels: owned}}, "team-a/demo"},
		// The owner comes from the namespace, not the object's labels.
		{"mislabelled object in a management namespace", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "capn-team-a-demo-x",
			Labels: map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue, v1alpha1.ClusterLabel: "victim", provisioner.ClusterNamespaceLabel: "team-v"}}}, "team-a/demo"},
		// The finding: a tenant labels a Service in its own namespace as a
		// victim's; capn must not act on the victim for it.
		{"spoofed labels in a tenant namespace", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b",
			Labels: map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue, v1alpha1.ClusterLabel: "victim", provisioner.ClusterNamespaceLabel: "team-v"}}}, ""},
		{"deleted namespace", cache.DeletedFinalStateUnknown{Obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: owned}}}, "team-a/demo"},
		{"not ours", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.ClusterLabel: "demo", provisioner.ClusterNamespaceLabel: "team-a"}}}, ""},
		{"no owner", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &ClusterController{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
				namespaces: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
			if err := c.namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capn-team-a-demo-x", Labels: owned}}); err != nil {
				t.Fatal(err)
			}
			defer c.queue.ShutDown()
			c.enqueueOwner(tc.obj)
			if tc.want == "" {
				if c.queue.Len() != 0 {
					t.Fatalf("queued %d keys for an object capn does not own", c.queue.Len())
				}
				return
			}
			if c.queue.Len() != 1 {
				t.Fatalf("queue length %d, want 1", c.queue.Len())
			}
			if key, _ := c.queue.Get(); key != tc.want {
				t.Errorf("queued %q, want %q", key, tc.want)
			}
		})
	}
}
