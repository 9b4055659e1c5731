package clusterapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	capnv1alpha1 "capn.dev/capn/pkg/apis/capn/v1alpha1"
	controlplanev1alpha1 "capn.dev/capn/pkg/apis/controlplane/v1alpha1"
	"capn.dev/capn/pkg/generated/clientset/versioned"
	capninformers "capn.dev/capn/pkg/generated/informers/externalversions/capn/v1alpha1"
	capnlisters "capn.dev/capn/pkg/generated/listers/capn/v1alpha1"
)

// Issuer signs tenant kubeconfigs (access.Issuer).
type Issuer interface {
	Issue(ctx context.Context, nc *capnv1alpha1.NestedCluster, user string, ttl time.Duration) ([]byte, time.Time, error)
}

// Deps are the clients and the shared NestedCluster informer the loops use.
type Deps struct {
	Dynamic dynamic.Interface
	Kube    kubernetes.Interface
	// Capn reaches capn-apiserver itself, so every NestedCluster write goes
	// through its API: validation, admission, /scale and /upgrade.
	Capn           versioned.Interface
	Issuer         Issuer
	NestedClusters capninformers.NestedClusterInformer
}

// Controller is the NestedControlPlane loop and the NestedInfraCluster loop.
type Controller struct {
	dynamic        dynamic.Interface
	kube           kubernetes.Interface
	capn           versioned.Interface
	issuer         Issuer
	nestedClusters capnlisters.NestedClusterLister
	secrets        corelisters.SecretLister

	ncpInformer, clusterInformer, infraInformer cache.SharedIndexInformer
	queue, infraQueue                           workqueue.TypedRateLimitingInterface[string]
	synced                                      []cache.InformerSynced
	now                                         func() time.Time
}

// crdPoll is how often capn asks discovery for the Cluster API kinds while
// they are not served: the provider is optional, and installing it later
// (kubectl apply -k artifacts/deploy/clusterapi) needs no capn restart. Three
// discovery reads a minute, on a management cluster without Cluster API
// only; once served, the loops run on watches alone.
const crdPoll = time.Minute

// Start runs the loops until ctx ends, once the NestedControlPlane,
// NestedInfraCluster and Cluster API Cluster kinds are served.
func Start(ctx context.Context, deps Deps, workers int) {
	logger := klog.FromContext(ctx).WithName("clusterapi")
	ctx = klog.NewContext(ctx, logger)
	err := wait.PollUntilContextCancel(ctx, crdPoll, true, func(context.Context) (bool, error) {
		ok := served(deps.Kube, NestedControlPlanes, NestedInfraClusters, Clusters)
		if !ok {
			logger.V(4).Info("Cluster API kinds not served yet", "want", []string{NestedControlPlanes.String(), NestedInfraClusters.String(), Clusters.String()})
		}
		return ok, nil
	})
	if err != nil {
		return
	}
	logger.Info("Cluster API kinds served: running the NestedControlPlane provider")
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(deps.Dynamic, 10*time.Minute)
	defer dyn.Shutdown()
	// Only Cluster API's Secrets: the label the contract requires.
	secrets := kubeinformers.NewSharedInformerFactoryWithOptions(deps.Kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ClusterNameLabel }))
	defer secrets.Shutdown()
	c, err := New(deps, dyn, secrets.Core().V1().Secrets())
	if err != nil {
		logger.Error(err, "Building the Cluster API provider")
		return
	}
	dyn.Start(ctx.Done())
	secrets.Start(ctx.Done())
	c.Run(ctx, workers)
}

// served reports whether every resource in gvrs is in discovery.
func served(kube kubernetes.Interface, gvrs ...schema.GroupVersionResource) bool {
	for _, gvr := range gvrs {
		list, err := kube.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
			return false
		}
	}
	return true
}

// New wires the loops to their informers.
func New(deps Deps, dyn dynamicinformer.DynamicSharedInformerFactory, secrets interface {
	Informer() cache.SharedIndexInformer
	Lister() corelisters.SecretLister
}) (*Controller, error) {
	c := &Controller{
		dynamic: deps.Dynamic, kube: deps.Kube, capn: deps.Capn, issuer: deps.Issuer,
		nestedClusters:  deps.NestedClusters.Lister(),
		secrets:         secrets.Lister(),
		ncpInformer:     dyn.ForResource(NestedControlPlanes).Informer(),
		clusterInformer: dyn.ForResource(Clusters).Informer(),
		infraInformer:   dyn.ForResource(NestedInfraClusters).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nestedcontrolplanes"}),
		infraQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nestedinfraclusters"}),
		now: time.Now,
	}
	add := func(inf cache.SharedIndexInformer, keys func(obj any) []string) error {
		enqueue := func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			for _, k := range keys(obj) {
				c.queue.Add(k)
			}
		}
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue})
		c.synced = append(c.synced, inf.HasSynced)
		return err
	}
	errs := []error{
		add(c.ncpInformer, func(obj any) []string { return keyOf(obj) }),
		add(deps.NestedClusters.Informer(), ownerKeys),
		add(secrets.Informer(), ownerKeys),
		add(c.clusterInformer, controlPlaneKeys),
	}
	_, err := c.infraInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueInfra(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueInfra(obj) },
	})
	errs = append(errs, err)
	c.synced = append(c.synced, c.infraInformer.HasSynced)
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("event handler: %w", err)
		}
	}
	return c, nil
}

