package controller

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"capn.dev/capn/pkg/provisioner/builders"
)

// cachedManagement serves the provisioner's reads from the label-selected
// informers (ManagedSelector) and sends its writes to the management
// apiserver. A steady sync then costs no request at all, and a resync of
// many tenants is bounded by CPU, not by the client's QPS.
//
// Two reads are not served from the caches:
//   - A Namespace the cache does not have is confirmed by a live GET: one
//     capn did not label (made by hand, or squatting a name) is outside the
//     cache, and adopting it because the cache missed it would be wrong.
//     That costs one GET per cluster creation.
//   - ReadSecret reads a Secret capn does not own (external etcd
//     credentials in the tenant's namespace): caching those would mean
//     watching every Secret in the cluster.
//
// Reads see the provisioner's own writes at once: what a write returned is
// kept until the informer has caught up with it (by resourceVersion), so a
// sync that follows a write never acts on an older object, e.g. recreate a
// CA Secret it has just created.
type cachedManagement struct {
	live     kubeManagement
	indexers map[reflect.Type]typedCache

	mu sync.Mutex
	// written holds objects as the last write returned them, by namespace
	// and cacheKey (a list reads one namespace's), until the informer
	// shows that version or a newer one.
	written map[string]map[cacheKey]builders.Object
}

type typedCache struct {
	indexer  cache.Indexer
	resource schema.GroupResource
}

type cacheKey struct {
	t               reflect.Type
	namespace, name string
}

// ManagementCaches are the informers a cached Management reads from.
type ManagementCaches struct {
	// Namespaces is capn's management namespaces (WatchManagement).
	Namespaces cache.SharedIndexInformer
	// Watched are the kinds whose changes a sync reacts to: everything
	// capn writes. Pods are cached but not watched: their readiness reaches
	// the workloads' status, which is watched.
	Watched []cache.SharedIndexInformer
	// All must sync before a sync may read.
	All []cache.SharedIndexInformer
}

// NewCachedManagement returns a Management over c whose reads come from f's
// informers, and those informers. f must be label-selected to capn's
// objects (ManagedSelector) and not yet started.
func NewCachedManagement(c kubernetes.Interface, f kubeinformers.SharedInformerFactory) (Management, ManagementCaches, error) {
	m := &cachedManagement{live: kubeManagement{c}, indexers: map[reflect.Type]typedCache{}, written: map[string]map[cacheKey]builders.Object{}}
	pods := f.Core().V1().Pods().Informer()
	caches := ManagementCaches{Namespaces: f.Core().V1().Namespaces().Informer()}
	type entry struct {
		typ      reflect.Type
		informer cache.SharedIndexInformer
		resource schema.GroupResource
	}
	// Pods are read, never written: cached, but not a managed kind.
	entries := []entry{{reflect.TypeFor[*corev1.Pod](), pods, corev1.Resource("pods")}}
	for _, k := range managedKinds {
		gi, err := f.ForResource(k.gvr)
		if err != nil {
			return nil, ManagementCaches{}, fmt.Errorf("caching %s: %w", k.gvr.Resource, err)
		}
		entries = append(entries, entry{k.typ, gi.Informer(), k.gvr.GroupResource()})
	}
	for _, e := range entries {
		transform := slimOwned
		if e.informer == pods {
			transform = slimPod
		}
		if err := e.informer.SetTransform(transform); err != nil {
			return nil, ManagementCaches{}, fmt.Errorf("caching %s: %w", e.resource, err)
		}
		caches.All = append(caches.All, e.informer)
		if e.informer != pods && e.informer != caches.Namespaces {
			caches.Watched = append(caches.Watched, e.informer)
		}
		t := e.typ
		m.indexers[t] = typedCache{indexer: e.informer.GetIndexer(), resource: e.resource}
		// A deleted object's last write is no longer news.
		if _, err := e.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(builders.Object); ok {
				m.forget(cacheKey{t, o.GetNamespace(), o.GetName()})
			}
		}}); err != nil {
			return nil, ManagementCaches{}, fmt.Errorf("caching %s: %w", e.resource, err)
		}
	}
	return m, caches, nil
}

// slimOwned keeps, of an object's managed fields, only FieldManager's: the
// one entry drift detection reads (ownedFields). The others (the workload
// controllers' status, kubectl's edits) are a large part of a cached
// Deployment and nothing capn decides on.
func slimOwned(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		mf := o.GetManagedFields()
		kept := mf[:0]
		for _, e := range mf {
			if e.Manager == FieldManager {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			kept = nil
		}
		o.SetManagedFields(kept)
	}
	return obj, nil
}

// slimPod keeps what capn reads of a pod: its metadata (labels, the
// version annotation, UID, deletion) and its status. capn never applies a
// Pod, so it needs none of its managed fields, and its spec is the
// workload's template, which capn has already.
func slimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields = nil
		p.Spec = corev1.PodSpec{}
	}
	return obj, nil
}

func keyOf(o builders.Object) cacheKey {
	return cacheKey{reflect.TypeOf(o), o.GetNamespace(), o.GetName()}
}

func (m *cachedManagement) forget(k cacheKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(k)
}

// drop forgets k's write; m.mu must be held.
func (m *cachedManagement) drop(k cacheKey) {
	delete(m.written[k.namespace], k)
	if len(m.written[k.namespace]) == 0 {
		delete(m.written, k.namespace)
	}
}

