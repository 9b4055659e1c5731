package waker

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	"capn.dev/capn/pkg/provisioner"
)

// FieldManager writes the wake annotation.
const FieldManager = "capn-waker"

// Start runs a waker until ctx ends: caches of the management cluster's
// kube-apiserver EndpointSlices and capn's namespaces (mgmt), and wake
// requests through capn's own API (capn).
func Start(ctx context.Context, cfg Config, mgmt, capn *rest.Config) error {
	registerMetrics()
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("waker"))
	kube, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(mgmt), FieldManager))
	if err != nil {
		return fmt.Errorf("management client: %w", err)
	}
	capnClient, err := versioned.NewForConfig(rest.AddUserAgent(rest.CopyConfig(capn), FieldManager))
	if err != nil {
		return fmt.Errorf("capn client: %w", err)
	}
	sliceInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = discoveryv1.LabelServiceName + "=" + provisioner.APIServerName
	}))
	nsInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = provisioner.ManagedByLabel + "=" + provisioner.ManagedByValue
	}))
	slices := sliceInformers.Discovery().V1().EndpointSlices().Informer()
	namespaces := nsInformers.Core().V1().Namespaces().Informer()
	w := New(cfg, slices.GetIndexer(), namespaces.GetIndexer(), WakeThrough(capnClient, time.Now))

	// Events only signal; one goroutine recomputes, so a burst of them
	// costs one pass over the caches.
	signal := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case signal <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke}
	for _, inf := range []cache.SharedIndexInformer{slices, namespaces} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("waker: %w", err)
		}
	}
	sliceInformers.Start(ctx.Done())
	nsInformers.Start(ctx.Done())
	defer sliceInformers.Shutdown()
	defer nsInformers.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), slices.HasSynced, namespaces.HasSynced) {
		return ctx.Err()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-signal:
				w.Changed(ctx)
			}
		}
	}()
	poke(nil)
	w.Run(ctx)
	return nil
}

// WakeThrough asks for wakes by stamping v1alpha1.ConnectionWakeAnnotation
// on the NestedCluster, only if it is still the one with uid and still
// asleep for inactivity (a wake on request ends only that kind of sleep).
func WakeThrough(c versioned.Interface, now func() time.Time) WakeFunc {
	return func(ctx context.Context, cluster types.NamespacedName, uid types.UID) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			nc, err := c.CapnV1alpha1().NestedClusters(cluster.Namespace).Get(ctx, cluster.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if nc.UID != uid {
				return fmt.Errorf("NestedCluster %s has UID %s, not %s", cluster, nc.UID, uid)
			}
			if !meta.IsStatusConditionTrue(nc.Status.Conditions, v1alpha1.ConditionInactive) {
				return nil // awake, or waking already
			}
			if nc.Annotations == nil {
				nc.Annotations = map[string]string{}
			}
			nc.Annotations[v1alpha1.ConnectionWakeAnnotation] = now().UTC().Format(time.RFC3339)
			_, err = c.CapnV1alpha1().NestedClusters(cluster.Namespace).Update(ctx, nc, metav1.UpdateOptions{FieldManager: FieldManager})
			return err
		})
	}
}