func keyOf(obj any) []string {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil
	}
	return []string{k}
}

func (c *Controller) enqueueInfra(obj any) {
	for _, k := range keyOf(obj) {
		c.infraQueue.Add(k)
	}
}

// ownerKeys maps a NestedCluster or Secret to the NestedControlPlane that
// controls it.
func ownerKeys(obj any) []string {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.Kind != "NestedControlPlane" {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != controlplanev1alpha1.GroupName {
		return nil
	}
	return []string{m.GetNamespace() + "/" + ref.Name}
}

// controlPlaneKeys maps a Cluster to the NestedControlPlane its
// spec.controlPlaneRef names: its pause and its existence decide.
func controlPlaneKeys(obj any) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	group, kind, name := controlPlaneRef(u)
	if group != controlplanev1alpha1.GroupName || kind != "NestedControlPlane" || name == "" {
		return nil
	}
	return []string{u.GetNamespace() + "/" + name}
}

func controlPlaneRef(cluster *unstructured.Unstructured) (group, kind, name string) {
	group, _, _ = unstructured.NestedString(cluster.Object, "spec", "controlPlaneRef", "apiGroup")
	kind, _, _ = unstructured.NestedString(cluster.Object, "spec", "controlPlaneRef", "kind")
	name, _, _ = unstructured.NestedString(cluster.Object, "spec", "controlPlaneRef", "name")
	return group, kind, name
}

// Run works both queues until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.infraQueue.ShutDown()
	if !cache.WaitForNamedCacheSync("clusterapi", ctx.Done(), c.synced...) {
		return
	}
	for range max(workers, 1) {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.next(ctx, c.queue, c.sync) {
			}
		}, time.Second)
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for c.next(ctx, c.infraQueue, func(ctx context.Context, key string) (time.Duration, error) {
			return 0, c.syncInfraCluster(ctx, key)
		}) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (c *Controller) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[string],
	sync func(context.Context, string) (time.Duration, error)) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	after, err := sync(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("key", key)), key)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Sync failed; retrying", "key", key, "err", err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	if after > 0 {
		q.AddAfter(key, after)
	}
	return true
}

// sync brings one NestedControlPlane's NestedCluster and kubeconfig Secret
// to its spec and writes its status; the duration is when to look again
// (the kubeconfig's renewal).
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := c.ncpInformer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	ncp, err := fromUnstructured(obj.(*unstructured.Unstructured))
	if err != nil {
		return 0, err
	}
	if ncp.DeletionTimestamp != nil {
		return 0, c.reconcileDelete(ctx, ncp)
	}
	var o observation
	if nc, err := c.nestedClusters.NestedClusters(ncp.Namespace).Get(ncp.Name); err == nil && controlledBy(nc, ncp) {
		o.nc = nc
	}
	cluster := c.ownerCluster(ncp)
	if cluster == nil {
		o.waiting = clusterWaitMessage(ncp)
		return 0, c.writeStatus(ctx, ncp, o)
	}
	if paused, _, _ := unstructured.NestedBool(cluster.Object, "spec", "paused"); paused || ncp.Annotations[PausedAnnotation] != "" {
		o.paused = true
		return 0, c.writeStatus(ctx, ncp, o)
	}
	if !slices.Contains(ncp.Finalizers, Finalizer) {
		// Its update event brings ncp back.
		return 0, c.setFinalizer(ctx, ncp, true)
	}
	after, f := c.reconcile(ctx, ncp, cluster.GetName(), &o)
	o.failed = f
	if err := c.writeStatus(ctx, ncp, o); apierrors.IsConflict(err) {
		// This sync wrote ncp (its endpoint); that event syncs it again.
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if f != nil && !f.terminal {
		return 0, f
	}
	if f != nil {
		klog.FromContext(ctx).Info("NestedControlPlane not reconciled", "reason", f.reason, "message", f.message)
	}
	return after, nil
}

