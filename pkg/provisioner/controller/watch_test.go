package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"capn.dev/capn/pkg/provisioner"
)

func TestEnqueueOwner(t *testing.T) {
	owned := map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue,
		provisioner.ClusterLabel: "demo", provisioner.ClusterNamespaceLabel: "team-a"}
	for _, tc := range []struct {
		name string
		obj  any
		want string // queued key; empty means nothing
	}{
		{"deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: owned}}, "team-a/demo"},
		{"deleted namespace", cache.DeletedFinalStateUnknown{Obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: owned}}}, "team-a/demo"},
		{"not ours", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{provisioner.ClusterLabel: "demo", provisioner.ClusterNamespaceLabel: "team-a"}}}, ""},
		{"no owner", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{provisioner.ManagedByLabel: provisioner.ManagedByValue}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
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