func (m *cachedManagement) remember(o builders.Object) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := keyOf(o)
	if m.written[k.namespace] == nil {
		m.written[k.namespace] = map[cacheKey]builders.Object{}
	}
	m.written[k.namespace][k] = o.DeepCopyObject().(builders.Object)
}

// fresher returns the newer of the cached object and the last write of the
// same key (nil when neither exists), dropping a write the cache has caught
// up with.
func (m *cachedManagement) fresher(k cacheKey, cached builders.Object) builders.Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.written[k.namespace][k]
	if !ok {
		return cached
	}
	if cached != nil {
		// Resource versions are comparable on a kube-apiserver
		// (resourceversion.CompareResourceVersion); if they were not,
		// trusting the informer is what a plain cache would do.
		if cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), w.GetResourceVersion()); err != nil || cmp >= 0 {
			m.drop(k)
			return cached
		}
	}
	return w
}

func (m *cachedManagement) typed(o builders.Object) (typedCache, error) {
	tc, ok := m.indexers[reflect.TypeOf(o)]
	if !ok {
		return typedCache{}, fmt.Errorf("management cache: unsupported object type %T", o)
	}
	return tc, nil
}

func (m *cachedManagement) Get(ctx context.Context, proto builders.Object) (builders.Object, error) {
	tc, err := m.typed(proto)
	if err != nil {
		return nil, err
	}
	k := keyOf(proto)
	key, err := cache.MetaNamespaceKeyFunc(proto)
	if err != nil {
		return nil, fmt.Errorf("management cache: %w", err)
	}
	item, exists, err := tc.indexer.GetByKey(key)
	if err != nil {
		return nil, fmt.Errorf("management cache: %w", err)
	}
	var cached builders.Object
	if exists {
		if cached, err = asObject(item); err != nil {
			return nil, err
		}
	}
	if o := m.fresher(k, cached); o != nil {
		// Callers may change what they read; the cache must not change.
		return o.DeepCopyObject().(builders.Object), nil
	}
	if _, isNamespace := proto.(*corev1.Namespace); isNamespace {
		return m.live.Get(ctx, proto)
	}
	return nil, apierrors.NewNotFound(tc.resource, k.name)
}

func asObject(item any) (builders.Object, error) {
	o, ok := item.(builders.Object)
	if !ok {
		return nil, fmt.Errorf("management cache: %T is not an object", item)
	}
	return o, nil
}

// ReadSecret is a live read: see cachedManagement.
func (m *cachedManagement) ReadSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return m.live.ReadSecret(ctx, namespace, name)
}

// StopPods is live: the host pods it stops are not capn's, so not cached.
func (m *cachedManagement) StopPods(ctx context.Context, namespace string, selector labels.Selector) (int, error) {
	return m.live.StopPods(ctx, namespace, selector)
}

func (m *cachedManagement) DeletingVolumes(ctx context.Context, namespace string) (int, error) {
	return m.live.DeletingVolumes(ctx, namespace)
}

func (m *cachedManagement) ListSecrets(_ context.Context, namespace string) ([]corev1.Secret, error) {
	return listAs[corev1.Secret](m, namespace, labels.Everything())
}

func (m *cachedManagement) ListPods(_ context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	return listAs[corev1.Pod](m, namespace, selector)
}

// listAs is list for one type, as values.
func listAs[T any, P interface {
	*T
	builders.Object
}](m *cachedManagement, namespace string, selector labels.Selector) ([]T, error) {
	objs, err := m.list(P(new(T)), namespace, selector)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(P))
	}
	return out, nil
}

// list returns deep copies of the cached objects of proto's type in
// namespace that match selector, each replaced by a fresher own write, plus
// own writes the cache does not have yet.
func (m *cachedManagement) list(proto builders.Object, namespace string, selector labels.Selector) ([]builders.Object, error) {
	tc, err := m.typed(proto)
	if err != nil {
		return nil, err
	}
	items, err := tc.indexer.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("management cache: %w", err)
	}
	t := reflect.TypeOf(proto)
	seen := map[string]bool{}
	var out []builders.Object
	add := func(o builders.Object) {
		if selector.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o.DeepCopyObject().(builders.Object))
		}
	}
	for _, item := range items {
		o, err := asObject(item)
		if err != nil {
			return nil, err
		}
		seen[o.GetName()] = true
		add(m.fresher(cacheKey{t, namespace, o.GetName()}, o))
	}
	m.mu.Lock()
	var pending []builders.Object
	for k, w := range m.written[namespace] {
		if k.t == t && !seen[k.name] {
			pending = append(pending, w)
		}
	}
	m.mu.Unlock()
	for _, w := range pending {
		add(w)
	}
	return out, nil
}

func (m *cachedManagement) Apply(ctx context.Context, manager string, obj builders.Object) (builders.Object, error) {
	out, err := m.live.Apply(ctx, manager, obj)
	if err == nil {
		m.remember(out)
	}
	return out, err
}

func (m *cachedManagement) Delete(ctx context.Context, proto builders.Object) error {
	err := m.live.Delete(ctx, proto)
	if err == nil || apierrors.IsNotFound(err) {
		m.forget(keyOf(proto))
	}
	return err
}