// reconcile runs the lifecycle operations in order; each goes through the
// NestedCluster's API.
func (c *Controller) reconcile(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, cluster string, o *observation) (time.Duration, *failure) {
	nc, f := c.ensureNestedCluster(ctx, ncp, cluster)
	if nc != nil {
		o.nc = nc
	}
	if f != nil {
		return 0, f
	}
	if o.nc, f = c.upgrade(ctx, ncp, nc); f != nil {
		return 0, f
	}
	if f := c.scale(ctx, ncp, o.nc); f != nil {
		return 0, f
	}
	if f := c.ensureEndpoint(ctx, ncp, o.nc); f != nil {
		return 0, f
	}
	if o.nc.Status.Endpoint == "" {
		// The kubeconfig needs the address; the status update brings ncp back.
		return 0, nil
	}
	return c.ensureKubeconfig(ctx, ncp, cluster, o.nc)
}

// ownerCluster is the Cluster that owns ncp (by UID) and whose
// spec.controlPlaneRef names it; nil while there is none. Both directions
// must agree, in ncp's namespace, so no Cluster claims a control plane
// another Cluster owns.
func (c *Controller) ownerCluster(ncp *controlplanev1alpha1.NestedControlPlane) *unstructured.Unstructured {
	for _, ref := range ncp.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != ClusterGroup || ref.Kind != "Cluster" {
			continue
		}
		obj, exists, err := c.clusterInformer.GetIndexer().GetByKey(ncp.Namespace + "/" + ref.Name)
		if err != nil || !exists {
			continue
		}
		u := obj.(*unstructured.Unstructured)
		group, kind, name := controlPlaneRef(u)
		if u.GetUID() == ref.UID && group == controlplanev1alpha1.GroupName && kind == "NestedControlPlane" && name == ncp.Name {
			return u
		}
	}
	return nil
}

// ensureEndpoint sets spec.controlPlaneEndpoint, once, from the
// NestedCluster's status.endpoint.
func (c *Controller) ensureEndpoint(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, nc *capnv1alpha1.NestedCluster) *failure {
	if ncp.Spec.ControlPlaneEndpoint.Host != "" || nc.Status.Endpoint == "" {
		return nil
	}
	ep, err := endpoint(nc.Status.Endpoint)
	if err != nil {
		return &failure{reason: ReasonRefused, message: err.Error(), terminal: true}
	}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": ncp.ResourceVersion},
		"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": ep.Host, "port": ep.Port}}}
	if err := c.patch(ctx, ncp, patch); err != nil {
		return retry(err)
	}
	return nil
}

// endpoint splits a NestedCluster's status.endpoint URL.
func endpoint(raw string) (controlplanev1alpha1.APIEndpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return controlplanev1alpha1.APIEndpoint{}, fmt.Errorf("status.endpoint %q: %w", raw, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return controlplanev1alpha1.APIEndpoint{}, fmt.Errorf("status.endpoint %q: %w", raw, err)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil || p <= 0 || p > 65535 {
		return controlplanev1alpha1.APIEndpoint{}, fmt.Errorf("status.endpoint %q: bad port", raw)
	}
	return controlplanev1alpha1.APIEndpoint{Host: host, Port: int32(p)}, nil
}

// setFinalizer adds or removes Finalizer, with ncp's resourceVersion so a
// concurrent change is not overwritten.
func (c *Controller) setFinalizer(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, on bool) error {
	fin := slices.DeleteFunc(slices.Clone(ncp.Finalizers), func(f string) bool { return f == Finalizer })
	if on {
		fin = append(fin, Finalizer)
	}
	return c.patch(ctx, ncp, map[string]any{"metadata": map[string]any{"resourceVersion": ncp.ResourceVersion, "finalizers": fin}})
}

func (c *Controller) patch(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, patch map[string]any) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.dynamic.Resource(NestedControlPlanes).Namespace(ncp.Namespace).Patch(ctx, ncp.Name, types.MergePatchType, raw,
		metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// writeStatus writes deriveStatus's answer when it differs from ncp's.
func (c *Controller) writeStatus(ctx context.Context, ncp *controlplanev1alpha1.NestedControlPlane, o observation) error {
	st := deriveStatus(ncp, o, metav1.NewTime(c.now()))
	if equality.Semantic.DeepEqual(st, ncp.Status) {
		return nil
	}
	obj, exists, err := c.ncpInformer.GetIndexer().GetByKey(ncp.Namespace + "/" + ncp.Name)
	if err != nil || !exists {
		return err
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u.Object["status"] = raw
	// The cached object's resourceVersion: a newer ncp conflicts, and its
	// event syncs it again.
	u.SetResourceVersion(ncp.ResourceVersion)
	_, err = c.dynamic.Resource(NestedControlPlanes).Namespace(ncp.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

func fromUnstructured(u *unstructured.Unstructured) (*controlplanev1alpha1.NestedControlPlane, error) {
	var ncp controlplanev1alpha1.NestedControlPlane
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ncp); err != nil {
		return nil, fmt.Errorf("NestedControlPlane %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &ncp, nil
}
