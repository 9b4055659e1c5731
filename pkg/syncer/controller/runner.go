package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/tenant/names"
)

// A kindSyncer keeps one kind of host (or tenant) object in step: its
// informer handlers put keys on its own queue, and sync converges one key
// from the caches, writing only a difference (applyIfChanged). The runner
// owns the queues, the workers, retries and shutdown.
type kindSyncer interface {
	// name is the kind's queue name, in logs and metrics.
	name() string
	// register adds the informer handlers that enqueue keys (on its own
	// queue, or another kind's through r.queue), and declares what must
	// run or sync before its workers start.
	register(r *registrar)
	// sync converges one key; an error retries it with backoff.
	sync(ctx context.Context, key string) error
}

// queue is one kind's workqueue.
type queue = workqueue.TypedRateLimitingInterface[string]

// periodic is work on a clock rather than on events.
type periodic struct {
	every time.Duration
	run   func(context.Context)
}

// registrar is what kinds register with, and what Run runs: every kind's
// queue (all made before any kind registers, so a kind may enqueue onto
// one registered after it), the caches to wait for, and the hooks.
type registrar struct {
	kinds  []kindSyncer
	queues map[string]queue
	// synced are the caches the workers wait for.
	synced []cache.InformerSynced
	// before run before the caches start, after once they have synced
	// (beforeSync, afterSync).
	before, after []func(context.Context) error
	periodic      []periodic
}

func newRegistrar(kinds []kindSyncer) *registrar {
	r := &registrar{kinds: kinds, queues: make(map[string]queue, len(kinds))}
	for _, k := range kinds {
		if _, dup := r.queues[k.name()]; dup {
			panic(fmt.Sprintf("syncer: two kinds named %q", k.name()))
		}
		r.queues[k.name()] = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: k.name()})
	}
	for _, k := range kinds {
		k.register(r)
	}
	return r
}

// queue is the queue of the kind named kind, to enqueue onto: its own,
// or another kind's whose work a change of this one implies. An unknown
// name is a programming error, found as the syncer is built.
func (r *registrar) queue(kind string) queue {
	q, ok := r.queues[kind]
	if !ok {
		panic(fmt.Sprintf("syncer: no kind %q registered", kind))
	}
	return q
}

// waitFor declares caches the kind reads besides the shared ones.
func (r *registrar) waitFor(synced ...cache.InformerSynced) { r.synced = append(r.synced, synced...) }

// beforeSync runs f before the caches start: a server the kind's work
// needs, factories of its own, the first key of a singleton queue.
func (r *registrar) beforeSync(f func(context.Context) error) { r.before = append(r.before, f) }

// afterSync runs f once the caches have synced, before the workers.
func (r *registrar) afterSync(f func(context.Context) error) { r.after = append(r.after, f) }

// every runs f every period alongside the workers.
func (r *registrar) every(period time.Duration, f func(context.Context)) {
	r.periodic = append(r.periodic, periodic{every: period, run: f})
}

// shutDown ends the queues: workers block in Get until theirs shuts down.
func (r *registrar) shutDown() {
	for _, q := range r.queues {
		q.ShutDown()
	}
}

// runWorkers runs workers per kind and the periodic work until ctx ends.
func (r *registrar) runWorkers(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for _, k := range r.kinds {
		q, sync := r.queues[k.name()], k.sync
		kctx := klog.NewContext(ctx, klog.LoggerWithName(klog.FromContext(ctx), k.name()))
		for range workers {
			wg.Go(func() {
				wait.UntilWithContext(kctx, func(ctx context.Context) { work(ctx, q, sync) }, time.Second)
			})
		}
	}
	for _, p := range r.periodic {
		wg.Go(func() { wait.UntilWithContext(ctx, p.run, p.every) })
	}
	<-ctx.Done()
	wg.Wait()
}

func work(ctx context.Context, q queue, sync func(context.Context, string) error) {
	for {
		k, quit := q.Get()
		if quit {
			return
		}
		err := sync(ctx, k)
		if err != nil {
			// The first failures are routine (a conflict, a cache behind);
			// one that persists is what an operator needs to see.
			if q.NumRequeues(k) < 3 {
				klog.FromContext(ctx).V(2).Info("Sync failed, retrying", "key", k, "err", err)
			} else {
				klog.FromContext(ctx).Error(err, "Sync failed, retrying", "key", k, "retries", q.NumRequeues(k))
			}
			q.AddRateLimited(k)
		} else {
			q.Forget(k)
		}
		q.Done(k)
	}
}

// handle enqueues on add, update and delete (tombstones unwrapped).
func handle(i cache.SharedIndexInformer, f func(obj any)) {
	_, _ = i.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, obj any) { f(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			f(obj)
		},
	})
}

func key(obj any) string {
	k, _ := cache.MetaNamespaceKeyFunc(obj)
	return k
}

// identity reads the tenant identity a host object records.
func identity(obj any) (names.Identity, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return names.Identity{}, false
	}
	return names.IdentityOf(m.GetLabels(), m.GetAnnotations())
}

// byIdentity enqueues the tenant key "<namespace>/<name>" a host object
// records.
func byIdentity(q queue) func(obj any) {
	return func(obj any) {
		if id, ok := identity(obj); ok {
			q.Add(id.Namespace + "/" + id.Name)
		}
	}
}
