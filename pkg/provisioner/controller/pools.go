package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/etcdpool"
	informers "capn.dev/capn/pkg/generated/informers/externalversions/capn/v1alpha1"
	listers "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
)

// poolResync is how often a pool's health and size are read again: db
// growth toward the quota is slow, and each read dials every member.
const poolResync = time.Minute

// PoolController is the pools loop: it keeps each NestedEtcdPool's
// finalizer and status. A pool change also reaches the clusters loop,
// which rolls the pool's tenants.
type PoolController struct {
	*env
	*etcdAccess
	lister listers.NestedClusterLister
	// queue is the clusters loop's; poolQueue is this loop's own.
	queue     workqueue.TypedRateLimitingInterface[string]
	poolQueue workqueue.TypedRateLimitingInterface[string]
}

// NewPoolController wires the pools loop to its informer and to the
// clusters'; call Run to start it.
func NewPoolController(o Options, sh *Shared) (*PoolController, error) {
	c := &PoolController{env: sh.env, etcdAccess: sh.etcd, lister: o.Informer.Lister(), queue: sh.clusters,
		poolQueue: newQueue("capn-pools")}
	if err := c.watchPools(o.PoolInformer, o.Informer.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run syncs pools once synced say the caches are, until ctx ends.
func (c *PoolController) Run(ctx context.Context, synced ...cache.InformerSynced) {
	runQueue(ctx, "capn-pools", c.poolQueue, c.poolWorker, synced)
}

// watchPools makes pool changes reach their tenants (new endpoints or
// credentials roll their apiservers) and tenant changes reach the pool's
// count and finalizer.
func (c *PoolController) watchPools(pools informers.NestedEtcdPoolInformer, clusters cache.SharedIndexInformer) error {
	onPool := func(obj any) {
		p, ok := obj.(*v1alpha1.NestedEtcdPool)
		if !ok {
			return
		}
		c.poolQueue.Add(p.Name)
		all, err := c.lister.List(labels.Everything())
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		for _, nc := range all {
			if nc.Spec.Etcd.Pool == p.Name {
				c.queue.Add(nc.Namespace + "/" + nc.Name)
			}
		}
	}
	if _, err := pools.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPool, UpdateFunc: func(_, obj any) { onPool(obj) },
	}); err != nil {
		return fmt.Errorf("adding pool event handler: %w", err)
	}
	onCluster := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if nc, ok := obj.(*v1alpha1.NestedCluster); ok && nc.Spec.Etcd.Pool != "" {
			c.poolQueue.Add(nc.Spec.Etcd.Pool)
		}
	}
	_, err := clusters.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onCluster, UpdateFunc: func(_, obj any) { onCluster(obj) }, DeleteFunc: onCluster,
	})
	return err
}

func (c *PoolController) poolWorker(ctx context.Context) {
	for {
		name, quit := c.poolQueue.Get()
		if quit {
			return
		}
		err := c.syncPool(ctx, name)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing NestedEtcdPool", "pool", name)
			c.poolQueue.AddRateLimited(name)
		} else {
			c.poolQueue.Forget(name)
			c.poolQueue.AddAfter(name, poolResync)
		}
		c.poolQueue.Done(name)
	}
}

// syncPool keeps a pool's finalizer while any NestedCluster keeps its state
// there, and reports the pool's health and size in status.
func (c *PoolController) syncPool(ctx context.Context, name string) error {
	cached, err := c.pools.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pool := cached.DeepCopy()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("nestedetcdpool", name))
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return err
	}
	tenants := 0
	for _, nc := range all {
		if nc.Spec.Etcd.Pool == name {
			tenants++
		}
	}
	// A finalizer can be removed from a deleting object but not added.
	has := slices.Contains(pool.Finalizers, v1alpha1.PoolFinalizer)
	if want := tenants > 0; has != want && (!want || pool.DeletionTimestamp == nil) {
		if want {
			pool.Finalizers = append(pool.Finalizers, v1alpha1.PoolFinalizer)
		} else {
			pool.Finalizers = slices.DeleteFunc(pool.Finalizers, func(f string) bool { return f == v1alpha1.PoolFinalizer })
		}
		if pool, err = c.capn.CapnV1alpha1().NestedEtcdPools().Update(ctx, pool, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("updating the pool's finalizer: %w", err)
		}
	}
	st := pool.Status.DeepCopy()
	st.ObservedGeneration = pool.Generation
	st.Tenants = int32(tenants)
	cond := metav1.Condition{Type: v1alpha1.ConditionPoolAvailable, ObservedGeneration: pool.Generation}
	if creds, err := c.readPool(ctx, name); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonPoolCredentials, truncate(err.Error(), maxFailureMessage)
	} else if h, err := c.observePool(ctx, creds); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonPoolUnreachable, truncate(err.Error(), maxFailureMessage)
	} else {
		st.DBSizeBytes = h.DBSize
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonPoolReachable, "capn reached the pool as root and auth is enabled"
		if len(h.Unreachable) > 0 {
			cond.Message += "; members not answering: " + strings.Join(h.Unreachable, ", ")
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(pool.Status, *st) {
		return nil
	}
	pool.Status = *st
	if _, err := c.capn.CapnV1alpha1().NestedEtcdPools().UpdateStatus(ctx, pool, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("writing the pool's status: %w", err)
	}
	return nil
}

func (c *etcdAccess) observePool(ctx context.Context, p *poolCredentials) (etcdpool.Health, error) {
	cli, err := p.dial()
	if err != nil {
		return etcdpool.Health{}, err
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return etcdpool.Observe(ctx, cli)
}
