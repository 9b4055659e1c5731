package controller

import (
	"context"
	"sync"
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

// creationShare: while both lanes of the clusters queue hold keys, one pop
// in creationShare takes a creation, so a stream of observations never
// starves new clusters.
const creationShare = 4

// newClustersQueue is the clusters loop's queue: a rate-limited workqueue
// (dedup, one worker per key, backoff) over a laneQueue, with known telling
// the lanes apart.
func newClustersQueue(name string, known func(key string) bool) workqueue.TypedRateLimitingInterface[string] {
	lanes := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name, Queue: &laneQueue{known: known}})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: name, Queue: lanes})
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, DelayingQueue: delaying})
}

// laneQueue is the storage under the clusters queue (workqueue.Queue): two
// FIFO lanes. A cluster capn has synced before goes in the first; one it
// has never synced, a creation (render, PKI, every apply), in the second.
// Pop prefers the first, so a cluster whose pods just became ready is
// looked at next even with a thousand creations queued: in one FIFO its
// observation waited behind all of them, and every cluster became
// available together at the end (`make bench-scale`, docs/benchmarks.md).
// The workqueue calls it under its own lock.
type laneQueue struct {
	known         func(key string) bool
	synced, fresh []string
	// streak counts pops from synced in a row while fresh waited.
	streak int
}

func (q *laneQueue) Touch(string) {}

func (q *laneQueue) Push(key string) {
	if q.known(key) {
		q.synced = append(q.synced, key)
		return
	}
	q.fresh = append(q.fresh, key)
}

func (q *laneQueue) Len() int { return len(q.synced) + len(q.fresh) }

func (q *laneQueue) Pop() string {
	if len(q.synced) > 0 && (len(q.fresh) == 0 || q.streak < creationShare-1) {
		if len(q.fresh) > 0 {
			q.streak++
		}
		return pop(&q.synced)
	}
	q.streak = 0
	return pop(&q.fresh)
}

func pop(lane *[]string) string {
	key := (*lane)[0]
	(*lane)[0] = "" // let the backing array drop it
	*lane = (*lane)[1:]
	return key
}

// keySet is a set of queue keys, safe for concurrent use.
type keySet struct{ m sync.Map }

func (s *keySet) has(key string) bool {
	_, ok := s.m.Load(key)
	return ok
}

func (s *keySet) add(key string)    { s.m.Store(key, struct{}{}) }
func (s *keySet) remove(key string) { s.m.Delete(key) }
