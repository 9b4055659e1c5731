package controller

import (
	"context"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// newQueue is a loop's rate-limited queue; name labels its metrics.
func newQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// runQueue starts worker on queue once synced say the caches are, and
// shuts the queue down when ctx ends.
func runQueue(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string],
	worker func(context.Context), synced []cache.InformerSynced) {
	defer utilruntime.HandleCrash()
	defer queue.ShutDown()
	if !cache.WaitForNamedCacheSync(name, ctx.Done(), synced...) {
		return
	}
	go wait.UntilWithContext(ctx, worker, time.Second)
	<-ctx.Done()
}
